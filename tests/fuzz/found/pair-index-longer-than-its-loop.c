/* MICA fuzz failure: mismatch (mismatch)
   program 9614 of `python -m mica.fuzz --seed 2123`
   mesh=2x3 target=wormhole params={'n': 10, 'm': 5} threads=1 dtype=f64 data=small-int
   replay: python -m mica.fuzz --replay tests/fuzz/found/pair-index-longer-than-its-loop.c
   The arg-min index array B has an element (B[6]) the loop never writes; combining the (value, index)
   partials across cores ran over B's whole box and compared A[6], which A does not have.

   B: 1 of 7 elements differ; first at (6,): got 0.0, expected 2.0
   plan: schedule 'summa/chain' on mesh 2x3:
*/
// MICA-FUZZ {"seed": 2123, "index": 9614, "mesh": [2, 3], "target": "wormhole", "params": {"n": 10, "m": 5}, "threads": 1, "dtype": "f64", "data": "small-int", "choices": [1, 8, 3, 2, 3, 25, 95, 0, 64, 2, 4, 0, 98, 0, 1, 62, 0, 57, 27, 7, 85, 0, 74, 26, 2, 2, 2, 86, 68, 5, 82, 28, 18, 43, 6, 1, 18, 86, 1, 7, 0, 1, 2, 88, 6, 58, 1, 1, 17, 82, 0, 1, 55, 70, 4, 1, 9, 2, 32, 2, 6, 48, 0, 38, 53, 3, 9, 65, 1, 1, 3, 53, 69, 1, 85, 73, 39, 82, 45, 21, 87, 58, 66, 0, 2]}
void kernel_fuzz(int n, int m, double A[6], double B[7], double C[10], double D[7][n + 1])
{
  int i, j, k, l;
  for (i = 0; i <= 6 - 1; i++) {
    A[i] = INFINITY;
    B[i] = -1.0;
    for (j = 1; j < n; ++j) {
      B[i] = A[i] < fabs(C[j] - (fabs(D[i][j + 1] - D[i][j])) - C[j]) ? B[i] : (double)(j + 1);
      A[i] = A[i] < fabs(C[j] - (fabs(D[i][j + 1] - D[i][j])) - C[j]) ? A[i] : fabs(C[j] - (fabs(D[i][j + 1] - D[i][j])) - C[j]);
    }
  }
}
