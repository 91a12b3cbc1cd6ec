/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=4x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/lost-writes-unindexed.c

   A: 1 of 6 elements differ; first at (0,): got 1.1369616873214543, expected 1.2294965609839985
   plan: schedule 'summa/chain' on mesh 4x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [4, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[6], double B[2])
{
  for (int i = 0; i < 6; i++)
    for (int j = i + 1; j < 2; j++)
      A[i] = B[j];
}
