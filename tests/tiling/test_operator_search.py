"""The operator-level search (:mod:`mica.tiling.operators`, :mod:`mica.tiling.placement`,
:mod:`mica.tiling.split`): how a program of several operators is cut, ordered, placed side by side or
streamed, which candidate wins and how the explanation lists them; layouts one operator fixes for the next.
(Tests that mainly run such programs on the emulator are in tests/native/.)"""

import re

import numpy as np
import pytest

import mica
from mica.affine.pieces import cut_candidates, cut_program
from mica.errors import ScheduleError
from mica.lower.build import build_mesh_program
from mica.pipeline import LOWERING
from mica.targets import get_target
from mica.testing import run_c
from mica.tiling.operators import fallback_grids
from mica.tiling.mapping import derive_schedule
from mica.tiling.operators import HEAVIEST_FIRST, map_operators
from mica.tiling.placement import independent_runs
from mica.tiling.schedule import Home
from mica.tiling.split import operator_program, split_operators

import samples

MM2 = samples.mm2(12)
ATAX = samples.atax(60, 70)


# -- operators one after another ----------------------------------------------------------------------------


def test_produced_data_is_never_ringed():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    ops = split_operators(prog)
    second = operator_program(prog, ops[1], 1)
    fixed = {"T": Home("T", (("y", 3), ("x", 3)))}
    with pytest.raises(ScheduleError, match="earlier operator left unskewed"):
        derive_schedule(second, (4, 4), skew="interleaved", fixed_homes=fixed)


#: The heavier consumer is searched first (heaviest first), before the producer fixes S's layout: its skewed
#: plans must still not ring S, which the producer writes on the mesh before the consumer runs (ring buffers
#: are loaded from the host, so the consumer would read the host's stale copy: a wrong answer before the fix).
SCALE_THEN_PV = """
void pv(float S[2][20][20], float V[2][20][6], float O[2][20][6]) {
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 20; i++)
      for (int j = 0; j <= i; j++)
        S[h][i][j] = S[h][i][j] * 2.0f;
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 20; i++)
      for (int d = 0; d < 6; d++) {
        O[h][i][d] = 0.0f;
        for (int j = 0; j <= i; j++)
          O[h][i][d] += S[h][i][j] * V[h][j][d];
      }
}
"""


@pytest.mark.parametrize("mesh", [(8, 8), (4, 4), (3, 3)])
def test_produced_data_is_never_ringed_when_its_consumer_is_searched_first(mesh):
    rng = np.random.default_rng(0)
    ins = {"S": rng.uniform(-2, 2, (2, 20, 20)).astype(np.float32),
           "V": rng.uniform(-2, 2, (2, 20, 6)).astype(np.float32)}
    want = run_c(SCALE_THEN_PV, None, ins, {})
    compiled = mica.compile_affine(SCALE_THEN_PV, mesh=mesh, target="generic")
    got = compiled.run(ins).outputs
    for name in ("S", "O"):
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=1e-5, err_msg=f"{name} on {mesh}")
    assert not any(t.role == "ring" and t.array == "S" for t in compiled.mesh_program.tensors)


def test_phased_schedule_round_trips_through_json():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    compiled = mica.compile_affine(prog, mesh=(4, 4), target="wormhole")
    back = mica.Schedule.from_json(compiled.schedule.to_json())
    again = mica.compile_affine(prog, mesh=(4, 4), target="wormhole", schedule=back)
    assert again.meshir == compiled.meshir


def test_heaviest_first_gives_an_intermediate_the_layout_its_consumer_wants():
    """Mapped in program order, ``y = 0`` fixes y's layout and y += A^T tmp must follow it; heaviest
    first, the reduction chooses and the initialisation follows. Both are costed; the plan records
    its order, so JSON and another mesh re-derive it the same way."""
    prog = mica.affine.from_c(ATAX, params={"m": 60, "n": 70})
    ops = split_operators(prog, fine=True)
    tgt = get_target("wse2")
    fwd, _ = map_operators(prog, ops, (8, 8), tgt, LOWERING)
    heavy, _ = map_operators(prog, ops, (8, 8), tgt, LOWERING, heaviest_first=True)
    assert fwd.name == "operators" and heavy.order == HEAVIEST_FIRST and heavy.name == "operators-heaviest-first"
    # The heaviest operators search first and free; y = 0 takes the layout y += A^T tmp chose for y.
    assert heavy.phases[0].home("y") == heavy.phases[2].home("y")
    compiled = mica.compile_affine(prog, mesh=(8, 8), schedule=heavy)
    again = compiled.retarget((4, 4))
    assert again.schedule.order == HEAVIEST_FIRST
    assert again.schedule.phases[0].home("y") == again.schedule.phases[2].home("y")
    rng = np.random.default_rng(0)
    ins = {"A": rng.standard_normal((60, 70)), "x": rng.standard_normal(70)}
    want = run_c(ATAX, "kernel_atax", dict(ins, y=np.zeros(70)), {"m": 60, "n": 70})
    np.testing.assert_allclose(again.run(ins).outputs["y"], want["y"], rtol=1e-9, atol=1e-9)


def test_a_one_core_plan_cannot_honour_a_layout_another_operator_fixed():
    prog = mica.affine.from_c(samples.GEMV2, params={"n": 48})
    sub = operator_program(prog, split_operators(prog)[1], 1)
    fixed = {"A": Home("A", (("x", 12), (None, 48)), (("y", 0),))}
    sched = derive_schedule(sub, (4, 4), assignment=[], fixed_homes=fixed)
    with pytest.raises(ScheduleError, match="one-core plan keeps A whole on core"):
        build_mesh_program(sub, sched, get_target("wse2"))


def test_nothing_fits_names_every_way_tried():
    big = samples.GEMV2.replace("48", "4096")
    prog = mica.affine.from_c(big, params={"n": 4096})
    with pytest.raises(mica.errors.SramError, match="operator by operator over the 4x4 mesh") as err:
        mica.compile_affine(prog, mesh=(4, 4))
    assert "heaviest first" in err.value.detail and "in program order" in err.value.detail


# -- side by side and streamed ------------------------------------------------------------------------------

def test_independent_runs():
    def runs(src):
        prog = mica.affine.from_c(src)
        return independent_runs(prog, split_operators(prog))
    assert runs(samples.mvt(8)) == [[0, 1]]
    assert runs(samples.mm3(4)) == [[0, 1]]
    two = samples.mm3(4).replace("F[i][j] += C[i][k] * D[k][j]", "F[i][j] += E[i][k] * D[k][j]")
    assert runs(two) == []           # F now reads E: nothing runs beside anything


def test_what_cannot_be_cut_is_refused_by_name():
    prog = mica.affine.from_c(samples.mvt(8))
    # x2 is indexed by the other loop of mvt's second statement: pieces would share its elements.
    assert cut_candidates(prog) == []
    with pytest.raises(ScheduleError, match="x2 is written"):
        cut_program(prog, "x1", 0, 2)
    # 3mm's G = E F reads every row of F: no piece of rows of G has its own F.
    with pytest.raises(ScheduleError, match="statement"):
        cut_program(mica.affine.from_c(samples.mm3(4)), "G", 0, 2)
    with pytest.raises(ScheduleError, match="at least 2"):
        cut_program(mica.affine.from_c(samples.matmul_chain(8, 4)), "T", 0, 1)
    assert cut_candidates(mica.affine.from_c(samples.matmul_chain(8, 4))) == [("T", 0)]


def test_the_search_weighs_streams_against_operators_one_after_another():
    """The explanation lists the streamed candidates with their modelled cycles; the chosen plan is the
    cheapest listed (here one after another: every element of T must cross the one column of links
    between the two slabs, which costs more than T's two operators gain from running at once)."""
    op = mica.affine.from_c(samples.matmul_chain(64, 8))
    compiled = mica.compile_affine(op, mesh=(8, 8))
    text = compiled.explain()
    lines = [ln for ln in text.splitlines() if "streamed from slab to slab" in ln]
    assert len(lines) == 4                       # 2 and 4 pieces, slabs across x and across y
    assert any("[0:4, 0:8], [4:8, 0:8]" in ln for ln in lines) and any("[0:8, 0:4], [0:8, 4:8]" in ln for ln in lines)
    listed = [float(ln.split("cycles")[0].replace(",", "")) for ln in text.splitlines()
              if re.match(r"^\s+[\d,]+ cycles  [^x]", ln)]          # the "cheapest of" list, not reports
    assert compiled.cost.total_cycles == pytest.approx(min(listed), abs=1)
    streamed = min(float(ln.split("cycles")[0].replace(",", "")) for ln in lines)
    assert compiled.cost.total_cycles < streamed and not compiled.schedule.pieces
    off = mica.compile_affine(op, mesh=(8, 8), side_by_side=False)
    assert "streamed" not in off.explain()


# -- stencils ---------------------------------------------------------------------------------------------------

def test_search_picks_a_halo_plan_for_a_large_grid():
    prog = mica.affine.from_c(samples.jacobi_2d(200), "jacobi", params={"tsteps": 10, "n": 200})
    compiled = mica.compile_affine(prog, mesh=(8, 8), target="wse2")
    assert compiled.schedule.step.sweep and len(compiled.schedule.space) == 2
    assert "halo exchange" in compiled.explain()


def test_each_operator_of_a_phased_plan_has_its_own_cycles():
    """CompiledProgram.operator_cycles: one record per phase, in order, with the arrays it writes; each
    operator alone costs less than the whole plan, which adds the hand-offs between them."""
    cp = mica.compile_affine(MM2, mesh=(4, 4), params={"n": 12}, side_by_side=False)
    parts = cp.operator_cycles()
    assert len(parts) == len(cp.schedule.phases) >= 2
    assert [p.index for p in parts] == list(range(len(parts)))
    assert {a for p in parts for a in p.writes} == set(cp.program.outputs) | {"T"}
    assert all(0 < p.cycles < cp.cost.total_cycles and 1 <= p.cores <= 16 for p in parts)
    assert sum(p.cycles for p in parts) <= cp.cost.total_cycles
    one = mica.compile_affine("void f(float a[8][8], float b[8][8]) { for (int i = 0; i < 8; i++) "
                              "for (int j = 0; j < 8; j++) b[i][j] = 2 * a[i][j]; }", mesh=(4, 4))
    assert not one.schedule.phases and one.operator_cycles() == ()


def test_an_operator_weighs_its_layout_changes_against_its_runtime():
    """3mm in program order on 4x3: G = E F runs fastest with E and F laid out otherwise than the two earlier
    products left them, but changing them costs more than it saves; a plan that runs a little slower and
    needs cheaper changes wins (mica.tiling.operators: run plus change, not run alone). The plan computes
    what the C does."""
    src = (samples.KERNELS / "3mm.c").read_text()
    params = {"ni": 16, "nj": 18, "nk": 20, "nl": 22, "nm": 24}
    prog = mica.affine.from_c(src, params=params)
    sched, _ = map_operators(prog, split_operators(prog), (4, 3), get_target("wse2"), LOWERING)
    why = [r for p in sched.phases for r in p.reasons if "not the fastest plan's" in r]
    assert why, [p.reasons for p in sched.phases]
    run, fastest, change, fastest_change = _weighed(why[0])
    assert run >= fastest and run + change < fastest + fastest_change
    compiled = mica.compile_affine(prog, mesh=(4, 3), schedule=sched)
    rng = np.random.default_rng(1)
    ins = {a: rng.uniform(0.5, 1.5, prog.array(a).shape) for a in prog.inputs}
    want = run_c(src, None, ins, params)
    got = compiled.run(ins).outputs
    np.testing.assert_allclose(got["G"], want["G"], rtol=1e-12)


def _weighed(reason: str) -> tuple[float, float, float, float]:
    """(its run, the fastest plan's run, its layout changes, the fastest plan's) from the reason's text."""
    m = re.search(r"runs in ([\d,]+) modelled cycles, not the fastest plan's ([\d,]+): the layout changes it "
                  r"needs take ([\d,]+) cycles, the fastest plan's ([\d,]+)", reason)
    assert m, reason
    return tuple(float(v.replace(",", "")) for v in m.groups())


def test_the_fallback_grids_halve_once_and_the_deep_ladder_down_to_two():
    """The grids tried while no way works: the mesh, its largest square, that square halved; while every way that
    works is slower than one core (``deep``), the square keeps halving down to 2x2."""
    assert fallback_grids((750, 994)) == [(750, 994), (750, 750), (375, 375)]
    assert fallback_grids((750, 994), deep=True) == [(750, 994), (750, 750), (375, 375), (188, 188), (94, 94),
                                                     (47, 47), (24, 24), (12, 12), (6, 6), (3, 3), (2, 2)]
    assert fallback_grids((8, 8), deep=True) == [(8, 8), (4, 4), (2, 2)]
    assert fallback_grids((2, 1), deep=True) == [(2, 1), (1, 1)]


def test_a_way_whose_free_layout_changes_are_cheap_counts_as_settled():
    """The transposed mesh and the smaller squares are tried to avoid costly free layout changes: a way whose
    free changes (as its operators' reasons state them) take at most SETTLED_SHARE of its cycles is settled, a
    costlier one is not, and a way with none is."""
    from mica.tiling.operators import (SETTLED_SHARE, Way, _free_layout_cycles, _free_layout_reason,
                                       _relaid_freely)
    from mica.tiling.schedule import Schedule
    moved = Schedule((4, 4), (), None, (), (), reasons=(_free_layout_reason(["q", "qr"], 1234, 29),))
    free = Schedule((4, 4), (), None, (), (), reasons=("searched with its arrays' layouts free",))
    sched = Schedule((4, 4), (), None, (), (), family="operators", phases=(moved, free, moved))
    assert _free_layout_cycles(sched) == 2468
    assert _free_layout_cycles(sched.copy(phases=(free,))) == 0
    assert not _relaid_freely(Way("w", 2468 / SETTLED_SHARE, sched))
    assert _relaid_freely(Way("w", 2468 / SETTLED_SHARE - 1, sched))
    assert not _relaid_freely(Way("w", 1.0, sched.copy(phases=(free,))))


#: A heavy product and a light row maximum: streaming or side-by-side mapping gives the maximum a slab of a
#: line or two, which T (512 KB) must reach.
PRODUCT_THEN_MAX = """
void pm(float A[512][64], float B[64][256], float T[512][256], float m[512]) {
  for (int i = 0; i < 512; i++)
    for (int j = 0; j < 256; j++) {
      T[i][j] = 0.0f;
      for (int k = 0; k < 64; k++)
        T[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < 512; i++) {
    m[i] = -INFINITY;
    for (int j = 0; j < 256; j++)
      m[i] = fmaxf(m[i], T[i][j]);
  }
}
"""


def test_an_operator_whose_arrays_exceed_its_rectangles_sram_is_refused_before_any_search(monkeypatch):
    """Every array an operator touches lives on its rectangle: when they exceed the SRAM of all its cores
    together (T and m, 526,336 B, on one line of 8 WSE-2 cores, 393,216 B) the mapping raises SramError naming
    the operator and the rectangle before searching anything; on two lines it searches. On a target with
    device DRAM only the arrays it writes count (its read-only inputs may stream from DRAM)."""
    import dataclasses

    import mica.tiling.operators as operators
    from mica.errors import SramError

    class Searched(Exception):
        pass

    def search(prog, *args, **kwargs):
        raise Searched(prog.name)

    prog = mica.affine.from_c(PRODUCT_THEN_MAX)
    ops = split_operators(prog)
    wse2 = get_target("wse2")
    monkeypatch.setattr(operators, "search", search)
    with pytest.raises(SramError, match=r"operator 1 of pm touches 526,336 bytes of arrays \(T 524,288 B, "
                                        r"m 2,048 B\), more than the 1x8 cores of its rectangle hold "
                                        r"\(393,216 B"):
        map_operators(prog, ops, (8, 8), wse2, LOWERING, places=[((0, 0), (7, 8)), ((7, 0), (1, 8))])
    with pytest.raises(Searched, match="pm_op0"):
        map_operators(prog, ops, (8, 8), wse2, LOWERING, places=[((0, 0), (6, 8)), ((6, 0), (2, 8))])
    tiny = dataclasses.replace(get_target("wormhole"), sram_bytes=65536)
    assert tiny.has_dram
    # The product's A and B (read only, 192 KB) may stay in DRAM: T alone (512 KB) fits 8 such cores, not 6.
    operators._check_rectangles_hold(prog, ops[:1], [((0, 0), (8, 1))], tiny)
    with pytest.raises(SramError, match=r"operator 0 of pm touches 524,288 bytes of arrays \(T 524,288 B\)"):
        operators._check_rectangles_hold(prog, ops[:1], [((0, 0), (3, 2))], tiny)


def test_when_no_way_works_the_error_tallies_why_and_gives_the_first_ways_reason():
    """Every way of mapping the operators fails (each array alone exceeds the two cores' SRAM) and so does one
    core: the error is the one-core SramError, and it says how many ways were rejected, for what, and why the
    first (the operators in program order) was."""
    src = """void f(float A[200][200], float B[200][200], float C[200][200]) {
      for (int i = 0; i < 200; i++) for (int j = 0; j < 200; j++) B[i][j] = A[i][j] * 2.0f;
      for (int i = 0; i < 200; i++) for (int j = 0; j < 200; j++) C[i][j] = B[i][j] + A[i][j];
    }"""
    with pytest.raises(mica.SramError) as err:
        mica.compile_affine(mica.affine.from_c(src), mesh=(2, 1))
    text = str(err.value)
    tally = re.search(r"does not work either: (\d+) way\(s\) rejected \((\d+) for sram\); the first, 2 operators "
                      r"\(loop nests\), in program order: operator 0 of f touches 320,000 bytes", text)
    assert tally and tally.group(1) == tally.group(2), text
    detail = err.value.detail
    assert detail.startswith("ways tried:")
    ways = [line for line in detail.splitlines() if re.match(r"\s+rejected\s+(?!\s*one core:)", line)]
    assert len(ways) == int(tally.group(1)), detail
