"""16-bit float types in the C front end (``_Float16``, ``__bf16`` and typedefs of them), the GELU math calls
and ``INFINITY`` as the preprocessor spells it; the bf16 exact conversion helpers against ml_dtypes."""

import ml_dtypes
import re

import numpy as np
import pytest

import mica
from mica.affine.expr import Call, Const, Neg
from mica.errors import EmitError
from mica.testing import run_program

SRC = """
typedef __bf16 bf16_t;
void k(_Float16 A[4][5], __bf16 B[4][5], bf16_t C[4][5], float D[4][5]) {
  _Float16 t;
  bf16_t u[4];
  for (int i = 0; i < 4; i++) {
    u[i] = __builtin_inff();
    for (int j = 0; j < 5; j++) {
      t = tanhf(A[i][j]) + erf(B[i][j]);
      u[i] = fminf(u[i], t);
      C[i][j] = t * 2.0f + u[i];
      D[i][j] = tanh(A[i][j]) * -__builtin_inf();
    }
  }
}
"""


def test_16_bit_types_and_their_typedefs_get_their_dtypes():
    prog = mica.affine.from_c(SRC)
    dtypes = {a.name: a.dtype for a in prog.arrays}
    assert {n: dtypes[n] for n in "ABCD"} == {"A": "f16", "B": "bf16", "C": "bf16", "D": "f32"}
    assert sorted(d for n, d in dtypes.items() if n not in "ABCD") == ["bf16", "f16"]   # u and t
    calls = {e.fn for s in prog.statements for e in s.expr.walk() if isinstance(e, Call)}
    assert calls == {"tanh", "erf", "fmin"}
    consts = [e.value for s in prog.statements for e in s.expr.walk() if isinstance(e, Const)]
    assert float("inf") in consts
    assert any(isinstance(e, Neg) for s in prog.statements for e in s.expr.walk())


def test_the_front_ends_16_bit_program_runs_on_the_mesh_as_in_sequence():
    prog = mica.affine.from_c(SRC)
    rng = np.random.default_rng(0)
    ins = {"A": rng.uniform(-2, 2, (4, 5)).astype(np.float16),
           "B": rng.uniform(-2, 2, (4, 5)).astype(ml_dtypes.bfloat16)}
    want = run_program(prog, ins)
    got = mica.compile_affine(prog, mesh=(2, 3)).run(ins).outputs
    for name in want:
        assert got[name].dtype == want[name].dtype
        assert np.array_equal(got[name].view(np.uint8), want[name].view(np.uint8)), name


def test_infinity_from_math_h_as_the_preprocessor_expands_it():
    src = "#include <math.h>\nvoid m(float X[8], float Y[1]) { Y[0] = -INFINITY;" \
          " for (int i = 0; i < 8; i++) Y[0] = fmaxf(Y[0], X[i]); }"
    prog = mica.affine.from_c(src)
    assert any(isinstance(e, Const) and e.value == float("inf") for e in prog.statements[0].expr.walk())
    X = np.random.default_rng(1).uniform(-1, 1, 8).astype(np.float32)
    assert run_program(prog, {"X": X})["Y"][0] == X.max()


def test_bf16_conversions_are_ml_dtypes_rounding():
    """The C helpers of mica.codeprint.half (a store of an f32 to a bf16 array, the bf16 read back as f32), in
    the emulator and the sequential reference, against ml_dtypes on hard cases: ties (to even), values just
    above and below a tie, rounding up to the next binade and past the largest finite value, infinities,
    signed zeros, subnormals."""
    cases = np.array([1.0, 1.00390625, 1.01171875, 1.0039063, 1.0039062, -2.5e-39, 3.3895314e38, 3.4e38,
                      np.inf, -np.inf, 0.0, -0.0, 1e-40, 65504.0, 0.1, -7.77, 1.9980469, 255.99], np.float32)
    n = len(cases)
    src = f"void cv(float X[{n}], __bf16 Y[{n}], float Z[{n}]) {{ for (int i = 0; i < {n}; i++) {{ Y[i] = X[i]; " \
          f"Z[i] = Y[i]; }} }}"
    prog = mica.affine.from_c(src)
    want = cases.astype(ml_dtypes.bfloat16)
    for out in (run_program(prog, {"X": cases}), mica.compile_affine(prog, mesh=(2, 1)).run({"X": cases}).outputs):
        assert np.array_equal(out["Y"].view(np.uint16), want.view(np.uint16))
        assert np.array_equal(out["Z"].view(np.uint32), want.astype(np.float32).view(np.uint32))
    nan = run_program(prog, {"X": np.full(n, np.nan, np.float32)})["Y"]
    assert np.isnan(nan.astype(np.float32)).all()


def test_csl_emits_f16_and_refuses_bf16_by_name(tmp_path):
    for dtype in ("f16", "bf16"):
        op = mica.ops.matmul(12, 9, 8, dtype=dtype)
        prog = mica.compile_affine(op, mesh=(3, 3))
        if dtype == "f16":
            paths = prog.emit("csl", tmp_path / "f16")           # emit validates what it writes
            assert any("pe_program" in str(p) for p in paths)
            assert "[" in (tmp_path / "f16" / "pe_program.csl").read_text()
            assert "f16" in (tmp_path / "f16" / "pe_program.csl").read_text()
        else:
            with pytest.raises(EmitError, match=r"CSL back end: array \w \(tensor .*\) has dtype bf16, which the "
                                                r"WSE cannot compute with.*no bf16 form"):
                prog.emit("csl", tmp_path / "bf16")


def test_metalium_emits_bf16_and_f16_tiles(tmp_path):
    """bf16 arrays become Float16_b tiles, f16 ones Float16 tiles (tests/emit_metalium/test_f16.py runs them)."""
    prog = mica.compile_affine(mica.ops.matmul(32, 32, 32, dtype="bf16"), mesh=(2, 2), target="wormhole")
    paths = prog.emit("metalium", tmp_path / "bf16")        # emit validates what it writes
    assert "Float16_b" in (tmp_path / "bf16" / "host.cpp").read_text()
    assert paths
    prog = mica.compile_affine(mica.ops.matmul(32, 32, 32, dtype="f16"), mesh=(2, 2), target="wormhole")
    assert prog.emit("metalium", tmp_path / "f16")
    assert re.search(r"DataFormat::Float16\b", (tmp_path / "f16" / "host.cpp").read_text())   # not Float16_b
