/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/lost-writes-strided.c

   A: 2 of 8 elements differ; first at (4,): got 1.3132702392002724, expected 1.3158535541215322
   plan: schedule 'summa/chain' on mesh 2x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[8], double B[4])
{
  for (int i = 0; i < 4; i++)
    A[2 * i] = B[i];
}
