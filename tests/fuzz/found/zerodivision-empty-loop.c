/* MICA fuzz failure: crash (compile_affine: ZeroDivisionError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/zerodivision-empty-loop.c

   Traceback (most recent call last):
     File "/work/main/mica/fuzz.py", line 479, in check_case
       compiled = mica.compile_affine(prog, mesh=case.mesh, target=case.target)
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/pipeline.py", line 137, in compile_affine
       sched, report = run_search(op, mesh, tgt)
                       ^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 242, in search
       decisions = space(prog, mesh)
                   ^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 130, in space
       per_axis = {ax: _core_options(dims[ax], loop_extent(main, lp)) for lp, ax in assignment}
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 130, in <dictcomp>
       per_axis = {ax: _core_options(dims[ax], loop_extent(main, lp)) for lp, ax in assignment}
                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/tiling/search.py", line 113, in _core_options
       opts.add(-(-extent // -(-extent // c)))
                               ~~~~~~~~^^~~
   ZeroDivisionError: integer division or modulo by zero
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[9])
{
  for (int k = 5; k < 2; k++)
    A[k] = 1.0;
}
