/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={'n': 2, 'm': 6} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/gcc-o3-outer-loop-vectorizer.c

   A: 16 of 56 elements differ; first at (2, 3): got -0.3936112035386765, expected 0.3761755102251938
   plan: schedule 'one-core' on mesh 2x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {"n": 2, "m": 6}, "threads": 1, "dtype": "f64", "choices": []}
void f(int n, int m, double A[8][7])
{
  for (int i = 0; i < 6; i++)
    for (int j = 1; j < m; ++j)
      A[i + 1][j + 1] -= A[i][j];
}
