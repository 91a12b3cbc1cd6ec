"""Loop forms, conditions and statements the C front end accepts: each checked against an expected isl
domain and by running the Program (run_program) against the native C (run_c)."""

import islpy as isl
import numpy as np
import pytest

from frontend_util import make_inputs
from mica.affine.expr import Call, Cmp, Scalar, Select
from mica.errors import AffineError
from mica.affine.from_c import from_c
from mica.testing import assert_matches, run_c, run_program


def check(src, params, domains=None, fn=None, inputs=None, rtol=1e-12, seed=3):
    """from_c + domain checks + differential run; returns the Program."""
    prog = from_c(src, fn, params=params, filename="t.c")
    for sname, text in (domains or {}).items():
        got = prog.statement(sname).domain_set
        assert got.is_equal(isl.Set(text)), f"{sname}: {got} != {text}"
    ins = make_inputs(src, fn, params, seed=seed)
    ins.update(inputs or {})
    want = run_c(src, fn, ins, params)
    assert want, "the function writes no array parameter"
    assert_matches(run_program(prog, ins), want, rtol=rtol)
    return prog


# -- loop headers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("header", [
    "for (i = 0; i < n; i++)", "for (i = 0; i < n; ++i)", "for (i = 0; i < n; i += 1)",
    "for (i = 0; i < n; i = i + 1)", "for (i = 0; i < n; i = 1 + i)", "for (i = 0; n > i; i++)",
    "for (i = 0; i <= n - 1; i++)", "for (i = 0; n - 1 >= i; i++)", "for (int i = 0; i < n; i++)",
])
def test_increasing_headers(header):
    decl = "" if "int i" in header else "int i;"
    src = f"void f(int n, double A[12]) {{ {decl} {header} A[i] = A[i] * 2.0 + 1.0; }}"
    prog = check(src, {"n": 12}, {"S0": "{ S0[i] : 0 <= i < 12 }"})
    assert prog.statements[0].order == (0, "i", 0)


@pytest.mark.parametrize("header", [
    "for (i = n - 1; i >= 0; i--)", "for (i = n - 1; i >= 0; --i)", "for (i = n - 1; i > -1; i -= 1)",
    "for (i = n - 1; 0 <= i; i = i - 1)",
])
def test_decreasing_headers(header):
    # A running recurrence in reverse order: only right if the loop really runs downwards.
    src = f"""void f(int n, double A[13]) {{
  int i;
  {header}
    A[i] = A[i] + 0.5 * A[i + 1];
}}"""
    prog = check(src, {"n": 12}, {"S0": "{ S0[i] : 0 <= i < 12 }"})
    assert prog.statements[0].order == (0, "-i", 0)
    assert str(prog.schedule_map()) == "{ S0[i] -> [0, -i, 0] }"


def test_triangular_and_trapezoidal_bounds():
    src = """
void f(int n, double A[10][10], double B[10][10]) {
  int i, j;
  for (i = 0; i < n; i++)
    for (j = 0; j <= i; j++)
      A[i][j] = A[i][j] + A[j][i];
  for (i = 0; i < n; i++)
    for (j = 0; j < i - 1; j++)
      B[i][j] = B[i][j + 1] * 0.5;
  for (i = 2; i < n; i++)
    for (j = i; j < n + 2 - i; j++)
      B[i][j] = B[i][j] - A[j][i];
}"""
    check(src, {"n": 10}, {
        "S0": "{ S0[i, j] : 0 <= j <= i < 10 }",
        "S1": "{ S1[i, j] : 0 <= i < 10 and 0 <= j < i - 1 }",
        "S2": "{ S2[i, j] : 2 <= i and i <= j < 12 - i }",
    })


def test_ternary_min_max_bounds():
    src = """
void f(int n, double A[20], double B[20][20]) {
  int i, j;
  for (i = 0; i < n; i++)
    for (j = (i - 2 > 0 ? i - 2 : 0); j < (i + 3 < n ? i + 3 : n); j++)
      B[i][j] = A[j] + B[i][j];
  for (i = (n < 5 ? n : 5); i <= (n - 3 > 12 ? 12 : n - 3); i++)
    A[i] = -A[i];
}"""
    check(src, {"n": 20}, {
        "S0": "{ S0[i, j] : 0 <= i < 20 and j >= 0 and j >= i - 2 and j < i + 3 and j < 20 }",
        "S1": "{ S1[i] : 5 <= i <= 12 }",
    })


def test_min_max_in_a_decreasing_loop():
    src = """
void f(int n, double A[16]) {
  int i;
  for (i = (n - 1 < 9 ? n - 1 : 9); i >= (2 > n - 14 ? 2 : n - 14); i--)
    A[i] = A[i] + A[i + 1];
}"""
    prog = check(src, {"n": 16}, {"S0": "{ S0[i] : 2 <= i <= 9 }"})
    assert prog.statements[0].order == (0, "-i", 0)


def test_if_conditions_and_union_domains():
    src = """
void f(int n, double A[12][12]) {
  int i, j;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      if (i < j && !(j == 5))
        A[i][j] = A[i][j] + 1.0;
      if (i == 0 || j > 9)
        A[i][j] = 2.0 * A[i][j];
      else if (i != j)
        A[i][j] = A[i][j] - 3.0;
      else
        A[i][j] = A[i][j] / 4.0;
    }
}"""
    prog = check(src, {"n": 12}, {
        "S0": "{ S0[i, j] : 0 <= i < j < 12 and j != 5 }",
        "S1": "{ S1[i, j] : 0 <= i < 12 and 0 <= j < 12 and (i = 0 or j > 9) }",
        "S2": "{ S2[i, j] : 0 < i < 12 and 0 <= j <= 9 and i != j }",
        "S3": "{ S3[i, j] : 0 < i < 12 and 0 <= j <= 9 and i = j }",
    })
    assert [s.order for s in prog.statements] == [(0, "i", 0, "j", k) for k in range(4)]


def test_imperfect_nest_orders():
    src = """
void f(int n, double A[8][8], double x[8], double y[8]) {
  int i, j, k;
  for (i = 0; i < n; i++) {
    y[i] = 0.0;
    for (j = 0; j < n; j++) {
      x[j] = x[j] + A[i][j];
      for (k = 0; k < j; k++)
        y[i] = y[i] + A[j][k] * x[k];
      y[i] = y[i] * 0.5;
    }
    for (j = 0; j < i; j++)
      y[j] = y[j] + y[i];
    y[i] = -y[i];
  }
  x[0] = y[n - 1];
}"""
    prog = check(src, {"n": 8})
    assert [s.order for s in prog.statements] == [
        (0, "i", 0), (0, "i", 1, "j", 0), (0, "i", 1, "j", 1, "k", 0), (0, "i", 1, "j", 2),
        (0, "i", 2, "j", 0), (0, "i", 3), (1,)]
    assert prog.statements[-1].loops == ()
    assert prog.statement("S2").domain_set.is_equal(
        isl.Set("{ S2[i, j, k] : 0 <= i < 8 and 0 <= k < j < 8 }"))


def test_shadowed_iterators_are_renamed_and_siblings_share_names():
    src = """
void f(int n, double A[6][6], double B[6]) {
  for (int i = 0; i < n; i++)
    for (int i = 0; i < n - 1; i++)
      B[i] = B[i] + 1.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      A[i][j] = B[j];
}"""
    prog = check(src, {"n": 6}, {"S0": "{ S0[i, i_1] : 0 <= i < 6 and 0 <= i_1 < 5 }"})
    assert prog.statements[0].loops == ("i", "i_1")
    assert prog.statements[1].loops == ("i", "j")


def test_iterators_named_like_isl_keywords():
    src = """
void f(double A[5][5]) {
  int min, max;
  for (min = 0; min < 5; min++)
    for (max = min; max < 5; max++)
      A[min][max] = A[max][min] + 1.0;
}"""
    prog = check(src, {})
    assert prog.statements[0].loops == ("min_1", "max_1")


def test_reserved_local_names_are_renamed():
    src = """
void f(double A[3]) {
  int __i;
  double __t;
  for (__i = 0; __i < 3; __i++) {
    __t = A[__i] * 2.0;
    A[__i] = __t + 1.0;
  }
}"""
    prog = check(src, {})
    assert prog.statements[0].loops == ("v__i",) and prog.statements[0].write.array == "v__t"


def test_empty_loop_and_constant_conditions():
    src = """
void f(int n, double A[4]) {
  int i;
  for (i = 0; i < n - 4; i++)
    A[i] = 1.0;
  for (i = 0; i < n; i++)
    if (1)
      A[i] = A[i] + 2.0;
  for (i = 0; i < n; i++)
    if (0 && i > 2)
      A[i] = 7.0;
}"""
    prog = check(src, {"n": 4})
    assert prog.statements[0].domain_set.is_empty() and prog.statements[2].domain_set.is_empty()


def test_int_constants_and_vla_extents():
    src = """
void f(int n, int m, double A[n][m + 1]) {
  int i, j;
  const int half = 3;
  for (i = half; i < n; i++)
    for (j = 0; j <= m; j++)
      A[i][j] = A[i - half][j] + (n / 2) * 0.25;
}"""
    prog = check(src, {"n": 7, "m": 4}, {"S0": "{ S0[i, j] : 3 <= i < 7 and 0 <= j <= 4 }"})
    assert prog.array("A").shape == (7, 5)


# -- statements -------------------------------------------------------------------------------------

def test_compound_assignments_and_increments():
    src = """
void f(double A[9], double B[9]) {
  int i;
  for (i = 0; i < 9; i++) {
    A[i] += B[i];
    A[i] -= 0.5 * B[i];
    A[i] *= 3.0 - B[i];
    A[i] /= 1.0 + B[i];
    B[i]++;
    --B[i];
    ++B[i];
  }
}"""
    prog = check(src, {})
    assert [s.expr.op for s in prog.statements[:4]] == ["+", "-", "*", "/"]


def test_affine_ternary_in_a_value_splits_the_statement():
    src = """
void f(double A[10], double B[10]) {
  int i;
  for (i = 0; i < 10; i++)
    A[i] = i < 4 ? B[i] : (i > 7 ? 2.0 * B[i] : -B[i]);
  for (i = 0; i < 10; i++)
    B[i] = i >= 0 ? B[i] + 1.0 : 0.0;
}"""
    prog = check(src, {}, {
        "S0": "{ S0[i] : 0 <= i < 4 }", "S1": "{ S1[i] : 8 <= i < 10 }", "S2": "{ S2[i] : 4 <= i <= 7 }",
        "S3": "{ S3[i] : 0 <= i < 10 }"})
    assert [s.order for s in prog.statements] == [(0, "i", 0), (0, "i", 1), (0, "i", 2), (1, "i", 0)]


def test_data_dependent_ternaries_become_selects():
    src = """
void f(double A[10], double B[10], double C[10]) {
  int i;
  for (i = 0; i < 10; i++) {
    C[i] = A[i] < B[i] ? A[i] : B[i];
    C[i] = (A[i] > 0.3 && B[i] < 0.7) ? C[i] : -C[i];
    C[i] = !(A[i] >= 0.5 || B[i]) ? 1.0 : C[i] * 2.0;
  }
}"""
    prog = check(src, {}, inputs={"B": np.where(np.arange(10) % 3 == 0, 0.0, np.linspace(0, 1, 10))})
    s0 = prog.statements[0].expr
    assert isinstance(s0, Select) and isinstance(s0.cond, Cmp) and s0.cond.op == "<"
    assert len(prog.statements[0].reads) == 4      # every textual read is its own access
    assert isinstance(prog.statements[1].expr.then, Select)


def test_math_functions_casts_and_scalars():
    src = """
void f(double alpha, float beta, int n, double A[6], double B[6]) {
  int i;
  for (i = 0; i < 6; i++)
    B[i] = sqrt(A[i]) + exp(-A[i]) * log(1.0 + A[i]) + pow(A[i], alpha) + fabs(A[i] - 0.5)
           + fmax(A[i], (double)beta) + fmin(A[i], 0.25) + (float)2 / 4 + 1 / 2
           + A[i] / n;
}"""
    prog = check(src, {}, inputs={"alpha": 1.5, "beta": 0.75, "n": 3})
    assert dict(prog.scalars) == {"alpha": "f64", "beta": "f32", "n": "f64"}
    calls = {e.fn for e in prog.statements[0].expr.walk() if isinstance(e, Call)}
    assert calls == {"sqrt", "exp", "log", "pow", "fabs", "fmax", "fmin"}
    assert Scalar("n") in set(prog.statements[0].expr.walk())


def test_float_kernel_with_f_suffixed_functions():
    src = """
void f(int n, float A[16], float B[16]) {
  int i;
  for (i = 0; i < n; i++)
    B[i] = sqrtf(A[i]) * 2.0f + expf(A[i]) - fabsf(A[i] - 0.5f) + powf(A[i], 2.0f);
}"""
    prog = check(src, {"n": 16}, rtol=1e-6)
    assert prog.array("A").dtype == "f32"


def test_scalar_temporaries_chained_assignment_and_local_arrays():
    src = """
void f(int n, double A[8][8], double x[8]) {
  int i, j;
  double s, t;
  double tmp[8];
  for (i = 0; i < n; i++) {
    s = t = 0.0;
    for (j = 0; j < n; j++) {
      s += A[i][j];
      t = t + A[j][i] * s;
    }
    tmp[i] = s - t;
  }
  for (i = 0; i < n; i++) {
    double u = tmp[n - 1 - i];
    x[i] = u * u;
  }
}"""
    prog = check(src, {"n": 8})
    assert prog.outputs == ("x",) and prog.inputs == ("A",)
    assert {a.name: a.shape for a in prog.arrays} == {"A": (8, 8), "x": (8,), "s": (), "t": (), "tmp": (8,),
                                                        "u": ()}
    assert prog.statements[0].write.array == "t" and prog.statements[1].write.array == "s"


def test_partial_writes_make_an_output_an_input():
    src = """
void f(double A[10], double B[10]) {
  int i;
  for (i = 1; i < 9; i++)
    B[i] = A[i - 1] + A[i + 1];
}"""
    prog = check(src, {})
    assert prog.inputs == ("A", "B") and prog.outputs == ("B",)
    full = from_c(src.replace("i = 1; i < 9", "i = 0; i < 10").replace("A[i - 1] + A[i + 1]", "A[i]"))
    assert full.inputs == ("A",) and full.outputs == ("B",)


# -- sources ----------------------------------------------------------------------------------------

def test_several_functions_comments_pragmas_and_line_markers():
    src = """# 1 "k.c"
# 1 "<built-in>"
typedef double DATA_TYPE;
static int helper(int x) { return x + 1; }
extern int printf(const char *, ...);
/* the kernel */
void kernel_a(int n, DATA_TYPE A[5]) {
  int i;
#pragma scop
  for (i = 0; i < n; i++)  // scale
    A[i] = A[i] * 3.0;
#pragma endscop
  return;
}
void kernel_b(double B[3]) { B[0] = 1.0; }
"""
    prog = from_c(src, "kernel_a", params={"n": 5}, filename="k.c")
    assert prog.statements[0].line == 11
    assert prog.array("A").dtype == "f64"
    with pytest.raises(AffineError, match=r"k.c:7:6: the source defines 3 functions \(helper, kernel_a, "
                                          r"kernel_b\); say which one"):
        from_c(src, filename="k.c")               # function=None with several: an error naming them
    assert from_c(src, "kernel_b").name == "kernel_b"
    ins = {"A": np.arange(5.0)}
    assert_matches(run_program(prog, ins), run_c(src, "kernel_a", ins, {"n": 5}))


def test_integer_division_and_modulo_by_constants_in_conditions_and_bounds():
    # C truncates toward zero: (i - 5) / 3 and (i - 5) % 3 for negative i - 5 are checked by run_c.
    src = """
void f(double A[12], double B[12][12]) {
  int i, j;
  for (i = 0; i < 12; i++) {
    if (i % 2 == 0)
      A[i] = A[i] + 1.0;
    if ((i - 5) % 3 == -1 || (i - 5) / 3 == -1)
      A[i] = A[i] * 3.0;
    for (j = (i - 4) / 3 + 1; j < (i + 1) / 2; j++)
      B[i][j] = B[i][j] - A[j];
  }
}"""
    check(src, {}, {
        "S0": "{ S0[i] : 0 <= i < 12 and i mod 2 = 0 }",
        "S1": "{ S1[i] : 0 <= i <= 2 or i = 4 }",
        "S2": "{ S2[i, j] : 0 <= i < 12 and j < floor((i + 1)/2) and "
              "((4 <= i and j >= floor((i - 4)/3) + 1) or (i = 1 and j = 0) or (i = 3 and j = 1)) }",
    })
