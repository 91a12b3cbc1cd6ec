"""Random programs with runtime parameters against the C compiled natively: a parameter in a loop bound, a
condition, a written subscript (a loop over the range with a guard), a read subscript (a gather), a guarded
max reduction — random sizes, ranges, meshes and values (the ranges' edges included), compiled once per
program and run at several values."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mica
from mica.testing import run_c

#: Statement templates over arrays A[N], B[N][M], T[R][M], C[R][M], S[N], E[N] and parameter p in [lo, hi).
PIECES = {
    "bound": "for (int i = 0; i < N; i++) for (int j = 0; j < M && j <= p - LO; j++) S[i] += B[i][j];",
    "condition": "for (int i = 0; i < N; i++) E[i] = i < p - LO ? A[i] * 2.0 : A[i] + B[i][0];",
    "write": "for (int j = 0; j < M; j++) C[p][j] = B[0][j] * 0.5 + A[0];",
    "read": "for (int i = 0; i < N; i++) for (int j = 0; j < M; j++) B[i][j] = B[i][j] + T[p][j] * A[i];",
    "max": "for (int i = 0; i < N; i++) for (int j = 0; j < M; j++) if (j >= p - LO) S[i] = fmax(S[i], B[i][j]);",
}


def _source(pieces, n, m, lo, hi) -> str:
    body = "\n  ".join(PIECES[k] for k in pieces)
    r = hi                                    # rows of T and C: every value of p indexes one
    return (f"#include <math.h>\n#define N {n}\n#define M {m}\n#define LO {lo}\n"
            f"void f(int p, double A[N], double B[N][M], double T[{r}][M], double C[{r}][M], double S[N], "
            f"double E[N]) {{\n  {body}\n}}\n")


@settings(max_examples=24, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pieces=st.lists(st.sampled_from(sorted(PIECES)), min_size=1, max_size=3, unique=True),
       n=st.integers(2, 9), m=st.integers(2, 9), lo=st.integers(0, 3), width=st.integers(1, 7),
       mesh=st.sampled_from([(1, 1), (2, 2), (3, 2), (4, 3), (5, 2)]), seed=st.integers(0, 2**16))
def test_random_runtime_programs_match_native_c(pieces, n, m, lo, width, mesh, seed):
    hi = lo + width
    src = _source(pieces, n, m, lo, hi)
    prog = mica.compile_affine(src, mesh=mesh, runtime={"p": (lo, hi)})
    rng = np.random.default_rng(seed)
    ins = {"A": rng.uniform(0.5, 1.5, n), "B": rng.uniform(0.5, 1.5, (n, m)), "T": rng.uniform(0.5, 1.5, (hi, m)),
           "C": rng.uniform(0.5, 1.5, (hi, m)), "S": rng.uniform(0.5, 1.5, n), "E": rng.uniform(0.5, 1.5, n)}
    for p in sorted({lo, hi - 1, int(rng.integers(lo, hi))}):
        want = run_c(src, "f", {**ins, "p": p})
        got = prog.run({**{k: v for k, v in ins.items() if k in prog.program.inputs}, "p": p}).outputs
        for name, ref in want.items():
            np.testing.assert_allclose(got[name], ref, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} at p = {p}, mesh {mesh}:\n{src}")
