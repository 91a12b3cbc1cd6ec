"""Double-buffered MeshIR through the Metalium back end: it emits the single-buffered program (one CB page
per panel; the files are exactly those of the single-buffered plan, which ``test_functional`` runs) and
plan.json records that the double buffer was dropped. Single-buffered records have no such entry."""

import json

import pytest

import mica
from mica.emit_metalium import render


@pytest.mark.parametrize("plan", ["summa", "interleaved"])
def test_double_buffered_program_emits_the_single_buffered_metalium_and_says_so(plan):
    mm = mica.ops.matmul(64, 64, 64)
    make = mica.plans.REFERENCE_PLANS[plan]
    single = render(mica.compile_affine(mm, mesh=(4, 4), target="wormhole", schedule=make(mm, (4, 4))))
    double = render(mica.compile_affine(mm, mesh=(4, 4), target="wormhole", schedule=make(mm, (4, 4), buffers=2)))
    assert {k for k in single if single[k] != double[k]} == {"plan.json"}
    rec1, rec2 = json.loads(single["plan.json"]), json.loads(double["plan.json"])
    assert "double_buffering" not in rec1
    db = rec2.pop("double_buffering")
    assert rec2 == rec1
    assert db["emitted"] is False and "single-buffered program" in db["note"]
