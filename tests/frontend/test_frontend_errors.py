"""Constructs outside the subset: each raises NotAffineError/AffineError located file:line:column."""

import re

import pytest

from mica.affine.from_c import from_c
from mica.errors import AffineError, MicaError, NotAffineError


def where(src: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    idx = -1
    for _ in range(occurrence + 1):
        idx = src.index(needle, idx + 1)
    line = src.count("\n", 0, idx) + 1
    col = idx - (src.rfind("\n", 0, idx) + 1) + 1
    return line, col


def expect(src, cls, needle, words, *, params=None, function=None, occurrence=0):
    line, col = where(src, needle, occurrence)
    with pytest.raises(cls) as info:
        from_c(src, function, params=params if params is not None else {"n": 10}, filename="e.c")
    err = info.value
    assert str(err).startswith(f"e.c:{line}:{col}: "), str(err)
    assert (err.filename, err.line, err.column) == ("e.c", line, col)
    assert re.search(words, str(err)), str(err)
    return err


def body(stmts: str, params: str = "int n, double A[10], double B[10][10], double alpha") -> str:
    return f"void f({params})\n{{\n  int i, j;\n  double s;\n{stmts}\n}}\n"


NA, AE = NotAffineError, AffineError

CASES = [
    # (id, source, class, needle, message regex)
    ("product-subscript", body("  for (i = 0; i < n; i++)\n    for (j = 0; j < n; j++)\n      A[i * j] = 1.0;"),
     NA, "i * j", r"subscript of 'A' is not affine: product of i and j"),
    ("indirect-subscript", body("  for (i = 0; i < n; i++)\n    A[i] = B[i][(int)A[i]];"),
     NA, "A[i]]", r"subscript of 'B' is not affine: it reads array 'A'"),
    ("modulo-subscript", body("  for (i = 0; i < n; i++)\n    A[i % 2] = 1.0;"),
     NA, "i % 2", r"subscript of 'A' is not affine: integer division or modulo of a loop-dependent value"),
    ("division-by-iterator", body("  for (i = 1; i < n; i++)\n    if (n / i > 2)\n      A[i] = 1.0;"),
     NA, "n / i", r"integer division by a loop-dependent value"),
    ("division-in-bound", body("  for (i = 0; i < n; i++)\n    for (j = 0; j < 2 * n; j++)\n"
                               "      if (j / 2 < i)\n        B[i][j / 2] = 1.0;"),
     NA, "j / 2]", r"subscript of 'B' is not affine: integer division"),
    ("conditional-subscript", body("  for (i = 0; i < n; i++)\n    A[i < 5 ? i : 5] = 1.0;"),
     NA, "i < 5", r"conditional subscript of 'A'"),
    ("partial-indexing", body("  for (i = 0; i < n; i++)\n    B[i] = 1.0;"),
     NA, "B[i] =", r"'B' has 2 dimension\(s\) but is used with 1 subscript"),
    ("pointer-param", "void f(int n, double *A)\n{\n  A[0] = 1.0;\n}\n",
     NA, "*A", r"pointer parameter 'A' is not supported"),
    # (pycparser places a unary operator at its operand)
    ("pointer-deref-write", body("  *(A + 1) = 2.0;"), NA, "A + 1", r"assignment through a pointer"),
    ("pointer-deref-read", body("  A[0] = *(A + 1);"), NA, "A + 1", r"pointer dereference"),
    ("address-of", body("  A[0] = *&A[1];"), NA, "A[1]", r"pointer dereference"),
    ("array-as-value", body("  A[0] = A + 1;"), NA, "A + 1", r"array 'A' used without subscripts"),
    ("while", body("  while (n > 0)\n    A[0] = 1.0;"), NA, "while", r"while loop is not supported"),
    ("do-while", body("  do { A[0] = 1.0; } while (0);"), NA, "do {", r"do-while loop is not supported"),
    ("goto", body("  goto end;\n  A[0] = 1.0;\nend:\n  A[1] = 2.0;"), NA, "goto", r"goto"),
    ("break", body("  for (i = 0; i < n; i++) {\n    A[i] = 1.0;\n    break;\n  }"), NA, "break", r"break is not"),
    ("continue", body("  for (i = 0; i < n; i++) {\n    continue;\n  }"), NA, "continue", r"continue is not"),
    ("return-value", body("  A[0] = 1.0;\n  return 3;"), NA, "return", r"return with a value"),
    ("early-return", body("  A[0] = 1.0;\n  return;\n  A[1] = 1.0;"), NA, "return", r"early return"),
    ("switch", body("  switch (n) { case 1: A[0] = 1.0; }"), NA, "switch", r"switch is not supported"),
    ("other-call", body("  for (i = 0; i < n; i++)\n    A[i] = cos(A[i]);"), NA, "cos",
     r"call to 'cos' is not supported \(only sqrt, exp, log, pow, fabs, fmax, fmin"),
    ("call-statement", body("  printf(\"%d\", n);"), NA, "printf", r"call to 'printf' as a statement"),
    ("wrong-arity", body("  A[0] = pow(A[1]);"), NA, "pow", r"pow takes 2 argument\(s\), got 1"),
    ("data-bound", body("  for (i = 0; i < n; i++)\n    for (j = 0; j < A[i]; j++)\n      B[i][j] = 0.0;"),
     NA, "A[i]", r"bound of loop 'j' is not affine: it reads array 'A'"),
    ("scalar-bound", body("  for (i = 0; i < alpha; i++)\n    A[i] = 0.0;"),
     NA, "alpha;", r"bound of loop 'i' is not affine: it reads the floating-point variable 'alpha'"),
    ("data-start", body("  s = 2.0;\n  for (i = s; i < n; i++)\n    A[i] = 0.0;"),
     NA, "s; i", r"initial value of loop 'i' is not affine: it depends on the value of 's'"),
    ("data-if", body("  for (i = 0; i < n; i++)\n    if (A[i] > 0)\n      A[i] = 0.0;"),
     NA, "A[i] >", r"if condition is not affine: it reads array 'A'"),
    ("float-if", body("  for (i = 0; i < n; i++)\n    if (i < 2.5)\n      A[i] = 0.0;"),
     NA, "2.5", r"if condition is not affine: it uses the floating-point constant 2.5"),
    ("float-cast-if", body("  for (i = 0; i < n; i++)\n    if ((double)i < 2)\n      A[i] = 0.0;"),
     NA, "(double)i", r"if condition is not affine: it converts to a floating-point type"),
    ("write-out-of-bounds", body("  for (i = 0; i <= n; i++)\n    A[i] = 0.0;"),
     AE, "A[i] =", r"access A\[i\] is outside the declared extent A\[10\] \(e.g. at i = 10\)"),
    ("read-out-of-bounds", body("  for (i = 0; i < n; i++)\n    for (j = 0; j < n; j++)\n"
                                "      B[i][j] = A[i] + B[j][i + j];"),
     AE, "B[j][i + j]", r"access B\[j, i \+ j\] is outside the declared extent B\[10, 10\]"),
    ("negative-index", body("  for (i = 0; i < n; i++)\n    A[i] = A[i - 1];"),
     AE, "A[i - 1]", r"access A\[i - 1\] is outside .* \(e.g. at i = 0\)"),
    ("assign-iterator", body("  for (i = 0; i < n; i++) {\n    A[i] = 0.0;\n    i = i + 1;\n  }"),
     NA, "i = i + 1", r"assignment to loop iterator 'i'"),
    ("increment-iterator", body("  for (i = 0; i < n; i++)\n    i++;"), NA, "i++;", r"assignment to loop iterator"),
    ("assign-size", body("  n = 4;"), NA, "n = 4", r"assignment to size parameter 'n'"),
    ("loop-over-size", body("  for (n = 0; n < 3; n++)\n    A[n] = 0.0;"), NA, "n = 0",
     r"assignment to size parameter 'n'"),
    ("assign-scalar-param", body("  alpha = 2.0;"), NA, "alpha =", r"assignment to scalar parameter 'alpha'"),
    ("assign-unsigned-local", body("  unsigned k;\n  k = 3;\n  A[0] = k;"), NA, "k;",
     r"local 'k' of type 'unsigned' holds data"),
    ("nonconst-int-local", body("  for (i = 0; i < n; i++) {\n    int k = i;\n    A[k] = 0.0;\n  }"),
     NA, "i;\n", r"int local 'k' must be initialised with a constant"),
    ("unsigned-array-param", "void f(int n, unsigned int A[10])\n{\n  A[0] = 1;\n}\n", NA, "A[10]",
     r"array parameter 'A' has element type 'unsigned int', which MICA does not support"),
    ("long-double-array-param", "void f(int n, long double A[10])\n{\n  A[0] = 1;\n}\n", NA, "A[10]",
     r"array parameter 'A' has element type 'long double', which MICA does not support"),
    ("long-double-param", "void f(long double x, double A[3])\n{\n  A[0] = x;\n}\n", NA, "x,",
     r"parameter 'x' has an unsupported type"),
    ("struct-param", "struct S { int a; };\nvoid f(struct S s, double A[3])\n{\n  A[0] = 1.0;\n}\n",
     NA, "s,", r"parameter 's' has an unsupported type"),
    ("isl-keyword-array", "void f(double min[3])\n{\n  min[0] = 1.0;\n}\n", AE, "min[3]",
     r"array name 'min' is reserved by isl"),
    ("statement-like-array", "void f(double S1[3])\n{\n  S1[0] = 1.0;\n}\n", AE, "S1[3]",
     r"array name 'S1' clashes with the statement names"),
    ("reserved-name", "void f(double __A[3])\n{\n  __A[0] = 1.0;\n}\n", AE, "__A[3]",
     r"parameter name '__A' is reserved"),
    ("pointer-local", body("  double *p;\n  A[0] = 1.0;"), NA, "*p;", r"pointer variable 'p'"),
    ("long-local-array", body("  long idx[4];\n  A[0] = 1.0;"), NA, "idx",
     r"local array 'idx' has element type 'long'"),
    ("local-array-init", body("  double t[2] = {1.0, 2.0};\n  A[0] = t[0];"), NA, "1.0, 2.0",
     r"initialiser of local array 't'"),
    ("stride", body("  for (i = 0; i < n; i += 2)\n    A[i] = 0.0;"), NA, "i += 2",
     r"loop 'i' has stride 2; only unit strides"),
    ("odd-increment", body("  for (i = 0; i < n; i *= 2)\n    A[i] = 0.0;"), NA, "i *= 2",
     r"unsupported increment of loop 'i'"),
    ("not-monotone", body("  for (i = 0; i != n; i++)\n    A[i] = 0.0;"), NA, "i != n",
     r"condition of loop 'i' is not a simple upper bound"),
    ("wrong-direction", body("  for (i = n - 1; i < n; i--)\n    A[i] = 0.0;"), NA, "i < n",
     r"not a simple lower bound"),
    ("no-condition", body("  for (i = 0; ; i++)\n    A[0] = 0.0;"), NA, "for", r"without a condition"),
    ("float-iterator", body("  for (s = 0; s < n; s++)\n    A[0] = 0.0;"), NA, "s = 0",
     r"loop iterator 's' must be an int local"),
    ("used-after-loop", body("  for (i = 0; i < n; i++)\n    A[i] = 0.0;\n  A[i] = 1.0;"), NA, "i] = 1.0",
     r"'i' is used after the loop over it"),
    ("used-before-set", body("  A[j] = 1.0;"), NA, "j]", r"'j' is used before it is given a value"),
    ("comparison-value", body("  A[0] = A[1] < 2.0;"), NA, "A[1] <", r"comparison '<' used as a value"),
    ("float-modulo", body("  A[0] = A[1] % 2;"), NA, "A[1] %", r"% on floating-point"),
    ("bitwise", body("  A[0] = A[1] * (n & 3);"), NA, "n & 3", r"operator '&' is not supported"),
    ("increment-in-expression", body("  A[0] = A[1]++;"), NA, "A[1]++", r"\+\+ inside an expression"),
    ("assign-in-expression", body("  A[0] = 1.0 + (A[1] = 2.0);"), NA, "A[1] = 2.0",
     r"assignment inside an expression"),
    ("float-to-long", body("  A[0] = (long)A[1];"), NA, "(long)", r"conversion to 'long' is not supported"),
    ("modulo-assign", body("  A[0] %= 2;"), NA, "A[0] %=", r"%= on floating-point values is not supported"),
    ("modulo-float", body("  A[0] = A[1] % 2;"), NA, "A[1] %", r"% on floating-point values is not supported"),
    ("read-before-write-local", body("  for (i = 0; i < n; i++)\n    A[i] = s;"), AE, "s;",
     r"local variable 's' is read before it is written"),
    ("global", "double G[10];\nvoid f(double A[10])\n{\n  A[0] = G[0];\n}\n", AE, "G[0]",
     r"undeclared identifier 'G' .*global variables are not supported"),
    ("division-by-zero", body("  A[0] = A[1] * (n / 0);"), AE, "n / 0", r"integer division by zero"),
    ("no-statements", "void f(int n, double A[3])\n{\n  int i;\n}\n", AE, "f(", r"no assignments"),
    ("comma", body("  A[0] = 1.0, A[1] = 2.0;"), NA, "A[0]", r"comma expression"),
    ("several-iterators", body("  for (i = 0, j = 0; i < n; i++)\n    A[i] = 0.0;"), NA, "i = 0, j",
     r"several variables"),
    ("nested-same-iterator", body("  for (i = 0; i < n; i++)\n    for (i = 0; i < n; i++)\n      A[i] = 0.0;"),
     NA, "i = 0; i < n; i++)\n      A", r"already the iterator of an enclosing loop"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rejected_construct(case):
    _, src, cls, needle, words = case
    occurrence = 1 if needle == "s;" else 0     # (the first "s;" is the declaration)
    expect(src, cls, needle, words, params={"n": 10} if "int n" in src else {}, occurrence=occurrence)


def test_missing_param_value_names_the_parameter():
    src = body("  for (i = 0; i < n; i++)\n    A[i] = 0.0;")
    err = expect(src, AffineError, "n;", r"int parameter 'n' is used in a loop bound.*params=\{'n': \.\.\.\}",
                 params={})
    assert not isinstance(err, NotAffineError)


def test_missing_param_in_an_extent():
    src = "void f(int n, double A[n])\n{\n  A[0] = 1.0;\n}\n"
    expect(src, AffineError, "n])", r"int parameter 'n' .* has no value", params={})


def test_unknown_param_key():
    src = body("  A[0] = 1.0;")
    expect(src, AffineError, "f(", r"params gives 'm', which is not an int parameter of f",
           params={"n": 10, "m": 3})


def test_unknown_function_name():
    src = body("  A[0] = 1.0;")
    err = expect(src, AffineError, "void", r"no function named 'g' in the source \(found: f\)", function="g")
    assert err.line == 1


@pytest.mark.parametrize("text, needle, words", [
    ("garbage $$ @@ !!", "garbage", r"C syntax error"),
    ("void f(int n, double A[10])\n{\n  int i;\n  for (i = 0; i < n; i++) {\n    A[i] = ", None,
     r"C syntax error: .*end of input"),
    ("void f(double A[3])\n{\n  A[0] = 1.0 +;\n}\n", "A[0]", r"C syntax error"),
    ("void f(double A[3])\n{\n  /* open comment\n  A[0] = 1.0;\n}\n", "/*", r"unterminated comment"),
    ("", None, r"no function definition"),
    ("int x;\n", None, r"no function definition"),
])
def test_bad_text(text, needle, words):
    with pytest.raises(AffineError) as info:
        from_c(text, filename="e.c")
    err = info.value
    assert err.filename == "e.c" and err.line >= 1 and err.column >= 1
    assert str(err).startswith(f"e.c:{err.line}:{err.column}: ")
    if needle is not None:
        assert err.line == where(text, needle)[0]
    assert re.search(words, str(err)), str(err)


def test_truncated_kernel_at_every_length_is_a_mica_error():
    src = body("  for (i = 0; i < n; i++)\n    for (j = 0; j <= i; j++)\n"
               "      B[i][j] = (A[i] < A[j] ? A[i] : alpha) * B[j][i];")
    for cut in range(0, len(src), 3):
        try:
            from_c(src[:cut], params={"n": 10}, filename="e.c")
        except MicaError as err:
            assert err.location is not None and "internal error" not in str(err)


def test_bad_params_argument():
    with pytest.raises(AffineError, match="params must map names to ints"):
        from_c(body("  A[0] = 1.0;"), params={"n": 2.5})
    with pytest.raises(AffineError, match="C source must be a str"):
        from_c(b"void f() {}")


def test_too_many_affine_cases_in_one_assignment():
    # 12 lines in general position cut the square into 79 regions: 78 splits
    lines = [f"{a} * i + {b} * j > {c}" for a, b, c in ((1, 2, 900), (2, 1, 1100), (1, -1, 100), (3, 1, 1500),
             (1, 3, 1400), (-1, 2, 200), (2, -1, 300), (1, 1, 1000), (4, 1, 2000), (1, 4, 2100),
             (-2, 1, -100), (1, -3, -600))]
    terms = " + ".join(f"({c} ? 1.0 : 0.5)" for c in lines)
    src = (f"void f(double A[1000][1000])\n{{\n  int i, j;\n  for (i = 0; i < 1000; i++)\n"
           f"    for (j = 0; j < 1000; j++)\n      A[i][j] = {terms};\n}}\n")
    expect(src, NotAffineError, "A[i][j] =", r"too many cases of affine conditions", params={})


def test_program_check_bounds_names_the_source_line():
    from mica.affine.expr import Aff, Const
    from mica.affine.program import Access, Array, Program, Statement
    st = Statement("S0", ("i",), "{ S0[i] : 0 <= i < 4 }", Access("w", "x", (Aff.of({"i": 1}, 1),)), Const(0.0),
                   (), (0, "i", 0), line=12)
    with pytest.raises(AffineError, match=r"statement S0: access w to x\[4\] goes out of bounds.*\(source line 12\)"):
        Program("p", (Array("x", (4,)),), (st,), (), ("x",))


def test_errors_without_a_location():
    err = AffineError("plain")
    assert err.location is None and err.line is None and err.column is None and err.filename is None
