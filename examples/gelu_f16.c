/* A matmul followed by GELU (tanh form) in _Float16: 16-bit arrays, f32 arithmetic, each store rounded to
 * f16 (MICA's f16 semantics, and GCC's for _Float16 on x86-64).
 *
 *   mica run examples/gelu_f16.c --mesh 3x3
 *
 * (--emit csl refuses it by name: tanh is not mapped to CSL's math library yet; --emit metalium computes
 * tanhf in software on the data-movement RISC-V.)
 */
#include <math.h>
#ifndef M
#define M 30
#endif
#ifndef N
#define N 20
#endif
#ifndef K
#define K 16
#endif

void matmul_gelu(_Float16 A[M][K], _Float16 B[K][N], _Float16 C[M][N], _Float16 Y[M][N])
{
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < K; k++)
        C[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
      Y[i][j] = 0.5f * C[i][j] * (1.0f + tanhf(0.7978845608f * (C[i][j] + 0.044715f * C[i][j] * C[i][j] * C[i][j])));
}
