/* One decoder layer of an LLM for one token, written as one C function: RMSNorm, the Q/K/V projections,
 * the KV-cache append, max-subtracted softmax attention over the cache, the output projection with its
 * residual, RMSNorm, and the SiLU-gated MLP with its residual. D is the model width, L the cache length
 * (the new token is row L - 1), F the MLP width.
 *
 *   mica run examples/decode_layer.c --mesh 8x8                   (WSE-2: 48 KB per core, so it must spread)
 *   mica run examples/decode_layer.c --target wormhole
 *   mica compile examples/decode_layer.c -D D=4096 -D L=4096 -D F=14336
 */
#include <math.h>
#ifndef D
#define D 64
#endif
#ifndef L
#define L 32
#endif
#ifndef F
#define F 128
#endif
#define SCALE 0.125f
void layer(float x[D], float g1[D], float Wq[D][D], float Wk[D][D], float Wv[D][D],
           float Kc[L][D], float Vc[L][D], float Wo[D][D], float g2[D],
           float W1[F][D], float W3[F][D], float W2[D][F], float out[D]) {
  float ss1, r1, ss2, r2, m, z;
  float h[D], q[D], k[D], v[D], s[L], a[D], y[D], h2[D], u[F];
  ss1 = 0.0f;
  for (int d = 0; d < D; d++) ss1 += x[d] * x[d];
  r1 = 1.0f / sqrtf(ss1 / (float)D + 1e-5f);
  for (int d = 0; d < D; d++) h[d] = x[d] * r1 * g1[d];
  for (int i = 0; i < D; i++) {
    q[i] = 0.0f; k[i] = 0.0f; v[i] = 0.0f;
    for (int d = 0; d < D; d++) {
      q[i] += Wq[i][d] * h[d]; k[i] += Wk[i][d] * h[d]; v[i] += Wv[i][d] * h[d];
    }
  }
  for (int d = 0; d < D; d++) { Kc[L - 1][d] = k[d]; Vc[L - 1][d] = v[d]; }
  for (int l = 0; l < L; l++) {
    s[l] = 0.0f;
    for (int d = 0; d < D; d++) s[l] += q[d] * Kc[l][d];
  }
  m = -INFINITY;
  for (int l = 0; l < L; l++) m = fmaxf(m, s[l]);
  z = 0.0f;
  for (int l = 0; l < L; l++) { s[l] = expf((s[l] - m) * SCALE); z += s[l]; }
  for (int d = 0; d < D; d++) {
    a[d] = 0.0f;
    for (int l = 0; l < L; l++) a[d] += s[l] * Vc[l][d];
    a[d] = a[d] / z;
  }
  for (int i = 0; i < D; i++) {
    y[i] = x[i];
    for (int d = 0; d < D; d++) y[i] += Wo[i][d] * a[d];
  }
  ss2 = 0.0f;
  for (int d = 0; d < D; d++) ss2 += y[d] * y[d];
  r2 = 1.0f / sqrtf(ss2 / (float)D + 1e-5f);
  for (int d = 0; d < D; d++) h2[d] = y[d] * r2 * g2[d];
  for (int f = 0; f < F; f++) {
    float g = 0.0f, t = 0.0f;
    for (int d = 0; d < D; d++) { g += W1[f][d] * h2[d]; t += W3[f][d] * h2[d]; }
    u[f] = g / (1.0f + expf(-g)) * t;
  }
  for (int i = 0; i < D; i++) {
    out[i] = y[i];
    for (int f = 0; f < F; f++) out[i] += W2[i][f] * u[f];
  }
}
