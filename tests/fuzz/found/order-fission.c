/* MICA fuzz failure: mismatch (mismatch)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=1x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/order-fission.c

   A: 6 of 7 elements differ; first at (1,): got 27.522973461388432, expected 23.335448041327098
   plan: schedule 'summa/chain' on mesh 1x1:
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [1, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[7], double C[7][4][7])
{
  for (int i = 0; i < 7; i++) {
    A[i] = 1.0;
    for (int j = 0; j < 7; j++)
      for (int k = 0; k < 4; k++)
        A[j] += C[j][k][i];
  }
}
