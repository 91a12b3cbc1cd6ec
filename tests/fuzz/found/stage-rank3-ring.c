/* MICA fuzz failure: crash (run: SimError)
   found by `python -m mica.fuzz --count 20000 --seed 2026` (program 420; see tests/fuzz/FOUND.md)
   mesh=1x5 target=wormhole params={'n': 7, 'm': 10} threads=1 dtype=f32
   replay: python -m mica.fuzz --replay tests/fuzz/found/stage-rank3-ring.c

   mica.errors.SimError: cannot stage E_ring: rank 3 arrays need rank 5 boxes
   (host staging of a rank-3 ring buffer prepended two core axes to a rank-3 box; the runtime holds
   rank 4. Staged buffers are now copied as one flat run per core.)
*/
// MICA-FUZZ {"seed": 2026, "index": 420, "mesh": [1, 5], "target": "wormhole", "params": {"n": 7, "m": 10}, "threads": 1, "dtype": "f32", "choices": []}
void kernel_fuzz(int n, int m, float alpha, float A[12][11][10], float B[10], float C[10][10], float D[9][11][11], float E[11][9][11])
{
  int i, j, k, l;
  for (i = 0; i < m; ++i) {
    A[i + 2][10 - i][i] = B[i] + C[i][i];
    for (j = 0; j <= i - 1; j++)
      for (k = 0; k < i + 1; k++)
        D[j][10 - k][k + 1] += E[i][j][k + 1] + (alpha);
  }
}
