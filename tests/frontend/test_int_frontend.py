"""Integer arrays in the C front end and the sequential reference: dtypes of int/short/char/<stdint.h>
parameters and locals, refused integer constructs, the typing of expression trees (C's integer arithmetic)
and the integer kernels of tests/frontend/kernels_int checked against the natively compiled C.

(The kernels live in their own directory: tests/frontend/kernels holds exactly the 30 PolyBench-style
kernels its manifest test counts, and the behaviour records sample every file there.)"""

import json
from pathlib import Path

import numpy as np
import pytest

from frontend_util import make_inputs
from mica.affine.expr import Bin, Const, Conv, Read, Scalar, int_typed
from mica.affine.from_c import from_c
from mica.codeprint import expr_text
from mica.errors import AffineError, InputError, NotAffineError
from mica.testing import assert_matches, program_c, run_c, run_program

INT_DIR = Path(__file__).parent / "kernels_int"
INT_MANIFEST = json.loads((INT_DIR / "manifest.json").read_text())


def int_kernel(name: str) -> tuple[str, dict]:
    return (INT_DIR / f"{name}.c").read_text(), INT_MANIFEST[name]


# -- dtypes -----------------------------------------------------------------------------------------------

def test_integer_parameter_dtypes():
    src = """#include <stdint.h>
typedef char base;
void f(int n, int A[4], signed int B[4], int32_t C[4], short D[4], short int E[4], int16_t F[4], char G[4],
       signed char H[4], int8_t I[4], base J[4], unsigned char K[4], uint8_t L[4], double M[4], float N[4])
{
  for (int i = 0; i < 4; i++)
    M[i] = A[i] + B[i] + C[i] + D[i] + E[i] + F[i] + G[i] + H[i] + I[i] + J[i] + K[i] + L[i] + N[i];
}"""
    prog = from_c(src)
    got = {a.name: a.dtype for a in prog.arrays}
    assert got == {"A": "i32", "B": "i32", "C": "i32", "D": "i16", "E": "i16", "F": "i16", "G": "i8", "H": "i8",
                   "I": "i8", "J": "i8", "K": "u8", "L": "u8", "M": "f64", "N": "f32"}
    assert prog.array("C").elem_bytes == 4 and prog.array("F").elem_bytes == 2 and prog.array("L").elem_bytes == 1


def test_typedef_of_stdint_name_in_the_source_is_followed():
    prog = from_c("typedef short int16_t;\nvoid f(int16_t A[3], int16_t B[3])\n{\n"
                  "  for (int i = 0; i < 3; i++) B[i] = A[i] * 2;\n}\n")
    assert prog.array("A").dtype == "i16"


def test_integer_locals_are_temporaries_and_iterators_stay_iterators():
    src = """void f(int n, int x[8], int y[8])
{
  int i, k = 3;
  int acc[8];
  for (i = 0; i < 8; i++) {
    int t = x[i] / k;
    acc[i] = t % 4;
    y[i] = acc[i] + t;
  }
}"""
    prog = from_c(src)
    assert prog.array("t").shape == () and prog.array("t").dtype == "i32"
    assert prog.array("acc").shape == (8,) and prog.array("acc").dtype == "i32"
    assert not {"t", "acc"} & set(prog.inputs + prog.outputs)
    s0 = prog.statements[0]                    # t = x[i] / 3: k is a constant, folded
    assert s0.expr == Bin("/", Read(s0.reads[0].ref), Const(3))
    ins = {"x": np.arange(-40, 40, 10, dtype=np.int32)}
    assert_matches(run_program(prog, ins), run_c(src, "f", ins, {"n": 8}), rtol=0)


def test_expression_types():
    dt = {"a": "i32", "c": "i8", "f": "f32"}.get

    def leaf_dtype(e):
        return dt(e.ref) if isinstance(e, Read) else "f64"
    a, c, f = Read("a"), Read("c"), Read("f")
    assert int_typed(Bin("/", a, c), leaf_dtype) is True
    assert int_typed(Bin("/", a, f), leaf_dtype) is False
    assert int_typed(Bin("+", Const(1), Const(2)), leaf_dtype) is None          # neutral literals
    assert int_typed(Bin("+", a, Const(2.0)), leaf_dtype) is False              # a float literal
    assert int_typed(Conv("f64", a), leaf_dtype) is False
    assert int_typed(Conv("i32", Scalar("n")), leaf_dtype) is True
    prog = from_c("void f(int a[3], float y[3])\n{\n  for (int i = 0; i < 3; i++)\n"
                  "    y[i] = (double)a[i] / 2 + a[i] / 2 + (int)(y[i] * 2.5f) % 3;\n}\n")
    s = prog.statements[0]
    text = expr_text(s.expr, lambda ref: s.access(ref).array)
    assert text == "(((f64(a) / 2.0) + (a / 2)) + (i32((y * 2.5)) % 3))"
    c = program_c(prog)
    assert "((double)(a0[" in c and "] / 2)" in c and "((int32_t)((a1[" in c and ") % 3)" in c


# -- refusals ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src, cls, words", [
    ("void f(long double A[3])\n{\n  A[0] = 1;\n}\n", NotAffineError,
     r"array parameter 'A' has element type 'long double', which MICA does not support"),
    ("void f(long A[3])\n{\n  A[0] = 1;\n}\n", NotAffineError, r"element type 'long'"),
    ("void f(unsigned A[3])\n{\n  A[0] = 1;\n}\n", NotAffineError, r"element type 'unsigned'"),
    ("#include <stdint.h>\nvoid f(int64_t A[3])\n{\n  A[0] = 1;\n}\n", NotAffineError, r"element type 'int64_t'"),
    ("void f(int *A)\n{\n  A[0] = 1;\n}\n", NotAffineError, r"pointer parameter 'A' is not supported"),
    ("void f(int A[3])\n{\n  int *p;\n  A[0] = 1;\n}\n", NotAffineError, r"pointer variable 'p'"),
    ("void f(int A[3])\n{\n  unsigned long t = A[1];\n  A[0] = t;\n}\n", NotAffineError,
     r"local 't' of type 'unsigned long' holds data"),
    ("void f(int A[3])\n{\n  A[0] = A[1] % 2.0;\n}\n", NotAffineError, r"% on floating-point values"),
    ("void f(int A[3], double B[3])\n{\n  A[0] = (long)B[1];\n}\n", NotAffineError,
     r"conversion to 'long' is not supported"),
    ("void f(int A[3])\n{\n  A[0] = A[1] / 0;\n}\n", None, None),        # C's undefined behaviour: not folded
    ("void f(int A[3])\n{\n  A[0] = 7 / 0;\n}\n", AffineError, r"integer division by zero"),
])
def test_refused_integer_constructs(src, cls, words):
    if cls is None:
        from_c(src)
        return
    with pytest.raises(cls, match=words) as info:
        from_c(src, filename="t.c")
    assert str(info.value).startswith("t.c:")


def test_data_dependent_subscript_is_still_refused():
    with pytest.raises(NotAffineError, match=r"subscript of 'E' is not affine: it reads array 'tok'"):
        from_c("void f(int tok[4], float E[8][2], float y[4][2])\n{\n  for (int i = 0; i < 4; i++)\n"
               "    for (int j = 0; j < 2; j++)\n      y[i][j] = E[tok[i]][j];\n}\n")


# -- the reference and the native C -----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(INT_MANIFEST))
def test_int_kernel_program_matches_native_c(name):
    src, spec = int_kernel(name)
    prog = from_c(src, None, params=spec["params"], filename=f"{name}.c")
    ins = make_inputs(src, None, spec["params"], spec, seed=3)
    for a in prog.arrays:
        if a.name in ins:
            assert ins[a.name].dtype == np.dtype({"i32": np.int32, "i16": np.int16, "i8": np.int8,
                                                  "u8": np.uint8, "f32": np.float32, "f64": np.float64}[a.dtype])
    want = run_c(src, None, ins, spec["params"])
    assert set(want) == set(prog.outputs)
    assert_matches(run_program(prog, ins), want, rtol=0)


def test_nussinov_int_is_the_polybench_form():
    src, spec = int_kernel("nussinov-int")
    prog = from_c(src, None, params=spec["params"])
    assert {a.name: a.dtype for a in prog.arrays} == {"seq": "i8", "table": "i32"}
    ins = make_inputs(src, None, spec["params"], spec, seed=5)
    want = run_c(src, None, ins, spec["params"])["table"]
    assert want.max() >= 3                         # some base pairs bond: the match term matters


def test_run_c_and_run_program_check_integer_inputs():
    src = "void f(int A[3], char B[3])\n{\n  for (int i = 0; i < 3; i++) B[i] = A[i];\n}\n"
    out = run_c(src, "f", {"A": np.array([1, 300, -129], np.int32)})
    np.testing.assert_array_equal(out["B"], np.array([1, 44, 127], np.int8))     # wraps as gcc does
    with pytest.raises(InputError, match=r"input 'A' has shape \(2,\), expected \(3,\)"):
        run_program(from_c(src), {"A": np.zeros(2, np.int32)})


def test_float_updates_of_an_integer_accumulator_are_not_a_reduction():
    """``s += f`` with int s truncates at every step: it does not re-associate; ``s += int`` does (wraps)."""
    from mica.affine.deps import REDUCTION, SEQUENTIAL, loop_kinds
    src = "void f(float x[6], int y[6], int s[1], int t[1])\n{\n  for (int i = 0; i < 6; i++) {\n" \
          "    s[0] += x[i];\n    t[0] += y[i];\n  }\n}\n"
    kinds = loop_kinds(from_c(src))
    assert kinds["S0"]["i"] == SEQUENTIAL and kinds["S1"]["i"] == REDUCTION
