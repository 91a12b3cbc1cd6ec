/* C = A B in float, the shape the hardware back ends take as it is.
 *
 *   mica run examples/matmul_f32.c --target wormhole          (8x8 Tensix grid)
 *   mica compile examples/matmul_f32.c --emit metalium --out build/matmul_tt
 *   mica compile examples/matmul_f32.c --emit csl --mesh 8x8 --out build/matmul_csl
 */
#ifndef M
#define M 128
#endif
#ifndef N
#define N 128
#endif
#ifndef K
#define K 128
#endif

void matmul(float A[M][K], float B[K][N], float C[M][N])
{
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < K; k++)
        C[i][j] += A[i][k] * B[k][j];
    }
}
