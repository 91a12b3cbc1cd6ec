/* MICA fuzz failure: timeout (timeout after 180 s)
   program 9701 of `python -m mica.fuzz --seed 3002`
   mesh=2x1 target=wormhole params={'n': 7, 'm': 4} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay mica-fuzz-failure-3002-9701.c

   no answer within 180 s
*/
// MICA-FUZZ {"seed": 3002, "index": 9701, "mesh": [2, 1], "target": "wormhole", "params": {"n": 7, "m": 4}, "threads": 1, "dtype": "f64", "data": "uniform", "choices": [0, 5, 2, 3, 3, 1, 51, 80, 72, 9, 22, 25, 80, 2, 2, 6, 0, 82, 0, 55, 0, 4, 4, 88, 0, 52, 34, 30, 21, 17, 99, 1, 0, 91, 69, 4, 1, 54, 0, 45, 8, 1, 2, 1, 95, 33, 5, 78, 87, 0, 3, 28, 9, 0, 1, 1, 2, 0, 58, 0, 64, 92, 1, 23, 60, 0, 7, 2, 24, 42, 5, 94, 44, 26, 22, 14, 4, 0, 83, 57, 8, 1, 6, 2, 4, 1, 97, 1, 27, 90, 69, 27, 77, 55, 3, 25, 2, 15, 3, 19, 3, 59, 59, 8, 0, 2, 1, 54, 31, 5, 81, 96, 2, 49, 64, 4, 96, 2, 12, 4, 1, 76, 4, 2, 5, 3, 49, 49, 7, 0, 6, 88, 2, 0, 6, 41, 46, 2, 0, 82, 69, 18, 95, 73, 85, 0, 1, 12, 37, 0, 85, 0, 58, 4, 1, 10, 66, 1, 2, 2, 18, 29, 9, 3, 2, 37, 54, 9, 3, 11, 81, 9, 3, 16, 2, 50, 58, 4, 4, 1, 26]}
void kernel_fuzz(int n, int m, double beta, double A[7][7], double B[8], double C[8][7], double D[11], double E[6][3][6], double F[6][6])
{
  int i, j, k, l;
  for (i = 8 - 1; i >= 0; i--)
    for (j = i; j <= n - 1; j++)
      A[j][j] = beta * (B[j + 1] * A[1][j]) - C[i][j];
  for (i = 6 - 1; i >= 1; i--) {
    D[2 * i] = D[i + 1] * E[i][2][i] * D[i + 1];
    for (j = 0; j < i; j += 1) {
      F[i][i] = fmax(B[j] - 0.25 - 0.25, 0.25);
    }
  }
}
