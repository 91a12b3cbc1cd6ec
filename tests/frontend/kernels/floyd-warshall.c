void kernel_floyd_warshall(int n, double paths[30 + 0][30 + 0])
{
  int i, j, k;
#pragma scop
  for (k = 0; k < n; k++) {
    for (i = 0; i < n; i++)
      for (j = 0; j < n; j++)
        paths[i][j] = paths[i][j] < paths[i][k] + paths[k][j] ?
                      paths[i][j] : paths[i][k] + paths[k][j];
  }
#pragma endscop
}
