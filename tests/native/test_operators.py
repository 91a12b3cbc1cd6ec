"""Programs of several operators: each mapped in turn, data left where the producer put it."""

import numpy as np
import pytest

import mica
from mica.errors import ScheduleError
from mica.meshir.phases import split_operators
from mica.testing import run_c
from mica.tiling.mapping import derive_schedule
from mica.tiling.schedule import Home

MM2 = '''
void mm2(int n, double A[12][12], double B[12][12], double C[12][12], double T[12][12], double D[12][12]) {
  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
    T[i][j] = 0; for (int k = 0; k < n; k++) T[i][j] += A[i][k] * B[k][j]; }
  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
    D[i][j] = 0; for (int k = 0; k < n; k++) D[i][j] += T[i][k] * C[k][j]; }
}'''


def _inputs():
    rng = np.random.default_rng(1)
    return {k: rng.standard_normal((12, 12)) for k in ("A", "B", "C")}


@pytest.mark.parametrize("mesh", [(4, 4), (3, 3), (2, 2)])
def test_matmul_feeding_matmul_runs_on_the_mesh(mesh):
    prog = mica.affine.from_c(MM2, params={"n": 12})
    assert len(split_operators(prog)) == 2
    compiled = mica.compile_affine(prog, mesh=mesh, target="wormhole")
    assert compiled.schedule.name == "operators" and len(compiled.schedule.phases) == 2
    assert compiled.mesh_program.region.cores > 1
    ins = _inputs()
    want = run_c(MM2, "mm2", dict(ins, T=np.zeros((12, 12)), D=np.zeros((12, 12))), {"n": 12})
    got = compiled.run(ins).outputs
    for name in ("T", "D"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12)
    # T is read by the second operator where the first left it: no host round trip in between.
    text = compiled.meshir
    assert "host_load T" not in text and "multicast T ->" in text


def test_produced_data_is_never_ringed():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    ops = split_operators(prog)
    from mica.meshir.phases import operator_program
    second = operator_program(prog, ops[1], 1)
    fixed = {"T": Home("T", (("y", 3), ("x", 3)))}
    with pytest.raises(ScheduleError, match="earlier operator left unskewed"):
        derive_schedule(second, (4, 4), skew="interleaved", fixed_homes=fixed)


def test_phased_schedule_round_trips_through_json():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    compiled = mica.compile_affine(prog, mesh=(4, 4), target="wormhole")
    back = mica.Schedule.from_json(compiled.schedule.to_json())
    again = mica.compile_affine(prog, mesh=(4, 4), target="wormhole", schedule=back)
    assert again.meshir == compiled.meshir


def test_phased_plan_reruns_on_another_mesh():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    compiled = mica.compile_affine(prog, mesh=(4, 4), target="wormhole")
    ins = _inputs()
    want = run_c(MM2, "mm2", dict(ins, T=np.zeros((12, 12)), D=np.zeros((12, 12))), {"n": 12})
    res = compiled.run(ins, mesh=(3, 3))
    np.testing.assert_allclose(res.outputs["D"], want["D"], rtol=1e-12, atol=1e-12)
    assert compiled.retarget((3, 3)).schedule.name == "operators"


CHAIN3 = '''
void chain3(int n, double A[64][64], double x[64], double y[64], double z[64], double B[64][64], double w[64]) {
  for (int i = 0; i < n; i++) { y[i] = 0; for (int j = 0; j < n; j++) y[i] += A[i][j] * x[j]; }
  for (int i = 0; i < n; i++) z[i] = 2.0 * y[i] + 1.0;
  for (int i = 0; i < n; i++) { w[i] = 0; for (int j = 0; j < n; j++) w[i] += B[i][j] * z[j]; }
}'''


@pytest.mark.parametrize("mesh, target", [((16, 16), "wse2"), ((8, 8), "wormhole"), ((5, 7), "wse2")])
def test_gemv_elementwise_gemv(mesh, target):
    """Regression: merging operators once dropped the body of renamed fill/accumulate kernels."""
    prog = mica.affine.from_c(CHAIN3, params={"n": 64})
    rng = np.random.default_rng(0)
    ins = {"A": rng.standard_normal((64, 64)), "B": rng.standard_normal((64, 64)), "x": rng.standard_normal(64)}
    want = run_c(CHAIN3, "chain3", dict(ins, y=np.zeros(64), z=np.zeros(64), w=np.zeros(64)), {"n": 64})
    got = mica.compile_affine(prog, mesh=mesh, target=target).run(ins).outputs
    for name in ("y", "z", "w"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("group", [2, 3, 4, 5])
def test_ktree_groups_accumulate_only_on_receivers(group):
    """Tree reductions with several group sizes; and the lowering keeps a strided rectangle's stride when
    it clips a compute to a kernel class (it once dropped it: harmless for trees, wrong in general)."""
    from mica.meshir.ir import Lin, Rect, Region
    from mica.native_sim.lower import clip
    strided = Rect.of(0, 9, 0, 4, xs=group, xp=Lin(1, (("s", -1),)))
    clipped = clip(strided, Region("c", 0, 12, 0, 2))
    assert (clipped.xs, clipped.xp) == (group, strided.xp) and clipped.members({"s": 0})[0] == strided.members({"s": 0})[0]
    op = mica.ops.gemv(40, 120)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 120)).astype(np.float32)
    x = rng.standard_normal(120).astype(np.float32)
    s = derive_schedule(op, (12, 4), reduce="tree", group=group)
    res = mica.compile_affine(op, mesh=(12, 4), schedule=s).run({"A": A, "x": x})
    np.testing.assert_allclose(res.outputs["y"], A.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)
