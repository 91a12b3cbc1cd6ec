/* MICA fuzz failure: mismatch
   found by `python -m mica.fuzz --count 20000 --seed 2029` (program 5523; see tests/fuzz/FOUND.md)
   mesh=3x4 target=wormhole params={'n': 3, 'm': 6} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/one-core-accumulate-2.c

   A: 3 of 63 elements differ; first at (0, 6): got 0.8218693910759421, expected 1.1153851114812539
   plan: schedule 'one-core' on mesh 3x4
*/
// MICA-FUZZ {"seed": 2029, "index": 5523, "mesh": [3, 4], "target": "wormhole", "params": {"n": 3, "m": 6}, "threads": 1, "dtype": "f64", "choices": []}
void kernel_fuzz(int n, int m, double beta, double A[7][9], double B[7][9][8])
{
  for (int i = 0; i < 6 - 1; i++) {
    for (int j = m - 1; j >= 0; j--) {
      A[5 - j][i] -= B[i][j][1] * beta + B[i + 1][j][j + 1];
      A[i][j + 2] = A[i + 2][j + 1];
    }
    B[i][2 * i][i] = fmax(B[i][i + 2][4 - i] + B[i + 1][i + 1][i] + B[i][i + 1][i], B[i][5 - i][2]);
  }
}
