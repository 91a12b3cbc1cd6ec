/* PolyBench's gemm in double: C = alpha * A * B + beta * C.
 *
 *   mica run examples/gemm.c --mesh 4x4                      (emulate, check against this C compiled natively)
 *   mica compile examples/gemm.c -D NI=512 -D NJ=512 -D NK=512 --explain
 *   mica compile examples/gemm.c --dtype f32 --emit csl --mesh 4x4
 *
 * The sizes are macros, so -D changes them; the hardware back ends have no f64, so they take --dtype f32.
 */
#ifndef NI
#define NI 64
#endif
#ifndef NJ
#define NJ 48
#endif
#ifndef NK
#define NK 40
#endif

void kernel_gemm(double alpha, double beta, double C[NI][NJ], double A[NI][NK], double B[NK][NJ])
{
  for (int i = 0; i < NI; i++) {
    for (int j = 0; j < NJ; j++)
      C[i][j] *= beta;
    for (int k = 0; k < NK; k++)
      for (int j = 0; j < NJ; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
}
