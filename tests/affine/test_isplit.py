"""Index-set splitting (mica.affine.isplit): which pivot loops are cut, the pieces' domains and positions, and that
the split program computes exactly what the C does (run in order against the natively compiled C, with
negative weights so that the pivot row and column themselves change during their step)."""

import numpy as np
import pytest

from mica.affine.expr import Aff
from mica.affine.from_c import from_c
from mica.affine.isplit import Split, pivots, split_program, split_programs
from mica.testing import run_c, run_program

FW = """
void fw(int n, double P[n][n], double D[n]) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        P[i][j] = P[i][j] < P[i][k] + P[k][j] ? P[i][j] : P[i][k] + P[k][j];
    D[k] = P[k][k];
  }
}"""


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(-1.0, 4.0, (n, n))
    p[np.diag_indices(n)] = rng.uniform(-0.5, 0.5, n)      # negative diagonal: row k changes in step k
    return {"P": p, "D": np.zeros(n)}


def test_the_pivot_row_and_column_are_found():
    prog = from_c(FW, "fw", params={"n": 7})
    assert pivots(prog) == (Split(0, ("k", "i", "j"), Aff.var("k")), Split(0, ("k", "i"), Aff.var("k")))


def test_a_cut_keeps_the_order_and_moves_what_follows():
    prog = from_c(FW, "fw", params={"n": 7})
    rows = split_program(prog, Split(0, ("k", "i"), Aff.var("k")))
    assert [(s.name, s.order) for s in rows.statements] == [
        ("S0_lt", (0, "k", 0, "i", 0, "j", 0)), ("S0_eq", (0, "k", 1, "i", 0, "j", 0)),
        ("S0_gt", (0, "k", 2, "i", 0, "j", 0)), ("S1", (0, "k", 3))]
    eq = rows.statement("S0_eq")
    assert eq.domain_set.count_val().to_python() == 7 * 7
    assert [a.ref for a in eq.reads] == [f"S0_eq_r{k}" for k in range(len(eq.reads))]
    assert set(eq.expr.refs()) == {a.ref for a in eq.reads}
    ins = _inputs(7)
    want = run_c(FW, "fw", ins, {"n": 7})
    for how, q in split_programs(prog):
        got = run_program(q, ins)
        assert all(np.array_equal(got[k], want[k]) for k in want), how
    assert len(split_programs(prog)) == 3                       # j, i, and both (nine pieces)
    assert len(split_programs(prog)[-1][1].statements) == 10


def test_a_downward_loop_runs_its_pieces_from_the_top():
    src = """
void f(int n, double P[n][n]) {
  for (int k = 0; k < n; k++)
    for (int i = n - 1; i >= 0; i--)
      for (int j = 0; j < n; j++)
        P[i][j] = P[i][j] * 0.5 + P[k][j];
}"""
    prog = from_c(src, "f", params={"n": 6})
    (split,) = [s for s in pivots(prog) if s.loop == "i"]
    q = split_program(prog, split)
    assert [s.name for s in q.statements] == ["S0_gt", "S0_eq", "S0_lt"]
    ins = {"P": np.random.default_rng(1).standard_normal((6, 6))}
    assert np.array_equal(run_program(q, ins)["P"], run_c(src, "f", ins, {"n": 6})["P"])


def test_one_iteration_or_a_pivot_outside_the_loop_is_left_alone():
    assert split_programs(from_c(FW, "fw", params={"n": 1})) == []      # k = i = j = 0: nothing before or after
    # The pivot lies outside the loop's range (i runs from k + 1): one piece, nothing split.
    src = """
void f(int n, double P[n][n]) {
  for (int k = 0; k < n; k++)
    for (int i = k + 1; i < n; i++)
      for (int j = 0; j < n; j++)
        P[i][j] = P[i][j] - P[k][j];
}"""
    prog = from_c(src, "f", params={"n": 6})
    assert any(s.loop == "i" for s in pivots(prog))
    assert all(split_program(prog, s) is prog for s in pivots(prog) if s.loop == "i")
    assert split_programs(prog) == []


@pytest.mark.parametrize("n", [2, 3, 9])
def test_small_and_odd_sizes_compute_what_the_c_does(n):
    prog = from_c(FW, "fw", params={"n": n})
    ins = _inputs(n, seed=n)
    want = run_c(FW, "fw", ins, {"n": n})
    assert len(split_programs(prog)) == 3
    for how, q in split_programs(prog):
        got = run_program(q, ins)
        assert all(np.array_equal(got[k], want[k]) for k in want), how
