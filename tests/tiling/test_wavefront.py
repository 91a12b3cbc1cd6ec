"""Wavefronts: loops that carry dependences of bounded distance spread over cores whose blocks run at skewed
steps (issue 17, item 4). Every plan is run in the emulator against the same C compiled natively."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.errors import ScheduleError
from mica.tiling.legality import check_legal
from mica.tiling.mapping import derive_schedule, wavefront_candidates
from mica.tiling.schedule import Schedule, SpaceMap, StepMap
from mica.tiling.wavefront import block_deltas, tileable, wave_weights
from mica.testing import run_c

GAUSS_SEIDEL = """
void gs(float A[N + 2][M + 2]) {
  for (int i = 1; i <= N; i++)
    for (int j = 1; j <= M; j++)
      A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i + 1][j] + A[i][j + 1]) * 0.25f;
}"""

RECURRENCE = """
void wave(double A[N + 1][M + 1], double B[N + 1][M + 1]) {
  for (int i = 1; i <= N; i++)
    for (int j = 1; j <= M; j++)
      A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i - 1][j - 1]) * 0.25 + B[i][j];
}"""

TIMED = """
void timed(int T, double A[N + 2][M + 2]) {
  for (int t = 0; t < T; t++)
    for (int i = 1; i <= N; i++)
      for (int j = 1; j <= M; j++)
        A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i][j] + A[i + 1][j] + A[i][j + 1]) / 5.0;
}"""

SEIDEL = """
void seidel(int T, double A[N][N]) {
  for (int t = 0; t < T; t++)
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1] + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0;
}"""


def _sized(src: str, n: int, m: int) -> str:
    return src.replace("N", str(n)).replace("M", str(m))


def _check(src: str, compiled, params=None, seed=0):
    """Runs ``compiled`` in the emulator against ``src`` compiled natively; the cores the model says compute
    are the ones the emulator measured computing."""
    rng = np.random.default_rng(seed)
    ins = {a.name: rng.random(a.shape).astype({"f32": np.float32, "f64": np.float64}[a.dtype])
           for a in compiled.program.arrays if a.name in compiled.program.inputs}
    want = run_c(src, None, ins, params)
    res = compiled.run(ins)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
    for name, value in want.items():
        np.testing.assert_array_equal(res.outputs[name], value)      # the same order of every update
    return res


def test_block_distances_of_a_gauss_seidel_sweep():
    prog = from_c(_sized(GAUSS_SEIDEL, 12, 9))
    tiles = (SpaceMap("i", "y", 4), SpaceMap("j", "x", 3))
    deltas = block_deltas(prog, "", tiles)
    # dl is always 0 (no sweep loop); flows from (i-1, j), (i, j-1) and anti dependences to (i+1, j), (i, j+1).
    assert {(0, 0, 1), (0, 1, 0), (0, 0, 0)} <= deltas
    assert all(dx >= 0 and dy >= 0 for _, dx, dy in deltas)
    assert wave_weights(prog, "", tiles, 1, {"x": 3, "y": 3}) == (1, 1, 1)
    assert tileable(prog, "", ("i", "j"))


def test_seidel_blocks_are_pipelined_along_one_axis_only():
    """seidel-2d's ``A[i-1][j+1]`` goes backwards along j inside a sweep: rectangular 2D blocks are illegal
    (they need skewed tiles), one axis of rows is a pipeline with period 2."""
    prog = from_c(SEIDEL.replace("N", "12"), params={"T": 4})
    assert not tileable(prog, "t", ("i", "j"))
    assert tileable(prog, "t", ("i",))
    assert [("i", "x")] in wavefront_candidates(prog) and [("i", "y"), ("j", "x")] not in wavefront_candidates(prog)
    sched = derive_schedule(prog, (4, 1), assignment=[("i", "x")], wave=True)
    assert sched.family == "wavefront" and sched.step.period == 2 and sched.step.wave == (1, 0)
    # period*(T - 1) + wx*(blocks - 1) + 1 steps: the pipeline's fill and drain.
    assert sched.step.steps == 2 * 3 + 1 * 3 + 1


def test_wrong_weights_are_refused_by_the_isl_proof():
    """A wave that runs the row below before the row it depends on is caught by legality, not trusted."""
    prog = from_c(_sized(GAUSS_SEIDEL, 12, 9))
    good = derive_schedule(prog, (3, 3), assignment=[("i", "y"), ("j", "x")], wave=True)
    check_legal(prog, good)
    for wave in ((1, 0), (0, 1)):
        bad = good.copy(step=StepMap("", 1, good.step.steps + 9, sweep=True, wave=wave))
        with pytest.raises(ScheduleError):
            check_legal(prog, bad)


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5), (5, 2), (1, 4), (7, 3), (2, 2)])
def test_gauss_seidel_and_recurrence_match_native_c(mesh):
    for src, (n, m) in ((GAUSS_SEIDEL, (23, 17)), (RECURRENCE, (19, 26))):
        text = _sized(src, n, m)
        prog = from_c(text)
        sched = derive_schedule(prog, mesh, assignment=[("i", "y"), ("j", "x")], wave=True)
        compiled = mica.compile_affine(prog, mesh=mesh, target="generic", schedule=sched)
        assert compiled.cost.cores == mesh[0] * mesh[1]
        _check(text, compiled)


@pytest.mark.parametrize("mesh", [(4, 4), (3, 2), (6, 1)])
def test_a_time_loop_over_a_wavefront_matches_native_c(mesh):
    text = _sized(TIMED, 14, 11)
    prog = from_c(text, params={"T": 3})
    sched = derive_schedule(prog, mesh, assignment=[("i", "y"), ("j", "x")], wave=True)
    assert sched.step.loop == "t" and sched.step.period >= 2
    compiled = mica.compile_affine(prog, mesh=mesh, target="generic", schedule=sched)
    assert compiled.cost.cores > 1
    _check(text, compiled, {"T": 3})


def test_the_search_chooses_a_wavefront_and_it_carries_over():
    text = _sized(GAUSS_SEIDEL, 64, 64)
    compiled = mica.compile_affine(text, mesh=(4, 4), target="wse2")
    assert compiled.schedule.family == "wavefront" and compiled.cost.cores == 16
    assert "wavefront" in compiled.explain() and "wavefront" in str(compiled.schedule)
    one = mica.compile_affine(text, mesh=(1, 1), target="wse2")
    assert compiled.cost.total_cycles < one.cost.total_cycles
    res = _check(text, compiled)
    # The model reads a wavefront's critical path as every step paying a busy core's block.
    assert 0.8 < compiled.cost.total_cycles / res.stats.cycles < 1.25
    again = Schedule.from_json(compiled.schedule.to_json())
    assert again == compiled.schedule
    for mesh in ((3, 5), (8, 2), (1, 1)):
        moved = compiled.retarget(mesh)
        assert moved.schedule.family == "wavefront"
        _check(text, moved)


def test_seidel_2d_spreads_as_a_pipeline_of_rows():
    text = SEIDEL.replace("N", "20")
    compiled = mica.compile_affine(text, mesh=(8, 8), target="wse2", params={"T": 10})
    assert compiled.schedule.family == "wavefront" and compiled.cost.cores > 1
    _check(text, compiled, {"T": 10})


def test_a_dependence_that_reaches_past_the_neighbour_is_rejected_clearly():
    """Floyd-Warshall's blocks can be ordered, but each reads row and column k from cores far away: the
    wavefront is refused with the halo's reach. The searched plan cuts the loops at the pivot instead
    (mica.affine.isplit) and spreads; it computes what the C does."""
    text = """
void fw(double D[16][16]) {
  for (int k = 0; k < 16; k++)
    for (int i = 0; i < 16; i++)
      for (int j = 0; j < 16; j++)
        D[i][j] = D[i][j] < D[i][k] + D[k][j] ? D[i][j] : D[i][k] + D[k][j];
}"""
    prog = from_c(text)
    with pytest.raises(mica.MicaError, match="past a core's block"):
        mica.compile_affine(prog, mesh=(4, 4), target="generic",
                            schedule=derive_schedule(prog, (4, 4), assignment=[("i", "y"), ("j", "x")], wave=True))
    compiled = mica.compile_affine(prog, mesh=(4, 4), target="generic")
    assert compiled.cost.cores == 16 and compiled.schedule.family != "wavefront"
    assert any(r.startswith("split: ") for r in compiled.schedule.reasons)
    _check(text, compiled)


def test_a_larger_mesh_keeps_the_wavefront_a_smaller_one_finds():
    """Gauss-Seidel 64x64: on 8x8 a wavefront of 8x8 blocks; on the whole wafer a block per row and column
    would fill the pipeline with one message per row and lose to one core, so the wafer also tries halves,
    quarters, ... of its grid and keeps a wavefront at least as fast as the smaller mesh's."""
    src = _sized(GAUSS_SEIDEL, 64, 64)
    prog = from_c(src)
    small = mica.compile_affine(prog, mesh=(8, 8))
    big = mica.compile_affine(prog, mesh=(750, 994))
    assert small.schedule.family == big.schedule.family == "wavefront"
    assert big.cost.total_cycles <= small.cost.total_cycles and big.cost.cores > 1
    _check(src, big)
