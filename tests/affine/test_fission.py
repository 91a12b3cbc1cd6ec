"""Loop fission: the finest legal split of a nest into operators, checked against the dependences."""

import numpy as np
import pytest

import mica
from mica.affine.fission import fission, statement_graph
from mica.errors import ScheduleError
from mica.testing import run_c
from mica.tiling.split import phase_operators, split_operators
from mica.tiling.mapping import derive_schedule
from mica.tiling.schedule import Schedule

import samples

ATAX = samples.atax()


def _names(groups):
    return [[s.name for s in g] for g in groups]


def test_atax_nest_splits_into_its_two_products():
    prog = mica.affine.from_c(ATAX, params={"m": 19, "n": 23})
    assert _names(split_operators(prog)) == [["S0"], ["S1", "S2", "S3"]]
    # tmp = 0 stays with the reduction into tmp; y += A^T tmp becomes its own operator.
    assert _names(split_operators(prog, fine=True)) == [["S0"], ["S1", "S2"], ["S3"]]


def test_a_later_statement_feeding_an_earlier_one_moves_first():
    prog = mica.affine.from_c('''
void reo(int n, double a[40], double b[40], double x[40]) {
  for (int i = 0; i < n; i++) { if (i > 0) a[i] = b[i - 1] + 1.0; b[i] = x[i] * 2.0; }
}''', params={"n": 40})
    assert statement_graph(prog)["S1"] == {"S0"} and statement_graph(prog)["S0"] == set()
    assert _names(split_operators(prog, fine=True)) == [["S1"], ["S0"]]


def test_a_dependence_cycle_stays_in_one_operator():
    prog = mica.affine.from_c('''
void cyc(int n, double a[40], double b[40]) {
  for (int i = 1; i < n; i++) { a[i] = b[i - 1] + 1.0; b[i] = a[i] * 2.0; }
}''', params={"n": 40})
    assert _names(split_operators(prog, fine=True)) == [["S0", "S1"]]


def test_independent_statements_keep_textual_order_and_matmul_stays_whole():
    prog = mica.affine.from_c('''
void two(int n, double a[40], double b[40], double x[40]) {
  for (int i = 0; i < n; i++) { a[i] = x[i] + 1.0; b[i] = x[i] * 2.0; }
}''', params={"n": 40})
    assert _names(fission(prog, split_operators(prog))) == [["S0"], ["S1"]]
    mm = mica.ops.matmul(8, 8, 8)
    assert _names(split_operators(mm, fine=True)) == _names(split_operators(mm))


def test_phases_that_break_a_dependence_are_refused():
    prog = mica.affine.from_c(ATAX, params={"m": 19, "n": 23})
    ops = split_operators(prog, fine=True)
    from mica.tiling.split import operator_program
    phases = [derive_schedule(operator_program(prog, g, k), (2, 2), assignment=[]) for k, g in enumerate(ops)]
    good = Schedule((2, 2), (), None, (), (), family="operators", phases=tuple(phases))
    assert _names(phase_operators(prog, good)) == _names(ops)
    swapped = good.copy(phases=(phases[0], phases[2], phases[1]))
    with pytest.raises(ScheduleError, match="depends on S2 of the later phase"):
        phase_operators(prog, swapped)
    with pytest.raises(ScheduleError, match="exactly one phase"):
        phase_operators(prog, good.copy(phases=(phases[0], phases[1])))
    with pytest.raises(ScheduleError, match="depends on"):
        mica.compile_affine(prog, mesh=(2, 2), schedule=swapped)


SYMMETRIC_FILL = '''
void symfill(int n, double A[24][16], double C[16][16]) {
  for (int i = 0; i < n; i++) {
    C[i][i] = 1.0;
    for (int j = i + 1; j < n; j++) {
      C[i][j] = 0.0;
      for (int k = 0; k < 24; k++) C[i][j] += A[k][i] * A[k][j];
      C[j][i] = C[i][j];
    }
  }
}'''


def test_writes_to_disjoint_parts_of_one_array_become_operators_of_their_own():
    """The diagonal, the upper triangle (initialised, then accumulated: same elements, one operator) and
    its mirror image below the diagonal write disjoint elements of C: three operators, and run one after
    another they compute what the nest computes (checked against the C compiled natively)."""
    prog = mica.affine.from_c(SYMMETRIC_FILL, params={"n": 16})
    assert _names(split_operators(prog, fine=True)) == [["S0"], ["S1", "S2"], ["S3"]]
    rng = np.random.default_rng(3)
    ins = {"A": rng.random((24, 16)), "C": np.zeros((16, 16))}
    want = run_c(SYMMETRIC_FILL, "symfill", ins, {"n": 16})
    for mesh in ((1, 1), (3, 2), (4, 4)):
        got = mica.compile_affine(prog, mesh=mesh).run({"A": ins["A"]}).outputs
        np.testing.assert_allclose(got["C"], want["C"], rtol=1e-12)
