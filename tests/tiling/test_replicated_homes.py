"""Arrays every core of a 2D plan reads whole (a scalar computed in the program, a small table) get a copy on
every core (a home with no pin), filled by a gather-and-broadcast layout change after the operator that
writes them; a plan that would write only some of the copies is refused. Checked against the natively
compiled C on several meshes, non-divisible ones included."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.errors import MicaError, ScheduleError
from mica.pipeline import LOWERING
from mica.targets import get_target
from mica.tiling.mapping import derive_schedule
from mica.tiling.schedule import Home
from mica.testing import run_c

SRC = """
void k(double alpha, double A[40][36], double B[40][36], double w[3]) {
  double c1;
  c1 = alpha * 2.0;
  w[0] = c1; w[1] = c1 + 1.0; w[2] = alpha;
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 36; j++)
      B[i][j] = c1 * A[i][j] + w[1] * w[2];
}
"""


@pytest.mark.parametrize("mesh", [(4, 4), (8, 8), (3, 5), (7, 2), (6, 6), (1, 1)])
def test_scalar_read_by_every_core_matches_native_c(mesh):
    ins = {"alpha": 0.7, "A": np.random.default_rng(0).random((40, 36))}
    want = run_c(SRC, "k", ins, {})
    compiled = mica.compile_affine(from_c(SRC, "k"), mesh=mesh)
    res = compiled.run(ins, threads=2)
    for arr, value in want.items():
        assert np.array_equal(res.outputs[arr], value), (arr, mesh)
    if mesh[0] > 1 and mesh[1] > 1:
        # The elementwise nest spreads over both axes, reading its own copy of c1 and w.
        last = compiled.schedule.phases[-1]
        assert len(last.space) == 2
        assert any(h.array == "c1" and not h.pin and not any(a for a, _ in h.dims) for h in last.homes)


def test_a_one_core_plan_does_not_write_a_replicated_home():
    from mica.lower.build import build_mesh_program
    from mica.targets import get_target
    from mica.tiling.mapping import derive_schedule
    from mica.tiling.schedule import Home

    prog = from_c("void k(double alpha, double c[1]) { c[0] = alpha; }", "k")
    sched = derive_schedule(prog, (4, 4), assignment=[], family="one-core")
    sched = sched.copy(homes=(Home("c", ((None, 1),), ()),))      # a copy on every core
    with pytest.raises(MicaError, match="stale"):
        build_mesh_program(prog, sched, get_target("wse2"))


REDUCED = """
void k(float s[64], float m[1]) {
  for (int l = 0; l < 64; l++)
    m[0] = fmaxf(m[0], s[l]);
}
"""


@pytest.mark.parametrize("pin", [(("y", 0),), ()])
def test_a_reduction_never_writes_only_the_root_copy_of_a_replicated_home(pin):
    """A reduction spread over cores leaves its result on the core its chain ends at; the other cores hold
    partials. A home another operator keeps as a copy on every core (of a line, or of the mesh) would keep
    stale values there, so the build refuses it (the check counts the combined result's cores, not the
    partials'; it used to count the partials and build the plan)."""
    prog = from_c(REDUCED, "k")
    sched = derive_schedule(prog, (4, 4), assignment=[("l", "x")],
                            fixed_homes={"m": Home("m", ((None, 1),), pin)})
    with pytest.raises(ScheduleError, match="not every core writes its copy"):
        LOWERING.operator(prog, sched, get_target("wse2"), resident=frozenset({"m"}))


READ_WHOLE = """
void k(float s[64], float w[64][32], float y[64][32], float m[1]) {
  m[0] = -1e30f;
  for (int l = 0; l < 64; l++)
    m[0] = fmaxf(m[0], s[l]);
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < 32; j++)
      y[l][j] = w[l][j] * (s[l] - m[0]);
}
"""


@pytest.mark.parametrize("mesh", [(4, 4), (8, 1), (1, 8), (5, 3)])
def test_a_result_read_whole_by_every_core_matches_native_c(mesh):
    rng = np.random.default_rng(0)
    ins = {"s": rng.random(64).astype(np.float32), "w": rng.random((64, 32)).astype(np.float32)}
    want = run_c(READ_WHOLE, "k", ins, {})
    compiled = mica.compile_affine(from_c(READ_WHOLE, "k"), mesh=mesh)
    res = compiled.run(ins, threads=2)
    for arr, value in want.items():
        assert np.array_equal(res.outputs[arr], value), (arr, mesh)
    assert compiled.cost.cores > 1
