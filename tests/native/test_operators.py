"""Programs of several operators: each mapped in turn, data left where the producer put it."""

import numpy as np
import pytest

import mica
from mica.testing import run_c
from mica.tiling.mapping import derive_schedule
from mica.tiling.split import operator_program, split_operators

import samples

MM2 = samples.mm2(12)
CHAIN3 = samples.chain3(64)
ATAX = samples.atax(60, 70)
GEMV2 = samples.GEMV2



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


def test_phased_plan_reruns_on_another_mesh():
    prog = mica.affine.from_c(MM2, params={"n": 12})
    compiled = mica.compile_affine(prog, mesh=(4, 4), target="wormhole")
    ins = _inputs()
    want = run_c(MM2, "mm2", dict(ins, T=np.zeros((12, 12)), D=np.zeros((12, 12))), {"n": 12})
    res = compiled.run(ins, mesh=(3, 3))
    np.testing.assert_allclose(res.outputs["D"], want["D"], rtol=1e-12, atol=1e-12)
    assert compiled.retarget((3, 3)).schedule.name == "operators"


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


@pytest.mark.parametrize("mesh, target", [((8, 8), "wse2"), ((5, 3), "wormhole")])
def test_atax_is_distributed_and_spread_over_the_mesh(mesh, target):
    """atax's second nest holds tmp = A x and y += A^T tmp in one i loop: no mapping of the nest spreads
    both, so the nest is distributed and each product gets its own layout."""
    prog = mica.affine.from_c(ATAX, params={"m": 60, "n": 70})
    compiled = mica.compile_affine(prog, mesh=mesh, target=target)
    assert len(compiled.schedule.phases) == 3 and compiled.mesh_program.region.cores > 1
    assert "loop nests distributed" in compiled.explain() and "one core" in compiled.explain()
    rng = np.random.default_rng(0)
    ins = {"A": rng.standard_normal((60, 70)), "x": rng.standard_normal(70)}
    want = run_c(ATAX, "kernel_atax", dict(ins, y=np.zeros(70)), {"m": 60, "n": 70})
    got = compiled.run(ins).outputs
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-9, atol=1e-9)
    back = mica.Schedule.from_json(compiled.schedule.to_json())
    assert mica.compile_affine(prog, mesh=mesh, target=target, schedule=back).meshir == compiled.meshir


REORDER = '''
void reo(int n, double a[4000], double b[4000], double x[4000]) {
  for (int i = 0; i < n; i++) {
    if (i > 0) a[i] = b[i - 1] + 1.0;
    b[i] = x[i] * 2.0;
  }
}'''


def test_fission_reorders_statements_and_exchanges_a_halo_of_produced_data():
    """One core cannot hold the arrays; on the mesh S0 would read b[i - 1] before S1 writes it, so the
    nest is distributed with S1 first, and S0 gets its neighbour's element of b by a halo exchange of
    the home S1 left (widened by a ghost zone for that)."""
    prog = mica.affine.from_c(REORDER, params={"n": 4000})
    compiled = mica.compile_affine(prog, mesh=(16, 16))
    assert [[n for n, _ in p.local_order] for p in compiled.schedule.phases] == [["S1"], ["S0"]]
    assert "rejected  one core" in compiled.explain()
    text = compiled.meshir
    assert "exchange halo_S0_x" in text and "host_load b" not in text
    rng = np.random.default_rng(0)
    ins = {"a": rng.standard_normal(4000), "x": rng.standard_normal(4000)}
    want = run_c(REORDER, "reo", dict(ins, b=np.zeros(4000)), {"n": 4000})
    res = compiled.run(ins)
    for name in ("a", "b"):
        np.testing.assert_array_equal(res.outputs[name], want[name])
    res3 = compiled.run(ins, mesh=(5, 3))
    np.testing.assert_array_equal(res3.outputs["a"], want["a"])


def test_an_input_two_operators_lay_out_differently_is_loaded_once_per_layout():
    prog = mica.affine.from_c(GEMV2, params={"n": 48})
    ops = split_operators(prog)
    first = derive_schedule(operator_program(prog, ops[0], 0), (4, 4), assignment=[("i", "x")])
    second = derive_schedule(operator_program(prog, ops[1], 1), (4, 4), assignment=[("i", "y")])
    assert first.home("A").dims[0][0] == "x" and second.home("A").dims[0][0] == "y"
    sched = mica.Schedule((4, 4), (), None, (), (), family="operators", phases=(first, second))
    compiled = mica.compile_affine(prog, mesh=(4, 4), schedule=sched)
    text = compiled.meshir
    assert "host_load A -> A on" in text and "host_load A -> p1_A on" in text
    rng = np.random.default_rng(2)
    ins = {"A": rng.standard_normal((48, 48)), "x": rng.standard_normal(48), "w": rng.standard_normal(48)}
    want = run_c(GEMV2, "gemv2", dict(ins, y=np.zeros(48), z=np.zeros(48)), {"n": 48})
    got = compiled.run(ins).outputs
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], want[name])
