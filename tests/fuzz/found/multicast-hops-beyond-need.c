/* MICA fuzz failure: crash (compile_affine: MeshIRError)
   found by `python -m mica.fuzz --count 20000 --seed 2028` (program 6976; see tests/fuzz/FOUND.md)
   mesh=6x3 target=wormhole params={'n': 8, 'm': 10} threads=2 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/multicast-hops-beyond-need.c

   mica.errors.MeshIRError: exchange bring_S0, B->B_recv at once: a message travels 3 hops, more than
   the 2 declared
*/
// MICA-FUZZ {"seed": 2028, "index": 6976, "mesh": [6, 3], "target": "wormhole", "params": {"n": 8, "m": 10}, "threads": 2, "dtype": "f64", "choices": []}
void kernel_fuzz(int n, int m, double A[12][10][n + 1], double B[12][10][10])
{
  int i, j, k, l;
  for (i = m - 1; i >= 1; i--)
    for (j = i; j < m; j++) {
      for (k = j; k < n; k++) {
        for (l = 0; l <= i - 1; l++)
          A[j + 2][k + 2][l] += B[i + 2][k + 1][2] + B[j][k + 2][l];
      }
    }
}
