void kernel_gesummv(int n, double alpha, double beta, double A[25 + 0][25 + 0], double B[25 + 0][25 + 0],
                    double x[25 + 0], double y[25 + 0])
{
  int i, j;
  double t, u;
#pragma scop
  for (i = 0; i < n; i++) {
    t = 0.0;
    u = 0.0;
    for (j = 0; j < n; j++) {
      t = A[i][j] * x[j] + t;
      u = B[i][j] * x[j] + u;
    }
    y[i] = alpha * t + beta * u;
  }
#pragma endscop
}
