"""Double-buffered MeshIR through the CSL back end: it emits the single-buffered program (the files are
exactly those of the single-buffered plan, whose execution ``test_csl_execution`` checks) and plan.json
records that the double buffer was dropped. Single-buffered records have no such entry (goldens)."""

import json

import pytest

import mica
from mica.emit_csl import render


@pytest.mark.parametrize("plan", ["summa", "cannon", "interleaved"])
def test_double_buffered_program_emits_the_single_buffered_csl_and_says_so(plan):
    mm = mica.ops.matmul(16, 16, 16)
    make = mica.plans.REFERENCE_PLANS[plan]
    single = render(mica.compile_affine(mm, mesh=(4, 4), schedule=make(mm, (4, 4))))
    double = render(mica.compile_affine(mm, mesh=(4, 4), schedule=make(mm, (4, 4), buffers=2)))
    assert {k for k in single if single[k] != double[k]} == {"plan.json"}
    rec1, rec2 = json.loads(single["plan.json"]), json.loads(double["plan.json"])
    assert "double_buffering" not in rec1
    db = rec2.pop("double_buffering")
    assert rec2 == rec1
    assert db["emitted"] is False and "single-buffered program" in db["note"]
    assert set(db["double_buffers"]) == ({"A_recv", "B_recv"} if plan == "summa" else {"A_ring", "B_ring"})
    assert db["prefetched_exchanges"] == (["step_S1"] if plan == "summa" else ["ring_shift"])
