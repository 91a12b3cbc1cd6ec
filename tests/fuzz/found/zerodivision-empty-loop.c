/* MICA fuzz failure: crash (compile_affine: ZeroDivisionError)
   minimised by hand from failures of `python -m mica.fuzz` (see tests/fuzz/FOUND.md)
   mesh=2x1 target=wormhole params={} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay tests/fuzz/found/zerodivision-empty-loop.c

   Raised in _core_options (mica/tiling/search.py), called as
     check_case > compile_affine > search > space > <dictcomp> > _core_options:
   ZeroDivisionError: integer division or modulo by zero
*/
// MICA-FUZZ {"seed": 0, "index": 0, "mesh": [2, 1], "target": "wormhole", "params": {}, "threads": 1, "dtype": "f64", "choices": []}
void f(double A[9])
{
  for (int k = 5; k < 2; k++)
    A[k] = 1.0;
}
