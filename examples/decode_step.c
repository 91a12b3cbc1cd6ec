/* One decode step of single-head attention with its projections, as a user writes it for a device
 * runtime: the token's hidden state x comes in, its key and value are appended to the KV cache at row pos,
 * and the step attends over rows 0..pos. pos changes every step: compile with it as a runtime parameter
 * (mica run examples/decode_step.c --runtime pos=0:64), and the weights and the cache can stay on the mesh
 * (compile_affine(..., resident=("Wq", "Wk", "Wv", "Wo", "K", "V"))). */
#include <math.h>

#define L 64   /* context */
#define D 32   /* model width */

void decode_step(int pos, float Wq[D][D], float Wk[D][D], float Wv[D][D], float Wo[D][D],
                 float K[L][D], float V[L][D], float x[D], float y[D]) {
  float q[D], s[L], a[D];
  float m = -INFINITY, z = 0.0f;
  for (int i = 0; i < D; i++) {
    q[i] = 0.0f;
    K[pos][i] = 0.0f;
    V[pos][i] = 0.0f;
    for (int j = 0; j < D; j++) {
      q[i] += Wq[i][j] * x[j];
      K[pos][i] += Wk[i][j] * x[j];
      V[pos][i] += Wv[i][j] * x[j];
    }
  }
  for (int l = 0; l <= pos; l++) {
    s[l] = 0.0f;
    for (int d = 0; d < D; d++) s[l] += q[d] * K[l][d];
    s[l] = s[l] / sqrtf((float)D);
  }
  for (int l = 0; l <= pos; l++) m = fmaxf(m, s[l]);
  for (int l = 0; l <= pos; l++) { s[l] = expf(s[l] - m); z += s[l]; }
  for (int d = 0; d < D; d++) {
    a[d] = 0.0f;
    for (int l = 0; l <= pos; l++) a[d] += s[l] * V[l][d];
  }
  for (int i = 0; i < D; i++) {
    y[i] = x[i];
    for (int j = 0; j < D; j++) y[i] += Wo[i][j] * a[j] / z;
  }
}
