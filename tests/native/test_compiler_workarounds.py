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
