void kernel_symm(int m, int n, double alpha, double beta, double C[18 + 0][22 + 0],
                 double A[18 + 0][18 + 0], double B[18 + 0][22 + 0])
{
  int i, j, k;
  double acc;
#pragma scop
  /* C = alpha * A * B + beta * C with A symmetric, stored in its lower triangle */
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      acc = 0;
      for (k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        acc += B[k][j] * A[i][k];
      }
      C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * acc;
    }
#pragma endscop
}
