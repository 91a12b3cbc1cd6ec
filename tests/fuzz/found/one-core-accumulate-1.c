/* MICA fuzz failure: mismatch
   found by `python -m mica.fuzz --count 20000 --seed 2029` (program 3542; see tests/fuzz/FOUND.md)
   mesh=1x2 target=wormhole params={'n': 6, 'm': 9} threads=1 dtype=f32
   replay: python -m mica.fuzz --replay tests/fuzz/found/one-core-accumulate-1.c

   A: 1 of 5 elements differ; first at (4,): got 13.280915260314941, expected 11.890643119812012
   plan: schedule 'one-core' on mesh 1x2
*/
// MICA-FUZZ {"seed": 2029, "index": 3542, "mesh": [1, 2], "target": "wormhole", "params": {"n": 6, "m": 9}, "threads": 1, "dtype": "f32", "choices": []}
void kernel_fuzz(int n, int m, float beta, float A[5], float B[n + 1])
{
  int i, j, k, l;
  for (i = 0; i < 3; i += 1) {
    A[i + 2] += beta + A[i + 1] + (A[i] * B[i]);
    for (j = (i + 2 < 8 ? i + 2 : 8) - 1; j >= i; j--)
      B[j + 2] = 1.5f;
  }
}
