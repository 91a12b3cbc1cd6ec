/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/lost-writes-operators.c

   A: 2 of 4 elements differ; first at (2,): got 0.0, expected 1.1066357757671799
   plan: schedule 'operators' on mesh 2x1: 2 operators one after another
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[4], double B[4])
{
  for (int i = 0; i < 2; i++)
    A[i] = 0.5;
  for (int i = 0; i < 4; i++)
    A[i] = B[i];
}
