void kernel_trmm(int m, int n, double alpha, double A[18 + 0][18 + 0], double B[18 + 0][23 + 0])
{
  int i, j, k;
#pragma scop
  /* B = alpha * A^T * B, A unit lower triangular */
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      for (k = i + 1; k < m; k++)
        B[i][j] += A[k][i] * B[k][j];
      B[i][j] = alpha * B[i][j];
    }
#pragma endscop
}
