"""Schedules, MeshIR, costs and ``explain()`` of the sample programs are what they were when recorded:
a refactor changes none of them (``python -m tests.behaviour.record [name ...]`` rewrites a record after a
deliberate change)."""

import difflib

import pytest

from .record import GOLDEN, render, samples


@pytest.mark.parametrize("name", sorted(samples()))
def test_decisions_unchanged(name):
    want = (GOLDEN / f"{name}.txt").read_text()
    got = render(name)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"recorded/{name}", f"now/{name}", n=2))
        pytest.fail(f"{name} compiles differently from its record:\n{diff[:6000]}")


def test_every_sample_is_recorded():
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(samples())
