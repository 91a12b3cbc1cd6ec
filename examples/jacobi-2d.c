/* PolyBench's jacobi-2d: TSTEPS sweeps of a 5-point stencil over an N x N grid, ping-ponging A and B.
 * The time loop stays temporal; the grid is blocked over the mesh and halos are exchanged every sweep.
 *
 *   mica run examples/jacobi-2d.c --mesh 8x8 --plot build/jacobi_plots
 *   mica compile examples/jacobi-2d.c -D N=1000 -D TSTEPS=100 --dtype f32 --emit csl --mesh 16x16
 */
#ifndef N
#define N 64
#endif
#ifndef TSTEPS
#define TSTEPS 10
#endif

void kernel_jacobi_2d(double A[N][N], double B[N][N])
{
  for (int t = 0; t < TSTEPS; t++) {
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][1 + j] + A[1 + i][j] + A[i - 1][j]);
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][1 + j] + B[1 + i][j] + B[i - 1][j]);
  }
}
