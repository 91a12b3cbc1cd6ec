"""Front-end cases the fuzzer found (tests/fuzz/FOUND.md, items 5-7), now handled."""

import numpy as np
import pytest

import mica
from mica.errors import AffineError, NotAffineError
from mica.testing import run_c


@pytest.mark.parametrize("name", ["MAX", "Min", "AND", "Floor", "CEIL", "MOD", "RAT", "Exists", "INFTY",
                                  "TRUE"])  # (INFINITY and NAN are macros of math.h in the native reference)
def test_iterators_named_like_isl_keywords_in_any_case(name):
    src = f"void f(double A[4]) {{ for (int {name} = 0; {name} < 4; {name}++) A[{name}] = 1.0; }}"
    prog = mica.affine.from_c(src)
    res = mica.compile_affine(prog, mesh=(2, 1), target="wormhole").run({})
    np.testing.assert_array_equal(res.outputs["A"], run_c(src, "f", {"A": np.zeros(4)})["A"])


def test_dollar_in_a_parameter_name_is_a_located_error():
    with pytest.raises(AffineError) as info:
        mica.affine.from_c("void f(double a$b[4]) { for (int i = 0; i < 4; i++) a$b[i] = 1.0; }", filename="d.c")
    assert str(info.value).startswith("d.c:1:") and info.value.line == 1


def test_dollar_in_a_local_is_renamed():
    src = "void f(double A[4], double B[4]) { double t$1; for (int i = 0; i < 4; i++) { t$1 = 2.0 * B[i]; A[i] = t$1; } }"
    B = np.arange(4.0)
    res = mica.compile_affine(mica.affine.from_c(src), mesh=(1, 1), target="wormhole").run({"B": B})
    np.testing.assert_array_equal(res.outputs["A"], 2.0 * B)


@pytest.mark.parametrize("asm", ['asm("nop");', '__asm__ volatile ("nop");', "__asm (\"nop\");"])
def test_inline_assembly_in_the_function_is_refused(asm):
    src = f"void f(double A[4]) {{\n  for (int i = 0; i < 4; i++) {{\n    {asm}\n    A[i] = 1.0;\n  }}\n}}"
    with pytest.raises(NotAffineError, match="inline assembly") as info:
        mica.affine.from_c(src, filename="a.c")
    assert info.value.line == 3
