/* MICA fuzz failure: crash (compile_affine (folded): AffineError)
   program 210 of `python -m mica.fuzz --seed 5151`
   mesh=2x1 target=wormhole params={'n': 2, 'm': 4} threads=1 dtype=f64
   replay: python -m mica.fuzz --replay mica-fuzz-failure-5151-210.c

   Traceback (most recent call last):
     File "/work/main/mica/fuzz/oracle.py", line 147, in check_case
       folded = compile_affine(fold_program(prog, folds[0], b), mesh=case.mesh, target=case.target)
                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/pipeline.py", line 311, in run
       return fn(*args, **kwargs)
              ^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/pipeline.py", line 371, in compile_affine
       op = privatise(op)
            ^^^^^^^^^^^^^
     File "/work/main/mica/affine/privatise.py", line 293, in privatise
       return prog.replace(arrays=tuple(arrays), statements=stmts)
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
     File "/work/main/mica/affine/program.py", line 331, in replace
       return replace(self, **kw)
              ^^^^^^^^^^^^^^^^^^^
     File "/root/.pyenv/versions/3.11.7/lib/python3.11/dataclasses.py", line 1501, in replace
       return obj.__class__(**changes)
              ^^^^^^^^^^^^^^^^^^^^^^^^
     File "<string>", line 13, in __init__
     File "/work/main/mica/affine/program.py", line 277, in __post_init__
       raise AffineError(f"program {self.name}: folded array {n!r} has no reshape from {shape}")
   mica.errors.AffineError: program kernel_fuzz: folded array 's' has no reshape from (4,)
*/
// MICA-FUZZ {"seed": 5151, "index": 210, "mesh": [2, 1], "target": "wormhole", "params": {"n": 2, "m": 4}, "threads": 1, "dtype": "f64", "data": "uniform", "choices": [1, 0, 2, 3, 0, 0, 52, 10, 92, 2, 0, 0, 86, 1]}
void kernel_fuzz(int n, int m, double B[2][4], double A[2][4])
{
  int i, j, k, l;
  double s[4];
  for (i = n - 1; i >= 0; i--) {
    for (j = 0; j < m; j++) {
      s[j] = B[i][j];
    }
    for (j = 0; j < m; j++) {
      A[i][j] = s[j] * 0.5 + 0.5;
    }
  }
}
