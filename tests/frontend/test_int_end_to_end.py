"""Integer programs compiled for meshes and run on the emulator, compared element for element with the
natively compiled C (mica.testing.run_c): int32 division and remainder, an int8 -> int32 widening sum
(a cross-core reduction of int32 partials), int32 matmul, C's integer semantics, nussinov in its PolyBench
form; run() round-trips integer arrays and refuses a float array for an integer parameter."""

import json
from pathlib import Path

import numpy as np
import pytest

import mica
from frontend_util import make_inputs
from mica.affine.from_c import from_c
from mica.errors import EmitError, InputError
from mica.testing import assert_matches, run_c

INT_DIR = Path(__file__).parent / "kernels_int"
INT_MANIFEST = json.loads((INT_DIR / "manifest.json").read_text())
MESHES = [(1, 1), (2, 3), (3, 2), (4, 4), (5, 3), (8, 8)]


def _case(name, params=None, seed=7):
    src = (INT_DIR / f"{name}.c").read_text()
    spec = dict(INT_MANIFEST[name])
    params = params or spec["params"]
    prog = from_c(src, None, params=params, filename=f"{name}.c")
    ins = make_inputs(src, None, params, spec, seed=seed)
    return prog, ins, run_c(src, None, ins, params)


def _check(prog, ins, want, mesh):
    names = set(prog.inputs) | {n for n, _ in prog.scalars}
    res = mica.compile_affine(prog, mesh=mesh).run({k: v for k, v in ins.items() if k in names})
    got = {k: res.outputs[k] for k in want}
    for k in want:
        assert got[k].dtype == want[k].dtype
    assert_matches(got, want, rtol=0)
    return res


@pytest.mark.parametrize("name, params, meshes", [
    ("intdiv", {"n": 13, "m": 11}, MESHES),
    ("widen-sum", {"n": 29, "m": 3}, MESHES),        # few outputs, long sums: partials combined across cores
    ("int-semantics", {"n": 23}, MESHES),
    ("imatmul", {"ni": 11, "nj": 10, "nk": 7}, [(1, 1), (3, 2), (5, 3), (8, 8)]),   # its search costs most
])
def test_int_kernels_match_native_c_on_meshes(name, params, meshes):
    prog, ins, want = _case(name, params)
    for mesh in meshes:
        _check(prog, ins, want, mesh)


def test_widening_sum_reduces_across_cores():
    prog, ins, want = _case("widen-sum", {"n": 64, "m": 2})
    cp = mica.compile_affine(prog, mesh=(4, 4))
    assert "partial  i32" in str(cp.meshir) and "sum_in" in str(cp.meshir)
    assert cp.cost.cores > 2                     # the i loop is spread: int32 partials travel
    _check(prog, ins, want, (4, 4))


def test_nussinov_int_on_one_core_and_a_mesh():
    prog, ins, want = _case("nussinov-int", {"n": 16})
    for mesh in [(1, 1), (2, 3)]:
        _check(prog, ins, want, mesh)


def test_run_round_trips_int_arrays_and_refuses_floats():
    src = "void f(int A[5][4], signed char B[5][4], unsigned char C[5][4])\n{\n  for (int i = 0; i < 5; i++)\n" \
          "    for (int j = 0; j < 4; j++) {\n      B[i][j] = A[i][j];\n      C[i][j] = A[i][j] / 2;\n    }\n}\n"
    prog = from_c(src)
    A = np.arange(-10, 10, dtype=np.int32).reshape(5, 4) * 37
    cp = mica.compile_affine(prog, mesh=(2, 2))
    out = cp.run({"A": A}).outputs
    assert out["B"].dtype == np.int8 and out["C"].dtype == np.uint8
    np.testing.assert_array_equal(out["B"], A.astype(np.int8))
    np.testing.assert_array_equal(out["C"], (np.trunc(A / 2)).astype(np.int64).astype(np.uint8))
    with pytest.raises(InputError, match=r"input 'A' has dtype float64, expected int32 \(i32\)"):
        cp.run({"A": A.astype(np.float64)})
    with pytest.raises(InputError, match=r"input 'A' has dtype int64, expected int32 \(i32\)"):
        cp.run({"A": A.astype(np.int64)})


def test_csl_and_metalium_emit_integer_programs(tmp_path):
    """int32 and int8 arrays are emitted by both back ends (run in tests/emit_csl and tests/emit_metalium
    test_int_arrays.py); a double array is still refused, naming it."""
    for name, params in (("imatmul", {"ni": 4, "nj": 4, "nk": 4}), ("widen-sum", {"n": 8, "m": 2})):
        prog, _, _ = _case(name, params)
        cp = mica.compile_affine(prog, mesh=(2, 2))
        assert cp.emit("csl", tmp_path / f"csl_{name}") and cp.emit("metalium", tmp_path / f"tt_{name}")
    cp = mica.compile_affine(from_c("void f(double a[4], int b[4]) {\n  for (int i = 0; i < 4; i++) b[i] = a[i];\n}\n"),
                             mesh=(2, 1))
    with pytest.raises(EmitError, match=r"f64"):
        cp.emit("csl", tmp_path / "csl_f64")
    with pytest.raises(EmitError, match=r"f64"):
        cp.emit("metalium", tmp_path / "tt_f64")


def test_int_kernels_use_plain_loops_not_the_float_contraction():
    prog, _, _ = _case("imatmul", {"ni": 16, "nj": 16, "nk": 16})
    cp = mica.compile_affine(prog, mesh=(2, 2))
    src = "\n".join(cp.kernels.values())
    assert "mica_contract_" not in src and "int32_t *restrict" in src


def test_division_by_zero_does_not_kill_the_emulator():
    """C leaves x / 0 undefined (natively it traps); the emulator's kernels give 0 rather than dying."""
    src = "void f(int a[6], int b[6], int q[6], int r[6])\n{\n  for (int i = 0; i < 6; i++) {\n" \
          "    q[i] = a[i] / b[i];\n    r[i] = a[i] % b[i];\n  }\n}\n"
    a = np.array([7, -7, 5, -2147483648, 9, -9], np.int32)
    b = np.array([2, 2, 0, -1, -1, 0], np.int32)
    out = mica.compile_affine(from_c(src), mesh=(2, 1)).run({"a": a, "b": b}).outputs
    np.testing.assert_array_equal(out["q"], [3, -3, 0, -2147483648, -9, 0])
    np.testing.assert_array_equal(out["r"], [1, -1, 0, 0, 0, 0])


def test_runtime_int_parameter_in_integer_arithmetic():
    """An int parameter without a value in params is a run-time scalar; in integer arithmetic it is an int."""
    src = "void f(int k, int x[9], int y[9], float z[9])\n{\n  for (int i = 0; i < 9; i++) {\n" \
          "    y[i] = x[i] / k + k % 4;\n    z[i] = x[i] / k;\n  }\n}\n"
    prog = from_c(src)
    ins = {"x": np.arange(-40, 41, 10, dtype=np.int32), "k": 7}
    want = run_c(src, "f", ins)
    np.testing.assert_array_equal(want["z"], [-5, -4, -2, -1, 0, 1, 2, 4, 5])     # integer division first
    _check(prog, ins, want, (3, 1))


@pytest.mark.parametrize("cmp, ident", [(">", "-2147483648"), ("<", "2147483647")])
def test_int_max_min_reductions_start_from_the_dtype_extremes(cmp, ident):
    """Partials of an int max (min) start at INT32_MIN (INT32_MAX): an infinity has no int value."""
    src = f"void f(int x[200], int m[1])\n{{\n  for (int i = 0; i < 200; i++)\n" \
          f"    m[0] = x[i] {cmp} m[0] ? x[i] : m[0];\n}}\n"
    prog = from_c(src)
    x = np.random.default_rng(1).integers(-2**31, 2**31 - 1, 200).astype(np.int32)
    ins = {"x": x, "m": np.array([0], np.int32)}
    want = run_c(src, "f", ins)
    cp = mica.compile_affine(prog, mesh=(5, 3))
    assert f"m[a0] = {ident}" in str(cp.meshir) and cp.cost.cores > 1
    out = cp.run({k: ins[k] for k in prog.inputs}).outputs
    assert_matches({"m": out["m"]}, want, rtol=0)


def test_iterator_values_in_integer_arithmetic():
    """A loop iterator's value is a C int: ``i / 2`` and ``i % 3`` truncate before a float array stores them."""
    src = "void f(double A[10], int B[10][7])\n{\n  for (int i = 0; i < 10; i++) {\n    A[i] = i / 2 - (i - 5) / 3;\n" \
          "    for (int j = 0; j < 7; j++)\n      B[i][j] = (i - 2 * j) % 3 + i * j / 4;\n  }\n}\n"
    prog = from_c(src)
    want = run_c(src, "f", {})
    np.testing.assert_array_equal(want["A"], [i // 2 - int((i - 5) / 3) for i in range(10)])
    for mesh in [(1, 1), (3, 2)]:
        _check(prog, {}, want, mesh)
