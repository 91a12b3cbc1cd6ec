"""Fused bodies (mica.tiling.mapping.fused_body): a recurrence through scalars inside the main statement's
innermost loop runs interleaved on each core; independent statements of that body are not fused."""

import mica
from mica.affine.privatise import privatise
from mica.errors import ScheduleError
from mica.tiling.legality import check_legal
from mica.tiling.mapping import derive_schedule, fused_body

ROWS = """
void rows(double X[9][5], double Y[9][5]) {
  double m, p;
  for (int i = 0; i < 9; i++) { m = 0.0; p = 0.0;
    for (int j = 0; j < 5; j++) { Y[i][j] = X[i][j] + m * 0.5 + p; p = m; m = Y[i][j]; } }
}"""

TWO_SUMS = """
void two(double A[9][5], double B[9][5], double t[9], double u[9]) {
  for (int i = 0; i < 9; i++) { t[i] = 0.0; u[i] = 0.0;
    for (int j = 0; j < 5; j++) { t[i] += A[i][j]; u[i] += B[i][j]; } }
}"""


def test_a_recurrence_through_scalars_is_fused_and_legal_over_its_parallel_loop():
    prog = privatise(mica.affine.from_c(ROWS))
    sched = derive_schedule(prog, (3, 1), assignment=[("i", "x")])
    assert [s.name for s in fused_body(prog, sched)] == ["S2", "S3", "S4"]
    check_legal(prog, sched)                       # i spread over 3 cores, j in order on each


def test_unprivatised_recurrence_stays_illegal_to_spread():
    prog = mica.affine.from_c(ROWS)
    try:
        sched = derive_schedule(prog, (3, 1), assignment=[("i", "x")])
        check_legal(prog, sched)
    except ScheduleError:
        return
    raise AssertionError("spreading i with m and p shared by every row must be refused")


def test_independent_statements_of_one_body_are_not_fused():
    prog = mica.affine.from_c(TWO_SUMS)
    sched = derive_schedule(prog, (3, 1), assignment=[("i", "x")])
    assert [s.name for s in fused_body(prog, sched)] == ["S3"]
