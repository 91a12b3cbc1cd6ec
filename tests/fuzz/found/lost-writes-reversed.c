/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/lost-writes-reversed.c

   A: 4 of 8 elements differ; first at (0,): got 0.0, expected 0.675655620602559
   plan: schedule 'summa/chain' on mesh 2x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[8], double B[8])
{
  for (int i = 0; i < 8; i++)
    A[7 - i] = B[i];
}
