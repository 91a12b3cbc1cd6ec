"""Every reproducer the fuzzer found (tests/fuzz/found/, see FOUND.md) compiles, runs and matches the C
compiled natively — each bug it recorded stays fixed."""

import signal
from pathlib import Path

import pytest

from mica.fuzz import check_case, read_reproducer

FOUND = sorted(p for p in (Path(__file__).parent / "found").glob("*.c") if "MICA-FUZZ" in p.read_text())


def test_there_are_reproducers():
    assert len(FOUND) >= 10


def _too_long(signum, frame):
    raise TimeoutError("the reproducer took more than 120 s (timeout-* files recorded a compile that never ended)")


@pytest.mark.parametrize("path", FOUND, ids=lambda p: p.stem)
def test_reproducer_stays_fixed(path):
    old = signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(120)
    try:
        out = check_case(read_reproducer(str(path)))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert out.kind == "ok", f"{path.name}: {out.kind} ({out.reason})\n{out.message}"
