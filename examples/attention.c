/* Decode attention over a KV cache: H heads, L cached tokens, head dimension D, with the usual
 * max-subtracted softmax. The max and the sums are reductions MICA spreads over cores.
 *
 *   mica run examples/attention.c --mesh 8x8 --trace build/attention.json
 *   mica compile examples/attention.c -D H=32 -D L=4096 -D D=128
 */
#include <math.h>
#ifndef H
#define H 4
#endif
#ifndef L
#define L 256
#endif
#ifndef D
#define D 32
#endif

void attention(float q[H][D], float K[L][H][D], float V[L][H][D], float s[H][L], float m[H], float z[H],
               float o[H][D])
{
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
