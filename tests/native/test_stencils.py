"""Stencils: the grid blocked over the mesh, the time loop in lock-step sweeps, neighbours' edges
exchanged into ghost zones (halo exchange). Every program is compared with the same C compiled
natively; stencils keep the original order of every update, so the results are bit-identical."""

import numpy as np
import pytest

import mica
from mica.comm.traffic import declared_traffic
from mica.errors import CommError, ScheduleError
from mica.meshir.ir import Exchange, Shift
from mica.testing import run_c
from mica.tiling.mapping import derive_schedule

import samples

jacobi2d = samples.jacobi_2d


# Nine points: the corners come from diagonal neighbours (two hops: along x, then along y).
BOX9 = """
void box9(int T, int n, int m, float A[13][17], float B[13][17]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        B[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1] + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0f;
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[i][j] = B[i][j];
  }
}"""

# A halo two elements wide, a read-only coefficient array with its own halo, and a one-sided update.
WIDE1D = """
void wide(int T, int n, double A[30], double B[30], double w[30]) {
  for (int t = 0; t < T; t++) {
    for (int i = 2; i < n - 2; i++)
      B[i] = w[i - 1] * A[i - 2] + w[i] * A[i] + w[i + 1] * A[i + 2] + 0.5 * A[i + 1];
    for (int i = 2; i < n - 2; i++)
      A[i] = B[i] - 0.25 * B[i - 1];
  }
}"""


def _check(src, fn, params, inputs, mesh, schedule_of=mica.plans.halo, target="wse2"):
    prog = mica.affine.from_c(src, fn, params=params)
    compiled = mica.compile_affine(prog, mesh=mesh, target=target, schedule=schedule_of(prog, mesh))
    want = run_c(src, fn, {k: v.copy() for k, v in inputs.items()}, params)
    res = compiled.run(inputs, threads=2)
    for name, value in want.items():
        assert res.outputs[name].tobytes() == value.tobytes(), f"{name} on {mesh}"
    return compiled, res


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5), (2, 3), (7, 1)])
def test_jacobi_2d_halo_plan_matches_native_c(mesh):
    rng = np.random.default_rng(0)
    ins = {"A": rng.random((20, 20)), "B": rng.random((20, 20))}
    compiled, res = _check(jacobi2d(20), "jacobi", {"tsteps": 5, "n": 20}, ins, mesh)
    sched = compiled.schedule
    assert sched.step is not None and sched.step.sweep and sched.step.steps == 5
    assert compiled.mesh_program.region.cores == mesh[0] * mesh[1]
    halos = [op for op, _ in compiled.mesh_program.walk() if isinstance(op, Exchange) and op.name.startswith("halo")]
    assert halos and all(isinstance(c, Shift) and c.max_hops == 1 for op in halos for c in op.ops)
    # Every byte the emulator moved is one the plan declared, link by link.
    want = declared_traffic(compiled.mesh_program)
    assert np.array_equal(res.stats.link_bytes, want.link_bytes)
    assert res.stats.messages == want.messages


@pytest.mark.parametrize("mesh", [(3, 3), (4, 2)])
def test_nine_point_stencil_gets_its_corners(mesh):
    rng = np.random.default_rng(1)
    ins = {"A": rng.random((13, 17), dtype=np.float32), "B": np.zeros((13, 17), np.float32)}
    _check(BOX9, "box9", {"T": 3, "n": 13, "m": 17}, ins, mesh)


@pytest.mark.parametrize("mesh", [(5, 1), (3, 2)])
def test_wide_and_read_only_halos(mesh):
    rng = np.random.default_rng(2)
    ins = {"A": rng.random(30), "B": np.zeros(30), "w": rng.random(30)}
    compiled, _ = _check(WIDE1D, "wide", {"T": 4, "n": 30}, ins, mesh)
    home = compiled.mesh_program.tensor("A")
    assert home.box[0].offset == -2 and home.box[0].span == home.box[0].tile + 4
    # w is never written: its ghost zone is filled by the host load, no exchange moves it.
    assert not any(c.array == "w" for op, _ in compiled.mesh_program.walk() if isinstance(op, Exchange)
                   for c in op.ops)


def test_halo_plan_round_trips_through_json():
    prog = mica.affine.from_c(jacobi2d(20), "jacobi", params={"tsteps": 3, "n": 20})
    sched = mica.plans.halo(prog, (3, 3))
    back = mica.Schedule.from_json(sched.to_json())
    assert back == sched and back.step.sweep
    assert derive_schedule(prog, (5, 2), like=sched).step.sweep


def test_in_place_stencil_takes_a_halo_only_as_a_wavefront():
    """Gauss-Seidel reads values its neighbours write in the same sweep: no lock-step halo can bring them,
    but a wavefront (the core below and to the right starting a step later) can, and the search takes it (at 16x16 one core is cheaper: each core's call and vector ops cost more than
    its share of the sweep saves)."""
    src = """
void seidel(int T, int n, double A[24][24]) {
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = (A[i-1][j] + A[i][j-1] + A[i][j] + A[i][j+1] + A[i+1][j]) / 5.0;
}"""
    prog = mica.affine.from_c(src, "seidel", params={"T": 2, "n": 24})
    with pytest.raises(ScheduleError, match="carries a dependence"):
        derive_schedule(prog, (4, 4), assignment=[("i", "y"), ("j", "x")])
    compiled = mica.compile_affine(prog, mesh=(4, 4))
    assert compiled.schedule.family == "wavefront" and compiled.cost.cores > 1
    a = np.random.default_rng(3).random((24, 24))
    want = run_c(src, "seidel", {"A": a}, {"T": 2, "n": 24})["A"]
    np.testing.assert_array_equal(compiled.run({"A": a}).outputs["A"], want)


def test_statements_read_each_others_neighbours():
    """S0 reads B[i + 1], which S1 wrote on the neighbour in the previous step; S1 reads A[i - 1], which
    S0 wrote earlier in the same step: both arrive by halo exchange just before the reading statement."""
    src = """
void f(int T, int n, double A[24], double B[24]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < n - 1; i++)
      A[i] = B[i + 1] + A[i];
    for (int i = 1; i < n - 1; i++)
      B[i] = A[i - 1] * 0.5;
  }
}"""
    ins = {"A": np.arange(24.0), "B": np.ones(24)}
    compiled, _ = _check(src, "f", {"T": 3, "n": 24}, ins, (4, 1))
    names = [op.name for op, _ in compiled.mesh_program.walk() if isinstance(op, Exchange)]
    assert names == ["halo_S0_x", "halo_S1_x"]


def test_legality_refuses_a_same_sweep_flow_across_cores():
    """A hand-made schedule that spreads an in-place (Gauss-Seidel) sweep over cores: the value a core
    needs is produced by its neighbour during the same sweep, so no halo can deliver it."""
    from mica.tiling.legality import check_legal
    from mica.tiling.schedule import Home, Schedule, SpaceMap, StepMap
    src = """
void s1(int T, int n, double A[32]) {
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      A[i] = (A[i - 1] + A[i + 1]) * 0.5;
}"""
    prog = mica.affine.from_c(src, "s1", params={"T": 2, "n": 32})
    sched = Schedule((4, 1), (SpaceMap("i", "x", 8),), StepMap("t", 1, 2, sweep=True),
                     (("S0", ("t", "i")),), (Home("A", (("x", 8),), (("y", 0),)),))
    with pytest.raises(ScheduleError, match="same step"):
        check_legal(prog, sched)


def test_halo_wider_than_a_tile_is_refused():
    src = """
void far(int T, int n, double A[40], double B[40]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < n - 6; i++) B[i] = A[i + 6];
    for (int i = 0; i < n - 6; i++) A[i] = B[i];
  }
}"""
    prog = mica.affine.from_c(src, "far", params={"T": 2, "n": 40})
    sched = derive_schedule(prog, (10, 1), assignment=[("i", "x")])
    with pytest.raises(CommError, match="past a core's block of 4"):
        mica.compile_affine(prog, mesh=(10, 1), schedule=sched)
    # With fewer, larger blocks the same read is a halo.
    ins = {"A": np.arange(40.0), "B": np.zeros(40)}
    _check(src, "far", {"T": 2, "n": 40}, ins, (4, 1), schedule_of=lambda p, m: derive_schedule(p, m, assignment=[("i", "x")]))
