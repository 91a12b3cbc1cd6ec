/* MICA fuzz failure: crash (compile_affine: KeyError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=4x2 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/keyerror-reduced-array.c

   Raised in build_mesh_program (mica/meshir/build.py then, mica/lower/build.py now), called as
     check_case > compile_affine > search > evaluate > build_mesh_program:
   KeyError: 'A'
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [4, 2], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[9], double C[7][11][7])
{
  for (int i = 1; i < 7; i++) {
    A[i] = A[i + 2];
    for (int j = 0; j < 7; j++)
      for (int k = 1; k <= 4; k++)
        A[j] += C[j][k + j][i];
  }
}
