"""Workarounds for host-compiler bugs that would make MICA's answers wrong."""

import numpy as np

import mica
from mica.testing import run_c

SRC = """
void kernel(double A[8][7]) {
  for (int i = 0; i < 6; i++)
    for (int j = 1; j < 6; ++j)
      A[i + 1][j + 1] -= A[i][j];
}"""


def _python(A):
    A = A.copy()
    for i in range(6):
        for j in range(1, 6):
            A[i + 1][j + 1] -= A[i][j]
    return A


def test_gcc_outer_loop_vectorizer_is_kept_off():
    """GCC 12.2 -O3 vectorizes the outer loop across its (1, 1) dependence (wrong results); every library
    MICA builds — the reference C and the generated kernels — must get this right."""
    A = np.fromfunction(lambda i, j: ((i * 7 + j) * 37 % 11) / 7.0, (8, 7))
    want = _python(A)
    np.testing.assert_array_equal(run_c(SRC, "kernel", {"A": A})["A"], want)
    prog = mica.affine.from_c(SRC)
    got = mica.compile_affine(prog, mesh=(2, 1), target="wormhole").run({"A": A}).outputs["A"]
    np.testing.assert_array_equal(got, want)


DIST = """
void kernel(int n, float beta, float A[5], float B[n + 1]) {
  for (int i = 0; i < 3; i += 1) {
    A[i + 2] += beta + A[i + 1] + (A[i] * B[i]);
    for (int j = (i + 2 < 8 ? i + 2 : 8) - 1; j >= i; j--)
      B[j + 2] = 1.5f;
  }
}"""


def test_gcc_loop_distribution_is_kept_off():
    """GCC 12.2 -O3's loop distribution reorders the store loop into B before the reads of B (wrong
    results, fuzz bug 14); the reference and the kernels must both follow the C."""
    A = np.array([0.85, 0.64, 0.5, 0.3, 0.2], np.float32)
    B = np.array([0.04, 0.07, 0.5, 0.3, 0.2, 0.1, 0.9], np.float32)
    a, b = A.copy(), B.copy()
    for i in range(3):
        a[i + 2] = np.float32(a[i + 2] + np.float32(np.float32(np.float32(0.7) + a[i + 1]) + np.float32(a[i] * b[i])))
        for j in range(min(i + 2, 8) - 1, i - 1, -1):
            b[j + 2] = np.float32(1.5)
    ins = {"A": A, "B": B, "beta": float(np.float32(0.7))}
    np.testing.assert_array_equal(run_c(DIST, "kernel", dict(ins), {"n": 6})["A"], a)
    prog = mica.affine.from_c(DIST, params={"n": 6})
    got = mica.compile_affine(prog, mesh=(1, 2), target="wormhole").run(ins).outputs["A"]
    np.testing.assert_array_equal(got, a)


HEADER = '''
void kernel(int n, int m, float beta, float A[11][11]) {
  for (int i = 0; i < m; i++)
    for (int j = 1; j < n; ++j) {
      A[j + 2][i] = A[j][i + 1];
      A[i][j + 2] = beta + A[i][j];
    }
}'''


def test_gcc_loop_header_copying_is_kept_off():
    """GCC 12.2 -O3 -fno-tree-loop-vectorize -fno-strict-aliasing miscompiles MICA's one-core kernel and
    sequential reference of this nest (fuzz bug 15: A[10][0] read after a later write of A[8][1]);
    every build has -fno-tree-ch. Both follow the C, checked against numpy running the same order."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((11, 11)).astype(np.float32)
    want = A.copy()
    for i in range(7):
        for j in range(1, 9):
            want[j + 2][i] = want[j][i + 1]
            want[i][j + 2] = np.float32(0.5) + want[i][j]
    ins = {"A": A, "beta": 0.5}
    prog = mica.affine.from_c(HEADER, params={"n": 9, "m": 7})
    np.testing.assert_array_equal(run_c(HEADER, "kernel", dict(ins), {"n": 9, "m": 7})["A"], want)
    np.testing.assert_array_equal(mica.testing.run_program(prog, dict(ins))["A"], want)
    got = mica.compile_affine(prog, mesh=(2, 4), target="wormhole").run(ins).outputs["A"]
    np.testing.assert_array_equal(got, want)
