"""Every reproducer the fuzzer found (tests/fuzz/found/, see FOUND.md) compiles, runs and matches the C
compiled natively — each bug it recorded stays fixed."""

from pathlib import Path

import pytest

from mica.fuzz import check_case, read_reproducer

FOUND = sorted(p for p in (Path(__file__).parent / "found").glob("*.c") if "MICA-FUZZ" in p.read_text())


def test_there_are_reproducers():
    assert len(FOUND) >= 10


@pytest.mark.parametrize("path", FOUND, ids=lambda p: p.stem)
def test_reproducer_stays_fixed(path):
    out = check_case(read_reproducer(str(path)))
    assert out.kind == "ok", f"{path.name}: {out.kind} ({out.reason})\n{out.message}"
