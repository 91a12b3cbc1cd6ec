/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=4x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/lost-writes-offset.c

   A: 6 of 8 elements differ; first at (1,): got 0.7697867137638703, expected 1.3158535541215322
   plan: schedule 'summa/chain' on mesh 4x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [4, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[8], double B[8])
{
  for (int i = 1; i < 8; i++)
    A[i - 1] = B[i];
}
