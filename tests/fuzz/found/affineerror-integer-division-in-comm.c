/* MICA fuzz failure: crash (compile_affine: AffineError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=6x3 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/affineerror-integer-division-in-comm.c

   Traceback (most recent call last):
     File "/work/main/mica/fuzz.py", line 479, in check_case
       compiled = mica.compile_affine(prog, mesh=case.mesh, target=case.target)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/pipeline.py", line 137, in compile_affine
       sched, report = run_search(op, mesh, tgt)
                       ^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 255, in search
       c = evaluate(prog, mesh, target, d, fixed_homes)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 217, in evaluate
       mp = build_mesh_program(prog, sched, target)
            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/meshir/build.py", line 356, in build_mesh_program
       emit_statements(body_main, body)
     File "/work/main/mica/meshir/build.py", line 337, in emit_statements
       buffers, moves = plan_reads(s)
                        ^^^^^^^^^^^^^
     File "/work/main/mica/meshir/build.py", line 242, in plan_reads
       plan = classify(prog.array(acc.array), acc.ref, need, own, home.box,
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/comm/sets.py", line 194, in classify
       root = _root_of(remote, src_dim, what)
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/comm/sets.py", line 151, in _root_of
       coeffs, const, den = aff_coefficients(aff)
                            ^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/affine/isl_names.py", line 166, in aff_coefficients
       raise AffineError(f"affine expression {aff} has integer divisions")
   mica.errors.AffineError: affine expression { R[t, x] -> [(-1 + floor((1 + x)/2))] } has integer divisions
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [6, 3], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[4][3][6])
{
  for (int i = 0; i < 3; i++)
    for (int j = i; j < i + 2; j++)
      A[j][i][i] += A[i][i][j];
}
