"""Which updates count as max/min reductions and (value, index) pairs (mica.affine.deps.reductions), and
loop iterators used as values (mica.affine.expr.Index) in the C front end."""

import pytest

import mica
from mica.affine.deps import REDUCTION, SEQUENTIAL, loop_kinds, reductions
from mica.affine.expr import Aff, Index
from mica.testing import assert_matches, run_c, run_program

import numpy as np

ROW = """
void f(int N, int M, float A[N][M], float B[N][M], float m[N]) {
  for (int i = 0; i < N; i++) {
    m[i] = INIT;
    for (int j = 0; j < M; j++)
      m[i] = UPDATE;
  }
}
"""


def _red(update, init="0.0f"):
    prog = mica.affine.from_c(ROW.replace("UPDATE", update).replace("INIT", init), params={"N": 3, "M": 5})
    return prog, reductions(prog).get("S1")


@pytest.mark.parametrize("update,op", [
    ("fmaxf(m[i], A[i][j])", "max"), ("fmaxf(A[i][j], m[i])", "max"), ("fmax(m[i], A[i][j] * 2.0f)", "max"),
    ("fminf(m[i], A[i][j])", "min"), ("fmin(A[i][j] - B[i][j], m[i])", "min"),
    ("A[i][j] > m[i] ? A[i][j] : m[i]", "max"), ("A[i][j] >= m[i] ? A[i][j] : m[i]", "max"),
    ("m[i] < A[i][j] ? A[i][j] : m[i]", "max"), ("m[i] > A[i][j] ? m[i] : A[i][j]", "max"),
    ("A[i][j] < m[i] ? m[i] : A[i][j]", "max"), ("A[i][j] <= m[i] ? m[i] : A[i][j]", "max"),
    ("A[i][j] < m[i] ? A[i][j] : m[i]", "min"), ("m[i] > A[i][j] ? A[i][j] : m[i]", "min"),
    ("m[i] <= A[i][j] ? m[i] : A[i][j]", "min"), ("A[i][j] > m[i] ? m[i] : A[i][j]", "min"),
    ("B[i][j] + A[i][j] > m[i] ? A[i][j] + B[i][j] : m[i]", None),   # not the same expression
    ("B[i][j] + A[i][j] > m[i] ? B[i][j] + A[i][j] : m[i]", "max"),
    ("m[i] + A[i][j]", "+"), ("m[i] * A[i][j]", "*"),
])
def test_what_is_a_max_or_min_reduction(update, op):
    prog, red = _red(update)
    assert (red.op if red else None) == op
    if op is not None:
        assert loop_kinds(prog)["S1"]["j"] == REDUCTION
        assert red.array == "m" and red.read_refs and all(prog.statement("S1").access(r).array == "m"
                                                           for r in red.read_refs)


@pytest.mark.parametrize("update", [
    "fmaxf(m[i], A[i][j] + m[i])",            # e reads X
    "fmaxf(A[i][j], B[i][j])",                # no accumulator
    "A[i][j] > B[i][j] ? A[i][j] : m[i]",     # the condition does not compare with X
    "A[i][j] > m[i] ? B[i][j] : m[i]",        # picks another value than the one compared
    "A[i][j] == m[i] ? A[i][j] : m[i]",       # not an order
    "A[i][j] > m[i] ? A[i][j] : m[i] + 1.0f",  # the kept branch is not X
    "m[i] - A[i][j]", "A[i][j] / m[i]",
])
def test_what_is_not(update):
    prog, red = _red(update)
    assert red is None
    assert loop_kinds(prog)["S1"]["j"] == SEQUENTIAL


ARG = """
void f(int N, int M, float d[N][M], float best[N], float idx[N]) {
  for (int i = 0; i < N; i++) {
    best[i] = INFINITY;
    idx[i] = -1.0f;
    for (int j = 0; j < M; j++) {
      IDX;
      BEST;
    }
  }
}
"""


def _pair(idx, best):
    prog = mica.affine.from_c(ARG.replace("IDX", idx).replace("BEST", best), params={"N": 3, "M": 5})
    return prog, reductions(prog)


@pytest.mark.parametrize("idx,best,op,strict", [
    ("idx[i] = d[i][j] < best[i] ? j : idx[i]", "best[i] = d[i][j] < best[i] ? d[i][j] : best[i]", "min", True),
    ("idx[i] = d[i][j] <= best[i] ? j : idx[i]", "best[i] = d[i][j] <= best[i] ? d[i][j] : best[i]", "min", False),
    ("idx[i] = best[i] > d[i][j] ? j : idx[i]", "best[i] = d[i][j] < best[i] ? d[i][j] : best[i]", "min", True),
    ("idx[i] = d[i][j] >= best[i] ? idx[i] : j", "best[i] = d[i][j] < best[i] ? d[i][j] : best[i]", "min", True),
    ("idx[i] = d[i][j] > best[i] ? j : idx[i]", "best[i] = d[i][j] > best[i] ? d[i][j] : best[i]", "max", True),
    ("idx[i] = d[i][j] >= best[i] ? j + 1 : idx[i]", "best[i] = best[i] <= d[i][j] ? d[i][j] : best[i]", "max",
     False),
])
def test_arg_pairs(idx, best, op, strict):
    prog, reds = _pair(idx, best)
    b, a = reds["S3"], reds["S2"]
    assert (b.op, b.partner, b.strict) == (op, "S2", strict)
    assert (a.op, a.array, a.partner, a.strict) == ("arg" + op, "idx", "S3", strict)
    kinds = loop_kinds(prog)
    assert kinds["S2"]["j"] == REDUCTION and kinds["S3"]["j"] == REDUCTION


@pytest.mark.parametrize("idx,best", [
    # the conditions differ
    ("idx[i] = d[i][j] < best[i] ? j : idx[i]", "best[i] = d[i][j] <= best[i] ? d[i][j] : best[i]"),
    ("idx[i] = d[i][j] > best[i] ? j : idx[i]", "best[i] = d[i][j] < best[i] ? d[i][j] : best[i]"),
    # the index statement after the value one (its condition reads the updated value)
    ("best[i] = d[i][j] < best[i] ? d[i][j] : best[i]", "idx[i] = d[i][j] < best[i] ? j : idx[i]"),
    # the index's new value reads the index
    ("idx[i] = d[i][j] < best[i] ? idx[i] + 1.0f : idx[i]", "best[i] = d[i][j] < best[i] ? d[i][j] : best[i]"),
])
def test_not_pairs(idx, best):
    prog, reds = _pair(idx, best)
    assert not any(r.partner for r in reds.values())


def test_iterators_as_values_are_affine_index_nodes_and_match_c():
    src = """
void f(int N, int M, float A[N][M], double s[N]) {
  for (int i = 0; i < N; i++)
    for (int j = M - 1; j >= 0; j--)
      A[i][j] = A[i][j] * (float)(i - j) + j * 0.5f + (2 * i + 1) - (float)N;
  for (int i = 0; i < N; i++) {
    s[i] = 0.0;
    for (int j = 0; j < M; j++)
      s[i] = s[i] + (double)j * A[i][j] - i;
  }
}
"""
    prog = mica.affine.from_c(src, params={"N": 4, "M": 7})
    idx = [e for e in prog.statements[0].expr.walk() if isinstance(e, Index)]
    assert Index(Aff.of({"i": 1, "j": -1})) in idx and Index(Aff.of({"i": 2}, 1)) in idx
    ins = {"A": np.random.default_rng(0).uniform(-1, 1, (4, 7)).astype(np.float32)}
    want = run_c(src, "f", ins, {"N": 4, "M": 7})
    assert_matches(run_program(prog, ins), want, rtol=1e-6)
    got = mica.compile_affine(prog, mesh=(3, 2), target="generic").run(ins).outputs
    assert_matches(got, want, rtol=1e-6)
