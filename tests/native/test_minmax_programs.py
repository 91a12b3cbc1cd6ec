"""Max/min reductions, arg-min (value, index) pairs and iterator values end to end: every program compiled
for 8x8 (searched) and re-instantiated on smaller and non-divisible meshes matches the original C compiled
natively, and the 8x8 plans of attention and arg-min spread their computation over at least 16 cores
(cores whose emulated compute time is nonzero, not cores allocated). The full matrix, each mesh searched
on its own, 1x1 included, is marked slow."""

import re
import shutil

import numpy as np
import pytest

import mica
from mica.testing import assert_matches, run_c

ROW_MAX = """
void row_max(int N, int M, float A[N][M], float m[N]) {
  for (int i = 0; i < N; i++) {
    m[i] = -INFINITY;
    for (int j = 0; j < M; j++)
      m[i] = fmaxf(m[i], A[i][j]);
  }
}
"""

SOFTMAX = """
void softmax(int N, int M, float A[N][M], float m[N], float z[N], float P[N][M]) {
  for (int i = 0; i < N; i++) {
    m[i] = -INFINITY;
    for (int j = 0; j < M; j++)
      m[i] = A[i][j] > m[i] ? A[i][j] : m[i];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      P[i][j] = expf(A[i][j] - m[i]);
  for (int i = 0; i < N; i++) {
    z[i] = 0.0f;
    for (int j = 0; j < M; j++)
      z[i] += P[i][j];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      P[i][j] = P[i][j] / z[i];
}
"""

# Decode attention over a KV cache: one query per head, max-subtracted softmax.
ATTENTION = """
void attention(int H, int L, int D, float q[H][D], float K[L][H][D], float V[L][H][D], float s[H][L],
               float m[H], float z[H], float o[H][D]) {
  for (int h = 0; h < H; h++)
    for (int l = 0; l < L; l++) {
      s[h][l] = 0.0f;
      for (int d = 0; d < D; d++)
        s[h][l] += q[h][d] * K[l][h][d];
    }
  for (int h = 0; h < H; h++) {
    m[h] = -INFINITY;
    for (int l = 0; l < L; l++)
      m[h] = fmaxf(m[h], s[h][l]);
  }
  for (int h = 0; h < H; h++)
    for (int l = 0; l < L; l++)
      s[h][l] = expf(s[h][l] - m[h]);
  for (int h = 0; h < H; h++) {
    z[h] = 0.0f;
    for (int l = 0; l < L; l++)
      z[h] += s[h][l];
  }
  for (int h = 0; h < H; h++)
    for (int d = 0; d < D; d++) {
      o[h][d] = 0.0f;
      for (int l = 0; l < L; l++)
        o[h][d] += s[h][l] * V[l][h][d];
      o[h][d] = o[h][d] / z[h];
    }
}
"""

# Top-1 search: squared distances of a query to N vectors, then arg-min with the first index on ties.
ARGMIN = """
void argmin(int N, int D, float x[D], float V[N][D], float dist[N], float best[1], float idx[1]) {
  for (int n = 0; n < N; n++) {
    dist[n] = 0.0f;
    for (int k = 0; k < D; k++)
      dist[n] += (x[k] - V[n][k]) * (x[k] - V[n][k]);
  }
  best[0] = INFINITY;
  idx[0] = -1.0f;
  for (int n = 0; n < N; n++) {
    idx[0] = dist[n] < best[0] ? n : idx[0];
    best[0] = dist[n] < best[0] ? dist[n] : best[0];
  }
}
"""

#: Causal prefill attention: every query row attends to the keys up to its own position (triangular loops).
PREFILL = """
void prefill(int H, int T, int D, float Q[H][T][D], float K[H][T][D], float V[H][T][D], float S[H][T][T],
             float m[H][T], float z[H][T], float O[H][T][D]) {
  for (int h = 0; h < H; h++)
    for (int i = 0; i < T; i++)
      for (int j = 0; j <= i; j++) {
        S[h][i][j] = 0.0f;
        for (int d = 0; d < D; d++)
          S[h][i][j] += Q[h][i][d] * K[h][j][d];
      }
  for (int h = 0; h < H; h++)
    for (int i = 0; i < T; i++) {
      m[h][i] = -INFINITY;
      for (int j = 0; j <= i; j++)
        m[h][i] = fmaxf(m[h][i], S[h][i][j]);
    }
  for (int h = 0; h < H; h++)
    for (int i = 0; i < T; i++)
      for (int j = 0; j <= i; j++)
        S[h][i][j] = expf(S[h][i][j] - m[h][i]);
  for (int h = 0; h < H; h++)
    for (int i = 0; i < T; i++) {
      z[h][i] = 0.0f;
      for (int j = 0; j <= i; j++)
        z[h][i] += S[h][i][j];
    }
  for (int h = 0; h < H; h++)
    for (int i = 0; i < T; i++)
      for (int d = 0; d < D; d++) {
        O[h][i][d] = 0.0f;
        for (int j = 0; j <= i; j++)
          O[h][i][d] += S[h][i][j] * V[h][j][d];
        O[h][i][d] = O[h][i][d] / z[h][i];
      }
}
"""


def _inputs(name, params, seed=0):
    rng = np.random.default_rng(seed)
    if name == "argmin":
        N, D = params["N"], params["D"]      # small integers: many equal distances (ties)
        return {"x": rng.integers(0, 3, D).astype(np.float32), "V": rng.integers(0, 3, (N, D)).astype(np.float32)}
    if name == "prefill":
        H, T, D = params["H"], params["T"], params["D"]
        ins = {n: rng.uniform(-2, 2, (H, T, D)).astype(np.float32) for n in ("Q", "K", "V")}
        # S above the diagonal is never written: it is live-in (and comes back unchanged).
        return {**ins, "S": rng.uniform(-2, 2, (H, T, T)).astype(np.float32)}
    if name == "attention":
        H, L, D = params["H"], params["L"], params["D"]
        return {n: rng.uniform(-2, 2, sh).astype(np.float32)
                for n, sh in (("q", (H, D)), ("K", (L, H, D)), ("V", (L, H, D)))}
    return {"A": rng.uniform(-3, 3, (params["N"], params["M"])).astype(np.float32)}


CASES = {
    "row_max": (ROW_MAX, {"N": 5, "M": 37}, 0),
    "softmax": (SOFTMAX, {"N": 6, "M": 29}, 0),
    "attention_1": (ATTENTION, {"H": 1, "L": 40, "D": 8}, 16),
    "attention_3": (ATTENTION, {"H": 3, "L": 24, "D": 4}, 16),
    "argmin": (ARGMIN, {"N": 150, "D": 6}, 16),
    "prefill_2": (PREFILL, {"H": 2, "T": 20, "D": 6}, 16),
}
RETARGET = [(2, 3), (3, 2), (4, 4), (5, 3)]


def _check(name, prog_or_compiled, ins, want, mesh=None):
    res = prog_or_compiled.run(ins, mesh=mesh)
    loose = "attention" in name or "prefill" in name or name == "softmax"
    assert_matches(res.outputs, want, rtol=2e-5 if loose else 0, atol=1e-7)
    return int((res.stats.core_compute > 0).sum())


@pytest.mark.parametrize("name", sorted(CASES))
def test_searched_on_8x8_and_retargeted(name):
    src, params, min_cores = CASES[name]
    kind = name.split("_")[0] if name.startswith(("attention", "prefill")) else name
    ins = _inputs(kind, params)
    want = run_c(src, None, ins, params)
    p = mica.compile_affine(src, mesh=(8, 8), target="generic", params=params)
    computing = _check(name, p, ins, want)
    assert computing >= max(min_cores, 2), (name, computing, str(p.schedule))
    assert p.cost.cores == computing             # the model's count of computing cores agrees
    for mesh in RETARGET:
        _check(name, p, ins, want, mesh)


def test_argmin_ties_keep_the_first_index_across_cores():
    src, params, _ = CASES["argmin"]
    ins = {"x": np.zeros(6, np.float32), "V": np.ones((150, 6), np.float32)}
    ins["V"][[20, 77, 140]] = 0.0                        # three equal minima on three different cores
    want = run_c(src, None, ins, params)
    assert want["idx"][0] == 20
    p = mica.compile_affine(src, mesh=(8, 8), target="generic", params=params)
    assert "reduce_best_idx" in p.meshir and "k_S4_S5" in p.meshir   # the pair combined across cores
    _check("argmin", p, ins, want)
    ins["V"][20] = 1.0
    want = run_c(src, None, ins, params)
    assert want["idx"][0] == 77
    _check("argmin", p, ins, want, (5, 3))


def test_max_reduction_is_emitted_in_csl_and_metalium(tmp_path):
    src, params, _ = CASES["row_max"]
    p = mica.compile_affine(src, mesh=(4, 4), target="wse2", params=params)
    assert "fmax" in p.meshir and "k_accx_m" in p.meshir
    # CSL spells -inf as a bit cast of its pattern and fmaxf as the PE program's own helper (executed by
    # tests/emit_csl/test_softmax_attention.py)
    files = p.emit("csl", tmp_path / "csl")
    pe = next(f for f in files if f.name == "pe_program.csl").read_text()
    assert "@bitcast(f32, @as(u32, 4286578688))" in pe and "mica_fmax_f32(" in pe
    # Metalium: -INFINITY through GCC's builtin, fmaxf on the generic path; the functional model computes the
    # reference (skipped without g++, as tests/emit_metalium is)
    from mica.emit_metalium import render
    files = render(p)
    assert "-__builtin_inff()" in "".join(files.values()) and "mica_fmaxf(" in "".join(files.values())
    if shutil.which("g++"):
        from emit_metalium.test_functional import run_emitted
        rc, out = run_emitted(files, tmp_path)
        assert rc == 0 and re.search(r"^m: max \|device - reference\| = 0 ", out, re.M), out


@pytest.mark.slow
@pytest.mark.parametrize("mesh", [(1, 1), (2, 3), (3, 2), (4, 4), (5, 3), (8, 8)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_mesh_searched(name, mesh):
    src, params, _ = CASES[name]
    kind = name.split("_")[0] if name.startswith(("attention", "prefill")) else name
    ins = _inputs(kind, params, seed=1)
    want = run_c(src, None, ins, params)
    _check(name, mica.compile_affine(src, mesh=mesh, target="generic", params=params), ins, want)


ARGMAX_LOCAL = """
void greedy(int V, float logits[V], int next[1]) {
  float best = -INFINITY;
  next[0] = 0;
  for (int v = 0; v < V; v++) {
    next[0] = logits[v] > best ? v : next[0];
    best = logits[v] > best ? logits[v] : best;
  }
}
"""


@pytest.mark.parametrize("mesh", [(4, 4), (3, 2), (5, 3)])
def test_an_arg_max_with_a_local_running_max_spreads(mesh):
    """The running max in a scalar local, the index in a one-element array (how greedy sampling is
    written): the two still form a (value, index) pair, combined across cores, and the first index of the
    largest value wins, ties included."""
    V = 1000          # (at 97 one core is cheaper: a call and a vector op per core cost more than they save)
    prog = mica.compile_affine(ARGMAX_LOCAL, mesh=mesh, params={"V": V})
    assert prog.cost.cores > 1
    rng = np.random.default_rng(mesh[0])
    for logits in (rng.standard_normal(V).astype(np.float32), np.ones(V, np.float32),
                   np.where(np.arange(V) % 40 == 7, 3.0, 0.0).astype(np.float32)):
        want = run_c(ARGMAX_LOCAL, None, {"logits": logits}, {"V": V})
        got = prog.run({"logits": logits}).outputs
        assert got["next"][0] == want["next"][0] == int(np.argmax(logits))
