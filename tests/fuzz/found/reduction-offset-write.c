/* MICA fuzz failure: mismatch (mismatch)
   program 1085 of `python -m mica.fuzz --seed 7`
   mesh=2x1 target=wormhole params={'n': 2, 'm': 2} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay mica-fuzz-failure-7-1085.c

   A: 2 of 6 elements differ; first at (2, 0, 0): got 1.3132702392002724, expected 2.313270239200272
   plan: schedule 'summa/chain' on mesh 2x1:
*/
// MICA-FUZZ {"seed": 7, "index": 1085, "mesh": [2, 1], "target": "wormhole", "params": {"n": 2, "m": 2}, "threads": 1, "dtype": "f64", "choices": [1, 0, 0, 2, 0, 2, 2, 0, 0, 63, 33, 0, 1, 76, 0, 0, 45, 15, 0, 1, 82, 0, 0, 0, 0, 61, 0, 0, 41, 8, 0, 10, 9, 0, 97, 0, 78, 40, 0, 1, 9, 0, 0, 0, 29]}
void kernel_fuzz(int n, int m, double A[3][1][2])
{
  int i, j, k, l;
  for (i = 0; i < n; ++i) {
    for (j = 0; j < n; ++j) {
      for (k = 0; k < n; ++k) {
        A[i + 1][0][k] += 0.5;
      }
    }
  }
}
