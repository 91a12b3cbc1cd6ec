"""The schedule search: candidates, budgets as hard constraints, reference plans, explain()."""

import re
from dataclasses import replace

import pytest

import mica
from mica.errors import SramError
from mica.pipeline import LOWERING
from mica.targets import get_target
from mica.tiling.search import Decisions, evaluate, search, space


@pytest.mark.parametrize("side", [16, 64, 256, 720])
def test_chosen_matmul_plan_beats_every_reference_plan(side):
    op = mica.ops.matmul(512, 512, 512)
    mesh = (side, side)
    chosen = mica.compile_affine(op, mesh=mesh)
    for name in ("summa", "cannon", "interleaved"):
        ref = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.REFERENCE_PLANS[name](op, mesh))
        assert chosen.cost.total_cycles <= ref.cost.total_cycles, name


def test_large_meshes_pick_interleaved_and_the_gap_over_cannon_grows():
    op = mica.ops.matmul(1024, 1024, 1024)
    gaps = []
    for side in (32, 128, 512):
        mesh = (side, side)
        chosen = mica.compile_affine(op, mesh=mesh)
        assert chosen.schedule.step.skew == "interleaved"
        cannon = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.cannon(op, mesh))
        gaps.append(cannon.cost.total_cycles / chosen.cost.total_cycles)
    assert gaps[0] < gaps[1] < gaps[2]


def test_gemv_reduction_beats_the_chain_by_3x_at_512():
    op = mica.ops.gemv(4096, 4096)
    mesh = (512, 512)
    chosen = mica.compile_affine(op, mesh=mesh)
    chain = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.chain(op, mesh))
    ktree = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.ktree(op, mesh))
    assert chosen.schedule.reduce in ("tree", "levels")
    assert chain.cost.total_cycles >= 3 * chosen.cost.total_cycles
    assert chosen.cost.total_cycles <= ktree.cost.total_cycles      # the two-level tree is a candidate


def test_sram_rejections_are_recorded():
    # 8x8: candidates that overflow SRAM survive the branch-and-bound and are evaluated (on 16x16 the
    # latency bound now prunes them first, which the report records as "pruned").
    op = mica.ops.matmul(512, 512, 512)
    p = mica.compile_affine(op, mesh=(8, 8))
    reasons = [c.rejected for c in p.search_report.candidates if c.cycles is None]
    assert any("SRAM" in r for r in reasons)
    assert p.cost.sram_bytes <= p.cost.sram_budget


def test_colour_budget_rejects_rings():
    op = mica.ops.matmul(64, 64, 64)
    tight = replace(mica.get_target("wse2"), name="tight", colours=4)
    d = Decisions((("i", "y"), ("j", "x")), (("x", 8), ("y", 8)), "interleaved")
    c = evaluate(op, (8, 8), tight, d, LOWERING)
    assert c.cycles is None and "colours" in c.rejected
    p = mica.compile_affine(op, mesh=(8, 8), target=tight)
    assert p.schedule.step is None or p.schedule.step.skew != "interleaved"
    assert p.cost.colours <= 4
    assert any("colours" in c.rejected for c in p.search_report.candidates)


def test_explain_lists_candidates_and_the_winner():
    p = mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(8, 8))
    text = p.explain()
    assert "searched" in text and "winner:" in text and "interleaved rings" in text
    assert "cycles" in text


def test_space_has_plans_and_sub_rectangles():
    ds = space(mica.ops.matmul(512, 512, 512), (32, 16))
    skews = {d.skew for d in ds}
    assert skews == {"none", "cannon", "interleaved"}
    assert any(dict(d.blocks) != {"x": 32, "y": 16} for d in ds)   # fewer cores are candidates too
    assert all(dict(d.blocks)["x"] == dict(d.blocks)["y"] for d in ds if d.skew != "none")


def test_searched_schedule_round_trips_through_json():
    op = mica.ops.gemv(256, 256)
    p = mica.compile_affine(op, mesh=(32, 32))
    again = mica.compile_affine(op, mesh=(32, 32), schedule=mica.Schedule.from_json(p.schedule.to_json()))
    assert again.cost == p.cost and again.meshir == p.meshir


def test_search_reports_progress_when_slow(monkeypatch):
    import mica.tiling.search as search_mod
    monkeypatch.setattr(search_mod, "PROGRESS_AFTER_S", 0.0)
    seen = []
    search_mod.search(mica.ops.gemv(64, 64), (8, 8), mica.get_target("wse2"), LOWERING,
                      progress=lambda *a, **k: seen.append(a))
    assert seen and seen[-1][0] == seen[-1][1]


def test_rejections_carry_a_typed_cause_the_report_counts():
    from mica.tiling.search import REJECTIONS, search
    op = mica.ops.matmul(64, 64, 64)
    tight = replace(mica.get_target("wse2"), name="tight", colours=4)
    _, report = search(op, (8, 8), tight, LOWERING)
    causes = dict(report.causes())
    assert causes.get("colours", 0) > 0                        # rings need more than 4 colours
    for c in report.candidates:
        if c.cycles is None and c.cause in REJECTIONS:
            assert c.rejected == REJECTIONS[c.cause].format(kind=c.rejected.split(":")[0])
    assert sum(causes.values()) == sum(c.cycles is None for c in report.candidates)


def test_sram_rejections_say_when_only_the_second_slots_overflow():
    from mica.errors import SramError
    from mica.tiling.search import rejection
    assert rejection(SramError("x"))[0] == "sram"
    assert rejection(SramError("x", cause="double-buffers"))[0] == "double-buffers"
    assert rejection(mica.ScheduleError("odd"))[1] == "ScheduleError: odd"



def test_all_rejected_names_the_dominant_cause_and_the_closest_plan():
    """When no candidate fits, the error is an SramError (the most frequent cause), counts the causes, and
    shows the rejected plan that needed the least SRAM, not the first one tried."""
    op = mica.ops.matmul(256, 256, 256)
    tgt = get_target("wse2")
    with pytest.raises(SramError) as info:
        search(op, (2, 2), tgt, LOWERING)
    msg = str(info.value)
    counts = {k: int(n) for n, k in re.findall(r"(\d+) ([a-z-]+)(?=[,\]])", msg.split("rejected in all: ", 1)[1])}
    assert counts["sram"] == max(counts.values()) and sum(counts.values()) > counts["sram"]
    assert len([ln for ln in info.value.detail.splitlines() if "SramError" in ln]) >= counts["sram"]
    assert "the one closest to fitting" in msg and info.value.needed is not None
    needed = [c.error.needed for c in (evaluate(op, (2, 2), tgt, d, LOWERING) for d in space(op, (2, 2), True))
              if isinstance(c.error, SramError) and c.cause == "sram"]
    assert len(needed) == counts["sram"] and min(needed) == info.value.needed


def test_core_options_keep_every_power_of_two_grid_a_smaller_mesh_tries():
    from mica.tiling.search import _blocks_of, _core_options
    # a loop that fits the axis: the counts a 2^k-core axis tries (all, half, quarter) are tried on every
    # longer axis too, trimmed to the blocks they make
    for extent in (5, 20, 37, 64, 300):
        for k in range(1, 9):
            smaller = set(_core_options(2 ** k, extent))
            for p in (2 ** (k + 1), 3 * 2 ** k + 1, 750):
                if extent <= p:
                    assert smaller <= set(_core_options(p, extent)), (extent, k, p)
    assert _core_options(750, 20) == [20, 10, 7, 5, 4, 2, 1]
    assert all(_blocks_of(20, c) <= c for c in (1, 2, 3, 8, 20))


@pytest.mark.parametrize("name", ["adi", "jacobi-1d"])
def test_a_larger_mesh_is_never_worse(name):
    """adi's heavy nest spreads over 2 blocks of its 20 rows on 8x8 (1.3x one core); on the wafer the
    searched tiles must include that grid, so the wafer plan is no dearer (it once fell to one core)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))
    from frontend_util import MANIFEST, kernel_function, kernel_source
    from mica.affine.from_c import from_c
    prog = from_c(kernel_source(name), kernel_function(name), params=MANIFEST[name]["params"])
    cycles = [mica.compile_affine(prog, mesh=mesh).cost for mesh in ((4, 4), (8, 8), (750, 994))]
    assert cycles[2].cores > 1
    assert cycles[2].total_cycles <= cycles[1].total_cycles <= cycles[0].total_cycles


ALIGNED_GEMV = """
void k(float W[32][60], float h[60], float q[32]) {
  for (int i = 0; i < 32; i++) {
    q[i] = 0.0f;
    for (int d = 0; d < 60; d++)
      q[i] += W[i][d] * h[d];
  }
}
"""


def test_a_loop_tries_the_tiles_an_earlier_operator_left_its_arrays_in():
    """The core counts an axis tries (all, a half, a quarter) need not include the tiles an earlier operator
    laid an array out in; a loop that indexes that array along the same axis also tries them, so its cores
    read the blocks they already hold. Here h lies along y in tiles of 6 (10 blocks; a 12-core axis tries 12, 6
    and 3 blocks of d's 60 iterations). The plan searched with that layout fixed runs as the C does."""
    import numpy as np
    from mica.affine.from_c import from_c
    from mica.testing import run_c
    from mica.tiling.schedule import Home

    prog = from_c(ALIGNED_GEMV, "k")
    mesh, fixed = (8, 12), {"h": Home("h", (("y", 6),), (("x", 0),))}

    def counts(homes):
        return {dict(d.blocks)["y"] for d in space(prog, mesh, fixed_homes=homes) if ("d", "y") in d.assignment}
    assert 10 not in counts(None) and 10 in counts(fixed)
    sched, report = search(prog, mesh, get_target("wse2"), LOWERING, fixed_homes=fixed)
    assert any(dict(c.decisions.blocks).get("y") == 10 for c in report.candidates if c.cycles is not None)
    rng = np.random.default_rng(3)
    ins = {"W": rng.random((32, 60), dtype=np.float32), "h": rng.random(60, dtype=np.float32)}
    res = mica.compile_affine(prog, mesh=mesh, schedule=sched).run(ins)
    np.testing.assert_allclose(res.outputs["q"], run_c(ALIGNED_GEMV, "k", ins, {})["q"], rtol=1e-5)
