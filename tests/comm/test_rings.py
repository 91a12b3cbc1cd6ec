"""Ring shifts of a skewed step (Cannon, MeshGEMM's interleaved rings) carry a panel from one core to its ring
neighbour: what a core holds after a shift must be what that neighbour held the step before
(:func:`mica.comm.sets.classify_ring`). In a batched contraction ``s[h][l] += q[h][d] * K[l][h][d]`` with ``h``
and ``l`` spatial, ``K``'s other dimensions are laid out along both mesh axes, so no ring can carry its ``d``
panels: a shift along ``x`` would hand a core the neighbour's block of ``l``. The ring builder once accepted that
(the shift's source was empty, which it read as "nothing moves"), and the search chose the plan on 4x4 for
decode attention's scores: wrong results. Now the plan is refused and the search finds another one."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.errors import CommError
from mica.tiling.mapping import derive_schedule

QK = """
void qk(int H, int L, int D, float q[H][D], float K[L][H][D], float s[H][L]) {
  for (int h = 0; h < H; h++)
    for (int l = 0; l < L; l++) {
      s[h][l] = 0.0f;
      for (int d = 0; d < D; d++)
        s[h][l] += q[h][d] * K[l][h][d];
    }
}
"""


def _program(H: int, L: int, D: int):
    return from_c(QK, "qk", params={"H": H, "L": L, "D": D})


@pytest.mark.parametrize("skew", ["interleaved", "cannon"])
def test_a_panel_whose_other_dimensions_span_the_ring_is_refused(skew):
    prog = _program(4, 8, 4)
    sched = derive_schedule(prog, (4, 4), assignment=[("h", "y"), ("l", "x")], skew=skew)
    with pytest.raises(CommError, match="K.*not those a neighbour held"):
        mica.compile_affine(prog, mesh=(4, 4), schedule=sched)


@pytest.mark.parametrize("H, L, D, mesh", [(2, 12, 4, (4, 4)), (4, 8, 4, (4, 4)), (3, 12, 4, (4, 4)),
                                            (4, 16, 8, (8, 8)), (2, 12, 4, (4, 2))])
def test_the_searched_plan_of_a_batched_contraction_matches_numpy(H, L, D, mesh):
    compiled = mica.compile_affine(_program(H, L, D), mesh=mesh)
    rng = np.random.default_rng(H * 100 + L)
    q = rng.uniform(-2, 2, (H, D)).astype(np.float32)
    K = rng.uniform(-2, 2, (L, H, D)).astype(np.float32)
    got = compiled.run({"q": q, "K": K}, threads=2).outputs["s"]
    np.testing.assert_allclose(got, np.einsum("hd,lhd->hl", q.astype(np.float64), K.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


def test_a_matmul_still_rotates_both_operands():
    """Cannon's own case: A's panels along x, B's along y, each core's result right."""
    n = 8
    prog = mica.ops.matmul(n, n, n, "f32")
    sched = mica.plans.cannon(prog, (4, 4))
    compiled = mica.compile_affine(prog, mesh=(4, 4), schedule=sched)
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    out = compiled.run({"A": A, "B": B}, threads=2).outputs
    np.testing.assert_allclose(out["C"], A.astype(np.float64) @ B.astype(np.float64), rtol=1e-5, atol=1e-5)
