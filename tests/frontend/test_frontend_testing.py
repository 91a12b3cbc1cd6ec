"""mica.testing: run_program on builder programs, run_c details, assert_matches messages, input errors."""

import numpy as np
import pytest

from mica import ops
from mica.affine.from_c import from_c
from mica.errors import InputError
from mica.testing import assert_matches, program_c, run_c, run_program


def test_run_program_on_builder_programs():
    rng = np.random.default_rng(0)
    A = rng.random((5, 7)).astype(np.float32)
    B = rng.random((7, 3)).astype(np.float32)
    got = run_program(ops.matmul(5, 3, 7), {"A": A, "B": B})
    np.testing.assert_allclose(got["C"], A @ B, rtol=1e-5)
    x = rng.random(7).astype(np.float32)
    np.testing.assert_allclose(run_program(ops.gemv(5, 7), {"A": A, "x": x})["y"], A @ x, rtol=1e-5)
    C = rng.random((5, 7)).astype(np.float32)
    out = run_program(ops.scaled_add((5, 7)), {"A": A, "B": C, "alpha": 3.0})
    np.testing.assert_allclose(out["C"], 3.0 * A + C, rtol=1e-6)
    np.testing.assert_allclose(run_program(ops.reduce_sum((5, 7), axis=0), {"A": A})["B"], A.sum(0), rtol=1e-5)


def test_program_c_is_a_sequential_loop_nest():
    text = program_c(ops.matmul(4, 4, 4, dtype="f64"))
    assert "void mica_program(void **arrays, const double *scalars)" in text
    assert text.count("for (") == 3 and "/* S0 */" in text and "/* S1 */" in text   # i, j fused


def test_run_program_input_errors():
    prog = ops.scaled_add((2, 2), dtype="f64")
    ok = {"A": np.zeros((2, 2)), "B": np.zeros((2, 2)), "alpha": 1.0}
    with pytest.raises(InputError, match="input 'A' is missing"):
        run_program(prog, {k: v for k, v in ok.items() if k != "A"})
    with pytest.raises(InputError, match="scalar 'alpha' is missing"):
        run_program(prog, {k: v for k, v in ok.items() if k != "alpha"})
    with pytest.raises(InputError, match=r"input 'B' has shape \(3, 2\), expected \(2, 2\)"):
        run_program(prog, {**ok, "B": np.zeros((3, 2))})
    with pytest.raises(InputError, match="scalar 'alpha' must be a number"):
        run_program(prog, {**ok, "alpha": "x"})
    # 16-bit arrays run too (mica.codeprint.half); inputs are converted like every other dtype
    out = run_program(ops.add((2,), dtype="f16"), {"A": np.full(2, 0.1), "B": np.full(2, 0.2)})["C"]
    assert out.dtype == np.float16 and (out == np.float16(np.float32(np.float16(0.1)) + np.float32(np.float16(0.2)))).all()


def test_run_c_copies_inputs_and_returns_written_arrays():
    src = """
static void kernel_s(int n, double alpha, double A[4], double B[n], double C[4]) {
  int i;
  for (i = 0; i < n; i++)
    B[i] = alpha * A[i] + C[i];
}"""
    A, B, C = np.arange(4.0), np.zeros(4), np.ones(4)
    out = run_c(src, "kernel_s", {"A": A, "B": B, "C": C, "alpha": 2.0}, {"n": 4})
    assert set(out) == {"B"}
    np.testing.assert_array_equal(out["B"], 2.0 * A + 1.0)
    assert not B.any()                          # the caller's arrays are not modified
    with pytest.raises(InputError, match="int parameter 'n' of kernel_s needs a value"):
        run_c(src, "kernel_s", {"A": A, "B": B, "C": C, "alpha": 2.0})
    with pytest.raises(InputError, match="scalar 'alpha' of kernel_s is missing"):
        run_c(src, "kernel_s", {"A": A, "B": B, "C": C}, {"n": 4})
    with pytest.raises(InputError, match=r"input 'A' has shape \(5,\), expected \(4,\)"):
        run_c(src, "kernel_s", {"A": np.zeros(5), "B": B, "C": C, "alpha": 2.0}, {"n": 4})


def test_non_inputs_start_as_nan_in_run_program():
    # A write-only array must not be read: run_program fills it with NaN to make a wrong 'inputs' visible.
    src = "void f(double A[3], double B[3]) { int i; for (i = 0; i < 3; i++) B[i] = A[i] + 1.0; }"
    prog = from_c(src)
    assert prog.inputs == ("A",)
    out = run_program(prog, {"A": np.zeros(3), "B": np.full(3, 7.0)})
    np.testing.assert_array_equal(out["B"], np.ones(3))


def test_assert_matches_reports_every_difference():
    want = {"x": np.array([1.0, 2.0, 3.0]), "y": np.zeros((2, 2))}
    assert_matches({"x": want["x"].copy(), "y": want["y"] + 1e-14}, want, rtol=1e-12, atol=1e-12)
    with pytest.raises(AssertionError) as info:
        assert_matches({"x": np.array([1.0, 2.5, 3.0]), "y": np.zeros((2, 3))}, want, rtol=1e-12)
    msg = str(info.value)
    assert "x: 1 of 3 elements differ (rtol=1e-12, atol=0.0); first at (1,): got 2.5, want 2.0" in msg
    assert "y: shape (2, 3), want (2, 2)" in msg
    with pytest.raises(AssertionError, match=r"arrays differ: got \['x'\], want \['x', 'y'\]"):
        assert_matches({"x": want["x"]}, want)
