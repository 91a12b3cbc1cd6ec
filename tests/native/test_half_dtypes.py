"""f16 and bf16 programs in the emulator, differential against numpy references that round the same way.

Semantics under test (mica.codeprint.half): a statement reads its 16-bit operands as f32, computes in f32
and rounds the result to the array's 16-bit type when it stores it. So a matmul rounds C after every
update, in the order the plan runs k: plans that run k ascending (SUMMA) give bit for bit the numpy
reference that rounds per update in ascending k; skewed plans (interleaved, Cannon) start each core's k
loop elsewhere, so their sums are reassociated and are checked against the rigorous bound of two
recursive summations of K terms, ``2 (K + 1) u sum_k |A_ik B_kj|`` (u = 2^-11 for f16, 2^-8 for bf16).
Elementwise GELU and a softmax go through f32 ``tanhf``/``erff``/``expf``, whose numpy counterparts may
differ by an f32 ulp; after rounding to 16 bits the emulator must be within one 16-bit ulp of the numpy
reference, and bit-identical to the program's sequential C (mica.testing.run_program).
"""

import math

import ml_dtypes
import numpy as np
import pytest

import mica
from mica.errors import InputError
from mica.testing import run_c, run_program

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
#: unit roundoff (half an ulp at 1) of each 16-bit type
UNIT = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
#: meshes: two that divide nothing below, one that does divide 12x10
MESHES = [(3, 2), (4, 4), (5, 3)]
C_TYPE = {"f16": "_Float16", "bf16": "__bf16"}


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


def matmul_reference(A: np.ndarray, B: np.ndarray, dtype: str) -> np.ndarray:
    """C = 0, then C = 16-bit(f32(C) + f32(A[:, k]) * f32(B[k])) for k ascending."""
    C = np.zeros((A.shape[0], B.shape[1]), NP[dtype])
    for k in range(A.shape[1]):
        C = (C.astype(np.float32) + A[:, k:k + 1].astype(np.float32) * B[k].astype(np.float32)).astype(NP[dtype])
    return C


def within_ulps(got: np.ndarray, want: np.ndarray, dtype: str, ulps: int = 1) -> None:
    g, w = got.astype(np.float64), want.astype(np.float64)
    tol = ulps * 2 * UNIT[dtype] * np.maximum(np.abs(w), np.finfo(np.float32).tiny)
    bad = np.abs(g - w) > tol
    assert not bad.any(), f"{bad.sum()} elements beyond {ulps} ulp(s): got {g[bad][:4]}, want {w[bad][:4]}"


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_matmul_rounds_every_update_like_the_reference(dtype):
    M, N, K = 13, 10, 37
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (M, K)).astype(NP[dtype])
    B = rng.uniform(-1, 1, (K, N)).astype(NP[dtype])
    op = mica.ops.matmul(M, N, K, dtype=dtype)
    want = matmul_reference(A, B, dtype)
    assert np.array_equal(bits(run_program(op, {"A": A, "B": B})["C"]), bits(want))
    bound = 2 * (K + 1) * UNIT[dtype] * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)))
    for mesh in MESHES:
        res = mica.compile_affine(op, mesh=mesh).run({"A": A, "B": B})
        got = res.outputs["C"]
        assert got.dtype == np.dtype(NP[dtype])
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        assert (err <= bound).all(), f"{mesh}: error {err.max()} beyond the bound"
    # k ascending on every core (SUMMA, a mesh that divides neither M nor N): bit for bit
    mesh = (3, 4)
    res = mica.compile_affine(op, mesh=mesh, schedule=mica.plans.summa(op, mesh)).run({"A": A, "B": B})
    assert np.array_equal(bits(res.outputs["C"]), bits(want))


GELU_C = """
#include <math.h>
typedef {t} half_t;
void gelu(half_t X[N][M], half_t Y[N][M], half_t Z[N][M]) {{
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {{
      Y[i][j] = 0.5f * X[i][j] * (1.0f + tanhf(0.7978845608f * (X[i][j] + 0.044715f * X[i][j] * X[i][j] * X[i][j])));
      Z[i][j] = 0.5f * X[i][j] * (1.0f + erff(X[i][j] * 0.70710678f));
    }}
}}
"""


def gelu_reference(X: np.ndarray, dtype: str):
    x = X.astype(np.float32)
    f = np.float32
    y = f(0.5) * x * (f(1.0) + np.tanh(f(0.7978845608) * (x + f(0.044715) * x * x * x)))
    erf = np.vectorize(lambda v: np.float32(math.erf(float(v))), otypes=[np.float32])
    z = f(0.5) * x * (f(1.0) + erf(x * f(0.70710678)))
    return y.astype(NP[dtype]), z.astype(NP[dtype])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gelu_with_tanhf_and_erff(dtype):
    N, M = 11, 14
    prog_text = GELU_C.format(t=C_TYPE[dtype])
    op = mica.affine.from_c(prog_text, defines={"N": N, "M": M})
    assert {a.name: a.dtype for a in op.arrays} == {"X": dtype, "Y": dtype, "Z": dtype}
    X = np.random.default_rng(4).uniform(-3, 3, (N, M)).astype(NP[dtype])
    seq = run_program(op, {"X": X})
    y, z = gelu_reference(X, dtype)
    within_ulps(seq["Y"], y, dtype)
    within_ulps(seq["Z"], z, dtype)
    if dtype == "f16":   # GCC 12 has _Float16 arithmetic (not __bf16 arithmetic): the user's C, natively
        native = run_c(prog_text, "gelu", {"X": X}, defines={"N": N, "M": M})
        assert all(np.array_equal(bits(native[n]), bits(seq[n])) for n in "YZ")
    for mesh in MESHES:
        out = mica.compile_affine(op, mesh=mesh).run({"X": X}).outputs
        assert all(np.array_equal(bits(out[n]), bits(seq[n])) for n in "YZ"), mesh


SOFTMAX_C = """
#include <math.h>
void softmax(T X[N][M], T Y[N][M]) {
  T mx[N];
  T s[N];
  for (int i = 0; i < N; i++) {
    mx[i] = -INFINITY;
    for (int j = 0; j < M; j++)
      mx[i] = fmaxf(mx[i], X[i][j]);
    s[i] = 0.0f;
    for (int j = 0; j < M; j++)
      s[i] += expf(X[i][j] - mx[i]);
    for (int j = 0; j < M; j++)
      Y[i][j] = expf(X[i][j] - mx[i]) / s[i];
  }
}
"""


def softmax_reference(X: np.ndarray, dtype: str) -> np.ndarray:
    """The C above with numpy: every store rounded to the 16-bit type, arithmetic in f32, j ascending."""
    t, x = NP[dtype], X.astype(np.float32)
    mx = np.full(X.shape[0], -np.inf, t)
    for j in range(X.shape[1]):
        mx = np.fmax(mx.astype(np.float32), x[:, j]).astype(t)
    s = np.zeros(X.shape[0], t)
    m32 = mx.astype(np.float32)
    for j in range(X.shape[1]):
        s = (s.astype(np.float32) + np.exp(x[:, j] - m32)).astype(t)
    return (np.exp(x - m32[:, None]) / s.astype(np.float32)[:, None]).astype(t)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_softmax_with_minus_infinity(dtype):
    N, M = 7, 12
    op = mica.affine.from_c(SOFTMAX_C, defines={"N": N, "M": M, "T": C_TYPE[dtype]})
    X = np.random.default_rng(5).uniform(-4, 4, (N, M)).astype(NP[dtype])
    seq = run_program(op, {"X": X})["Y"]
    want = softmax_reference(X, dtype)
    # expf against np.exp (an f32 ulp) feeds a sum of M terms rounded per update: a few 16-bit ulps
    within_ulps(seq, want, dtype, ulps=4)
    for mesh in MESHES:
        got = mica.compile_affine(op, mesh=mesh).run({"X": X}).outputs["Y"]
        # the plan may combine the row sums across cores in another order: the sum's reassociation bound
        within_ulps(got, seq, dtype, ulps=2 * M)


def test_bf16_input_given_as_float32_says_how_to_convert():
    op = mica.ops.add((4, 4), dtype="bf16")
    prog = mica.compile_affine(op, mesh=(2, 2))
    A = np.ones((4, 4), np.float32)
    with pytest.raises(InputError, match=r"input 'A' has dtype float32, expected bfloat16 \(bf16\); convert it "
                                         r"with \.astype\(ml_dtypes\.bfloat16\)"):
        prog.run({"A": A, "B": A.astype(ml_dtypes.bfloat16)})


def test_scaled_add_rounds_its_16_bit_scalar_like_the_reference():
    for dtype in ("f16", "bf16"):
        op = mica.ops.scaled_add((9, 7), dtype=dtype)
        rng = np.random.default_rng(6)
        ins = {"A": rng.uniform(-1, 1, (9, 7)).astype(NP[dtype]), "B": rng.uniform(-1, 1, (9, 7)).astype(NP[dtype]),
               "alpha": 0.1}
        got = mica.compile_affine(op, mesh=(2, 3)).run(ins).outputs["C"]
        assert np.array_equal(bits(got), bits(run_program(op, ins)["C"]))
        a = np.float32(0.1).astype(NP[dtype]).astype(np.float32)
        want = (a * ins["A"].astype(np.float32) + ins["B"].astype(np.float32)).astype(NP[dtype])
        assert np.array_equal(bits(got), bits(want))
