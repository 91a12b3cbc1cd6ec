"""Writes to elements another core owns (issue 17, item 3), which used to reject the plan and send the program to
fewer cores:

* **owner computes**: a statement without a loop for a mesh axis runs on the core that owns the element it writes
  along that axis — the diagonal write ``B[i][i] = ...`` after a row loop — instead of at coordinate 0 writing
  into another core's block;
* **routed writes**: a statement writing the mirror element of a 2D array (``C[j][i] = C[i][j]``, the symmetric
  half) writes a staging buffer that is transposed across the mesh to the owners once nothing else touches
  those elements.

Every plan is run in the emulator against the C compiled natively."""

import islpy as isl
import numpy as np
import pytest

import mica
import samples
from mica.affine.from_c import from_c
from mica.tiling.schedule import Home, Schedule, SpaceMap
from mica.tiling.spacetime import owner_rows, placement_map
from mica.testing import run_c

DIAGONAL = """
void diag(double A[20][23], double B[20][23], double d[20]) {
  for (int i = 0; i < 20; i++) {
    for (int j = 0; j < 23; j++)
      B[i][j] = A[i][j] * 2.0 + d[i];
    B[i][i] = d[i] - 1.0;
  }
}"""

ROW_SUM_ON_DIAGONAL = """
void rowsum(double A[18][18], double B[18][18], double s[18]) {
  for (int i = 0; i < 18; i++) {
    s[i] = 0.0;
    for (int j = 0; j < 18; j++) {
      s[i] += A[i][j];
      B[i][j] = A[i][j] * A[i][j];
    }
    B[i][i] = s[i];
  }
}"""


def _run(src: str, mesh):
    """The searched plan on ``mesh``, checked against the C compiled natively; the cores the model says
    compute are the cores the emulator measured computing. Returns the compiled program."""
    c = mica.compile_affine(from_c(src), mesh=mesh)
    rng = np.random.default_rng(1)
    ins = {a.name: rng.random(a.shape) for a in c.program.arrays if a.name in c.program.inputs}
    want = run_c(src, None, ins, None)
    res = c.run(ins)
    for name, ref in want.items():
        np.testing.assert_allclose(res.outputs[name], ref, rtol=1e-12, err_msg=f"{name} on {mesh}")
    assert res.stats.summary()["computing_cores"] == c.cost.cores
    return c


@pytest.mark.parametrize("mesh", [(4, 3), (5, 2), (8, 8), (3, 7), (6, 6), (1, 4)])
def test_a_diagonal_write_runs_on_the_diagonal_cores_and_the_rows_spread_over_both_axes(mesh):
    c = _run(DIAGONAL, mesh)
    # Both loops spread: every core of the plan's grid computes (20 x 23 elements, at least 2 per axis).
    axes = {sm.axis: sm for sm in c.schedule.space}
    assert set(axes) == {"x", "y"} or min(mesh) == 1, c.schedule.explain()
    assert c.cost.cores == c.cost.allocated > max(mesh) or min(mesh) == 1


@pytest.mark.parametrize("mesh", [(4, 3), (8, 8), (2, 5)])
def test_a_reduction_result_stored_on_the_diagonal_is_correct(mesh):
    _run(ROW_SUM_ON_DIAGONAL, mesh)


def test_owner_rows_places_the_statement_at_the_owner_only_when_it_writes_beyond_the_first_block():
    prog = from_c(DIAGONAL)
    s0, s1 = prog.statements
    sched = Schedule((4, 4), (SpaceMap("i", "x", 5), SpaceMap("j", "y", 6)), None,
                     (("S0", ()), ("S1", ())),
                     (Home("A", (("x", 5), ("y", 6))), Home("B", (("x", 5), ("y", 6))), Home("d", (("x", 5), (None, 20)))))
    assert owner_rows(s1, sched, "y") == (6, "i")
    # { S1[i] -> M[t, x, y] }: row i's diagonal element is on core (i / 5, i / 6).
    pm = placement_map(s1, sched)
    for i in (0, 5, 6, 13, 19):
        at = pm.intersect_domain(isl.Set(f"{{ S1[i] : i = {i} }}")).range()
        assert at.is_equal(isl.Set(f"{{ M[0, {i // 5}, {i // 6}] }}")), (i, at)
    # A home that lays nothing out along y: the statement stays at coordinate 0 there.
    flat = sched.copy(homes=(Home("A", (("x", 5), ("y", 6))), Home("B", (("x", 5), (None, 23))),
                             Home("d", (("x", 5), (None, 20)))))
    assert owner_rows(s1, flat, "y") is None


SYMMETRIC_RANK_K = samples.symmetric_rank_k(24, 20)

# The mirror element is read again in the same nest: delivering at the end would be too late.
READ_AGAIN = """
void again(double A[16][16], double C[16][16], double D[16][16]) {
  for (int i = 0; i < 16; i++)
    for (int j = i; j < 16; j++) {
      C[i][j] = A[i][j] + 1.0;
      C[j][i] = C[i][j] * 2.0;
      D[i][j] = C[j][i] + A[i][j];
    }
}"""


def _delivers(c) -> bool:
    return any(k.name.endswith("_deliver") for k in c.mesh_program.kernels)


@pytest.mark.parametrize("mesh", [(4, 4), (8, 8), (3, 3), (6, 6), (5, 2), (2, 7)])
def test_the_symmetric_half_is_routed_to_its_owners_and_both_loops_spread(mesh):
    c = _run(SYMMETRIC_RANK_K, mesh)
    if mesh[0] == mesh[1]:
        # i and j both spread over the square mesh: every core computes a block of C.
        assert c.cost.cores == mesh[0] * mesh[1], c.explain()
        assert _delivers(c)


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5)])
def test_a_routed_element_read_again_in_the_same_nest_is_not_routed(mesh):
    c = _run(READ_AGAIN, mesh)
    assert not _delivers(c)


# After a nest that lays C out over the mesh, statements with no loop run on the core that owns what they touch.
CORNER = """
void corner(double A[16][16], double C[16][16]) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++)
      C[i][j] = A[i][j] * 3.0 + 1.0;
  C[15][15] = 1.0;
  C[15][14] = C[15][15] + A[15][14];
}"""

# ... and when what they touch is on two cores, the program still runs correctly (on fewer cores).
TWO_CORNERS = CORNER.replace("C[15][14] = C[15][15]", "C[0][0] = C[15][15]")


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5), (8, 8)])
def test_statements_without_loops_run_on_the_core_that_owns_their_elements(mesh):
    c = _run(CORNER, mesh)
    assert c.cost.cores > 1, c.explain()


@pytest.mark.parametrize("mesh", [(4, 4), (2, 3)])
def test_statements_without_loops_touching_two_cores_stay_correct(mesh):
    _run(TWO_CORNERS, mesh)
