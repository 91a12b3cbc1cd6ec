"""Differential fuzzing, CI size: 300 random affine C programs (mica.fuzz.cases: 1-4 statements in 1-4
loops, nested and sequential, triangular/offset/min bounds up and down, in-bounds affine subscripts --
offsets, reversed, strided, sums of iterators -- reductions, several arrays, f64, f32 and i32, scalar
parameters; and the shapes of mica.fuzz.shapes: max/min and arg-min/arg-max reductions, iterators as
values, temporaries, remote writes, uniform dependences -- tests/fuzz/test_fuzz_shapes.py counts them)
on random meshes 1x1 .. 6x5 of the wormhole target, most of which do not divide the sizes,
each compared with the C compiled natively (f64: rtol 1e-9, atol 1e-12; f32: rtol 1e-4, see
mica.fuzz.F32_TOL). A refusal (ScheduleError, SramError, CommError with a clear message) is accepted;
any other exception or a wrong number fails, with the program, its mesh and the choices that replay it.

Derandomized: the same programs come back on every run, so their native builds come from the cache after
the first run (measured on 2 cores shared with other jobs, CPU time user+sys of the pytest run: 18 s warm,
30 s with an empty cache; 15 s and 28 s before the shapes were added). The long run is
``python -m mica.fuzz --seconds N --seed S``; bugs it found are in tests/fuzz/FOUND.md.
"""

import time

import pytest
from hypothesis import HealthCheck, given, settings

from mica.fuzz import cases, check_case

EXAMPLES = 300
MAX_SIZE = 8            # n, m <= 8; every array dimension <= 12


@pytest.fixture(scope="module")
def tally():
    counts = {"programs": 0, "refused": 0, "t0": time.perf_counter()}
    yield counts
    print(f"\n{counts['programs']} random programs ({counts['refused']} refused) in "
          f"{time.perf_counter() - counts['t0']:.0f} s")


@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(case=cases(max_size=MAX_SIZE))
def test_random_programs_match_native_c(tally, case):
    out = check_case(case)
    tally["programs"] += 1
    tally["refused"] += out.kind == "refused"
    assert not out.failed, (f"{out.kind} ({out.reason}) on {case.header()}\n{case.source}\n{out.message}\n"
                            f"(replay: mica.fuzz.check_case(mica.fuzz.case_from_choices({list(case.choices)!r}, "
                            f"max_size={MAX_SIZE})))")
