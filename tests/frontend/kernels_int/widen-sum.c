/* A histogram-like reduction: int8 counts widened to int32 sums over the rows, weighted by an int8 factor. */
void kernel_widen_sum(int n, int m, signed char x[n][m], char w[n], int sum[m])
{
  for (int j = 0; j < m; j++) {
    sum[j] = 0;
    for (int i = 0; i < n; i++)
      sum[j] += x[i][j] * w[i];
  }
}
