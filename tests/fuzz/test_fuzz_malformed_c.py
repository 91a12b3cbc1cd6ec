"""Malformed C fed to the front end: truncated, byte-flipped, token-mutated (deleted, duplicated, swapped,
replaced -- also within their class: names, numbers, operators), spliced, deeply nested and random texts.

The only acceptable outcomes of ``from_c`` are a Program or a located MicaError (never one that admits an
internal error), each within 5 s of CPU time (the slowest takes about 0.1 s). The objects earlier tests in the
same worker left are frozen out of the garbage collector first (a full collection of a large heap once took
5 s of one input's time in CI). The long version of this run is
``python -m mica.fuzz --malformed --count 5000 --seed S``."""

import faulthandler
import gc
import time
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mica.affine.from_c import from_c
from mica.affine.program import Program
from mica.errors import MicaError
from mica.fuzz import _VOCAB, check_malformed, malformed_texts

COUNT = 1200
TIME_LIMIT_S = 5.0


def _watchdog(seconds: float):
    """Dumps every thread's stack and exits if the test hangs (a hang in native code cannot be interrupted)."""
    faulthandler.dump_traceback_later(seconds, exit=True)


def test_malformed_c_gives_a_program_or_a_mica_error_quickly():
    t0 = time.perf_counter()
    outcomes, by_kind, failures = Counter(), Counter(), []
    _watchdog(600)
    gc.collect()
    gc.freeze()              # earlier tests' objects: not traversed by the collections these inputs trigger
    try:
        for n, (kind, text, params) in enumerate(malformed_texts(2024, COUNT)):
            out = check_malformed(text, params, time_limit=TIME_LIMIT_S)
            outcomes[out.kind] += 1
            by_kind[kind] += 1
            if out.kind not in ("program", "error"):
                failures.append(f"input {n} ({kind}, params {params}): {out.kind}: {out.error[:800]}\n"
                                f"--- text ---\n{text[:2000]}")
    finally:
        gc.unfreeze()
        faulthandler.cancel_dump_traceback_later()
    elapsed = time.perf_counter() - t0
    print(f"{COUNT} malformed inputs in {elapsed:.1f} s: {dict(outcomes)}")
    assert not failures, "\n\n".join(failures[:5])
    assert sum(outcomes.values()) == COUNT and len(by_kind) >= 14
    assert outcomes["program"] >= 50 and outcomes["error"] >= 600     # both paths are exercised


def test_errors_are_located():
    for kind, text, params in malformed_texts(7, 300):
        try:
            from_c(text, params=params, filename="mal.c")
        except MicaError as err:
            assert err.location is not None and str(err).startswith(f"mal.c:{err.line}:{err.column}: "), \
                (kind, str(err))


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.one_of(st.lists(st.sampled_from(_VOCAB), max_size=60).map(" ".join),
                 st.text(max_size=300),
                 st.binary(max_size=300).map(lambda b: b.decode("latin-1"))),
       st.sampled_from([{}, {"n": 8}, {"n": 8, "m": 3}]))
def test_random_text_gives_a_program_or_a_mica_error(text, params):
    t0 = time.perf_counter()
    try:
        prog = from_c(text, params=params, filename="rnd.c")
        assert isinstance(prog, Program)
    except MicaError as err:
        assert "internal error" not in str(err), str(err)
    assert time.perf_counter() - t0 < TIME_LIMIT_S
