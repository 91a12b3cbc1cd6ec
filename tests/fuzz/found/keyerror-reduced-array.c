/* MICA fuzz failure: crash (compile_affine: KeyError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=4x2 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/keyerror-reduced-array.c

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
     File "/work/main/mica/meshir/build.py", line 318, in build_mesh_program
       part = b.tensors[b.reduced_array]
              ~~~~~~~~~^^^^^^^^^^^^^^^^^
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
