"""The online softmax's (running max, rescaled sum) pair (issue 17 item 2)::

    z = z * expf(m - fmaxf(m, e)) + expf(e - fmaxf(m, e));
    m = fmaxf(m, e);

is one reduction (mica.affine.deps: a "softmax" half partnering the max), so the loop it runs over spreads
across cores and the partials (m1, z1), (m2, z2) combine through the chain and tree machinery as
M = max(m1, m2), z = z1 exp(m1 - M) + z2 exp(m2 - M) (mica.lower.reduce.SOFTMAX_SUM). Every program is
compared with the same C compiled natively on meshes that divide its loops and meshes that do not."""

import numpy as np
import pytest

import mica
from mica.affine.deps import reductions
from mica.testing import run_c

from native.test_minmax_programs import ATTENTION

ROWS = """
void osm(float s[R][L], float m[R], float z[R]) {
  for (int r = 0; r < R; r++) {
    m[r] = -INFINITY;
    z[r] = 0.0f;
    for (int l = 0; l < L; l++) {
      z[r] = z[r] * expf(m[r] - fmaxf(m[r], s[r][l])) + expf(s[r][l] - fmaxf(m[r], s[r][l]));
      m[r] = fmaxf(m[r], s[r][l]);
    }
  }
}
"""

#: Decode attention (test_minmax_programs.ATTENTION) with the softmax's max and sum in one pass
#: (flash-decoding's first half), then the probabilities and the output: one reduction across cores fewer
#: than the max, then the sum.
MAX_THEN_SUM = ("""    m[h] = -INFINITY;
    for (int l = 0; l < L; l++)
      m[h] = fmaxf(m[h], s[h][l]);
""", """  for (int h = 0; h < H; h++) {
    z[h] = 0.0f;
    for (int l = 0; l < L; l++)
      z[h] += s[h][l];
  }
""")
ONLINE_PAIR = """    m[h] = -INFINITY;
    z[h] = 0.0f;
    for (int l = 0; l < L; l++) {
      z[h] = expf(s[h][l] - fmaxf(s[h][l], m[h])) + z[h] * expf(m[h] - fmaxf(s[h][l], m[h]));
      m[h] = fmaxf(s[h][l], m[h]);
    }
"""
ONLINE_ATTENTION = ATTENTION.replace(MAX_THEN_SUM[0], ONLINE_PAIR).replace(MAX_THEN_SUM[1], "")

MESHES = [(1, 1), (4, 4), (8, 8), (5, 3), (16, 2), (7, 1)]


def _rows(z_update: str, m_update: str, R: int = 6, L: int = 45) -> str:
    return (ROWS.replace("z[r] = z[r] * expf(m[r] - fmaxf(m[r], s[r][l])) + expf(s[r][l] - fmaxf(m[r], s[r][l]))",
                         z_update).replace("m[r] = fmaxf(m[r], s[r][l])", m_update)
            .replace("[R]", f"[{R}]").replace("[L]", f"[{L}]").replace("< R", f"< {R}").replace("< L", f"< {L}"))


FMAX = "fmaxf(m[r], s[r][l])"
TERNARY = "(s[r][l] > m[r] ? s[r][l] : m[r])"
SPELLINGS = {
    "fmax": (f"z[r] = z[r] * expf(m[r] - {FMAX}) + expf(s[r][l] - {FMAX})", f"m[r] = {FMAX}"),
    "fmax swapped": ("z[r] = expf(s[r][l] - fmaxf(s[r][l], m[r])) + expf(m[r] - fmaxf(s[r][l], m[r])) * z[r]",
                     "m[r] = fmaxf(s[r][l], m[r])"),
    "ternary": (f"z[r] = z[r] * expf(m[r] - {TERNARY}) + expf(s[r][l] - {TERNARY})", f"m[r] = {TERNARY}"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_is_the_pair(spelling):
    prog = mica.affine.from_c(_rows(*SPELLINGS[spelling]))
    reds = reductions(prog)
    ops = sorted(r.op for r in reds.values())
    assert ops == ["max", "softmax"], reds
    half = next(r for r in reds.values() if r.op == "softmax")
    assert half.array == "z" and reds[half.partner].array == "m" and reds[half.partner].partner == half.stmt


@pytest.mark.parametrize("z_update, m_update", [
    # the new term not rescaled by the new max
    (f"z[r] = z[r] * expf(m[r] - {FMAX}) + expf(s[r][l] - m[r])", f"m[r] = {FMAX}"),
    # a different value in the sum than in the max
    (f"z[r] = z[r] * expf(m[r] - {FMAX}) + expf(2.0f * s[r][l] - {FMAX})", f"m[r] = {FMAX}"),
    # the old sum not rescaled
    (f"z[r] = z[r] + expf(s[r][l] - {FMAX})", f"m[r] = {FMAX}"),
    # a min instead of the max
    ("z[r] = z[r] * expf(m[r] - fminf(m[r], s[r][l])) + expf(s[r][l] - fminf(m[r], s[r][l]))",
     "m[r] = fminf(m[r], s[r][l])"),
])
def test_look_alikes_are_not_the_pair_and_still_compute_the_c(z_update, m_update):
    src = _rows(z_update, m_update, L=20)
    prog = mica.affine.from_c(src)
    assert "softmax" not in {r.op for r in reductions(prog).values()}
    ins = {"s": np.random.default_rng(1).standard_normal((6, 20)).astype(np.float32)}
    want = run_c(src, "osm", ins)
    got = mica.compile_affine(prog, mesh=(4, 4)).run(ins).outputs
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_sum_read_after_the_max_is_updated_is_not_the_pair():
    # m updated first: z then reads the new max (exp(m - max(m, e)) is 1), another recurrence
    src = _rows(f"m[r] = {FMAX}", f"z[r] = z[r] * expf(m[r] - {FMAX}) + expf(s[r][l] - {FMAX})", L=20)
    prog = mica.affine.from_c(src)
    assert "softmax" not in {r.op for r in reductions(prog).values()}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("mesh", MESHES)
def test_rows_spread_and_match_the_c(spelling, mesh):
    src = _rows(*SPELLINGS[spelling])
    prog = mica.affine.from_c(src)
    rng = np.random.default_rng(7)
    ins = {"s": (rng.standard_normal((6, 45)) * 6).astype(np.float32)}
    ins["s"][2, :] = ins["s"][2, 0]                   # a row of equal values: every partial's max ties
    want = run_c(src, "osm", ins)
    compiled = mica.compile_affine(prog, mesh=mesh)
    got = compiled.run(ins).outputs
    np.testing.assert_array_equal(got["m"], want["m"])
    np.testing.assert_allclose(got["z"], want["z"], rtol=2e-6)
    if mesh[0] * mesh[1] >= 16:
        assert compiled.cost.cores > 6, compiled.explain()        # more cores than rows: l spread
        assert "online softmax's (running max, rescaled sum) pair" in compiled.explain()


def test_one_scalar_pair_over_everything_spreads():
    src = """
void lse(float s[40][33], float out[1]) {
  float m = -INFINITY, z = 0.0f;
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 33; j++) {
      z = z * expf(m - fmaxf(m, s[i][j])) + expf(s[i][j] - fmaxf(m, s[i][j]));
      m = fmaxf(m, s[i][j]);
    }
  out[0] = m + logf(z);
}
"""
    prog = mica.affine.from_c(src)
    assert "softmax" in {r.op for r in reductions(prog).values()}
    ins = {"s": (np.random.default_rng(3).standard_normal((40, 33)) * 3).astype(np.float32)}
    want = run_c(src, "lse", ins)
    for mesh in [(8, 8), (5, 3), (3, 7)]:
        compiled = mica.compile_affine(prog, mesh=mesh)
        np.testing.assert_allclose(compiled.run(ins).outputs["out"], want["out"], rtol=2e-6)
        assert compiled.cost.cores > 1, compiled.explain()


# CI: three meshes (one square, two that the sizes do not divide); the other three with -m slow
@pytest.mark.parametrize("mesh", [(8, 8), (5, 3), (6, 5)] + [pytest.param(m, marks=pytest.mark.slow)
                                                             for m in ((4, 4), (3, 2), (16, 4))])
def test_online_attention_matches_the_c(mesh):
    params = {"H": 2, "L": 40, "D": 8}
    prog = mica.affine.from_c(ONLINE_ATTENTION, "attention", params=params)
    assert "softmax" in {r.op for r in reductions(prog).values()}
    rng = np.random.default_rng(5)
    ins = {a: rng.uniform(-1.5, 1.5, prog.array(a).shape).astype(np.float32) for a in ("q", "K", "V")}
    want = run_c(ONLINE_ATTENTION, "attention", ins, params)
    compiled = mica.compile_affine(prog, mesh=mesh)
    got = compiled.run(ins).outputs
    for name in ("o", "m", "z", "s"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    if mesh == (8, 8):
        assert compiled.cost.cores >= 16
