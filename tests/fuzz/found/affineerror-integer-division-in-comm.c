/* MICA fuzz failure: crash (compile_affine: AffineError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=6x3 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/affineerror-integer-division-in-comm.c

   Raised in aff_coefficients (mica/affine/isl_names.py), called as
     check_case > compile_affine > search > evaluate > build_mesh_program > emit_statements > plan_reads > classify > _root_of > aff_coefficients:
   mica.errors.AffineError: affine expression { R[t, x] -> [(-1 + floor((1 + x)/2))] } has integer divisions
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [6, 3], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[4][3][6])
{
  for (int i = 0; i < 3; i++)
    for (int j = i; j < i + 2; j++)
      A[j][i][i] += A[i][i][j];
}
