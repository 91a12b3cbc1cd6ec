"""A whole decode layer written as one C function (RMSNorm, Q/K/V projections, KV-cache append, max-subtracted
softmax attention, output projection with residual, RMSNorm, SiLU-gated MLP with residual): compiled from the C
as it stands, run in the emulator and compared with the same C compiled natively.

On an 8x8 Wormhole (1.5 MB of L1 per core) the layer's operators are mapped one after another and some spread
(more than one core computes). On WSE-2 (48 KB per core) the layer fits only spread; consecutive gemvs want
their vectors on different mesh axes, and a vector an earlier operator produced is turned to the other axis
on the mesh (mica.lower.relayout) when the search finds that cheaper or the only way."""

import numpy as np

import mica
from mica.testing import run_c

LAYER = """
void layer(float x[64], float g1[64], float Wq[64][64], float Wk[64][64], float Wv[64][64],
           float Kc[32][64], float Vc[32][64], float Wo[64][64], float g2[64],
           float W1[128][64], float W3[128][64], float W2[64][128], float out[64]) {
  float ss1, r1, ss2, r2, m, z;
  float h[64], q[64], k[64], v[64], s[32], a[64], y[64], h2[64], u[128];
  ss1 = 0.0f;
  for (int d = 0; d < 64; d++) ss1 += x[d] * x[d];
  r1 = 1.0f / sqrtf(ss1 / 64.0f + 1e-5f);
  for (int d = 0; d < 64; d++) h[d] = x[d] * r1 * g1[d];
  for (int i = 0; i < 64; i++) {
    q[i] = 0.0f; k[i] = 0.0f; v[i] = 0.0f;
    for (int d = 0; d < 64; d++) {
      q[i] += Wq[i][d] * h[d]; k[i] += Wk[i][d] * h[d]; v[i] += Wv[i][d] * h[d];
    }
  }
  for (int d = 0; d < 64; d++) { Kc[31][d] = k[d]; Vc[31][d] = v[d]; }
  for (int l = 0; l < 32; l++) {
    s[l] = 0.0f;
    for (int d = 0; d < 64; d++) s[l] += q[d] * Kc[l][d];
  }
  m = -INFINITY;
  for (int l = 0; l < 32; l++) m = fmaxf(m, s[l]);
  z = 0.0f;
  for (int l = 0; l < 32; l++) { s[l] = expf((s[l] - m) * 0.125f); z += s[l]; }
  for (int d = 0; d < 64; d++) {
    a[d] = 0.0f;
    for (int l = 0; l < 32; l++) a[d] += s[l] * Vc[l][d];
    a[d] = a[d] / z;
  }
  for (int i = 0; i < 64; i++) {
    y[i] = x[i];
    for (int d = 0; d < 64; d++) y[i] += Wo[i][d] * a[d];
  }
  ss2 = 0.0f;
  for (int d = 0; d < 64; d++) ss2 += y[d] * y[d];
  r2 = 1.0f / sqrtf(ss2 / 64.0f + 1e-5f);
  for (int d = 0; d < 64; d++) h2[d] = y[d] * r2 * g2[d];
  for (int f = 0; f < 128; f++) {
    float g = 0.0f, t = 0.0f;
    for (int d = 0; d < 64; d++) { g += W1[f][d] * h2[d]; t += W3[f][d] * h2[d]; }
    u[f] = g / (1.0f + expf(-g)) * t;
  }
  for (int i = 0; i < 64; i++) {
    out[i] = y[i];
    for (int f = 0; f < 128; f++) out[i] += W2[i][f] * u[f];
  }
}
"""


def _inputs(prog):
    rng = np.random.default_rng(0)
    return {a: rng.uniform(-0.5, 0.5, prog.array(a).shape).astype(np.float32) for a in prog.inputs}


def test_fused_decode_layer_matches_the_c_and_spreads_on_wormhole():
    prog = mica.affine.from_c(LAYER)
    compiled = mica.compile_affine(prog, mesh=(8, 8), target="wormhole")
    ins = _inputs(prog)
    want = run_c(LAYER, "layer", ins, {})
    res = compiled.run(ins)
    assert set(want) == {"Kc", "Vc", "out"}
    for name, value in want.items():
        np.testing.assert_allclose(res.outputs[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores > 1


def test_fused_decode_layer_spreads_on_wse2():
    # 48 KB per core: the layer (185 KB) fits only spread; consecutive operators want vectors on different
    # mesh axes, which are turned on the mesh (mica.lower.relayout.turn: a multicast over the square, then a
    # binary tree of shifts to the other axis's line) -- h is re-laid out once here.
    prog = mica.affine.from_c(LAYER)
    compiled = mica.compile_affine(prog, mesh=(8, 8), target="wse2")
    assert "turned to the other mesh axis" in compiled.explain()
    assert "_turn_seed" in compiled.meshir and "_turn_land" in compiled.meshir
    ins = _inputs(prog)
    want = run_c(LAYER, "layer", ins, {})
    res = compiled.run(ins)
    for name, value in want.items():
        np.testing.assert_allclose(res.outputs[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    assert res.stats.summary()["computing_cores"] == compiled.cost.cores
    assert compiled.cost.cores >= 16
