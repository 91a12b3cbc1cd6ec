"""isl work has a budget: a step that runs out ends in a BudgetError (a ScheduleError) naming the step,
never a hang, and isl is usable again afterwards."""

import time

import pytest

import mica
from mica.affine import isl_names
from mica.pipeline import LOWERING
from mica.affine.isl_names import isl_budget, iset
from mica.errors import BudgetError, ScheduleError

GEMM = """
void gemm(int n, double alpha, double C[16][16], double A[16][16], double B[16][16]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
}"""


def _hard():
    """Set operations whose cost grows quickly: unions of sets with existentials, coalesced."""
    s = iset("{ [i, j, k] : 0 <= i < 100 and 0 <= j < 100 and 0 <= k < 100 and "
             "exists (a, b: i = 3a + 2b and j = 5a - 7b + k) }")
    for n in range(40):
        s = s.union(iset(f"{{ [i, j, k] : 0 <= i < 100 and 0 <= j < 100 and "
                         f"exists (a, b: i = 3a + {n} and j = 5a - 7b + k) }}")).coalesce()
    return s


def test_running_out_names_the_step_and_isl_recovers():
    with pytest.raises(BudgetError, match="my step needed more than its budget of 20,000") as info:
        with isl_budget("my step", 20_000):
            _hard()
    assert info.value.step == "my step" and isinstance(info.value, ScheduleError)
    # The context is usable and unlimited again.
    assert not iset("{ [i] : 0 <= i < 3 }").is_empty()
    with isl_budget("enough", 10**9):
        _hard()


def test_other_isl_failures_are_wrapped_with_the_step():
    import islpy as isl
    with pytest.raises(ScheduleError, match="my step: isl failed"):
        with isl_budget("my step"):
            a = iset("{ [i] : 0 <= i < 3 }")
            b = iset("{ [i, j] : 0 <= i < 3 and 0 <= j < 2 }")
            a.intersect(b)                  # spaces do not match: isl raises
    assert isl.DEFAULT_CONTEXT.get_max_operations() == 0


def test_nested_steps_name_the_innermost():
    with pytest.raises(BudgetError, match="inner"):
        with isl_budget("outer", 10**9):
            with isl_budget("inner", 10_000):
                _hard()


def test_a_compile_that_runs_out_says_which_step(monkeypatch):
    monkeypatch.setattr(isl_names, "DEFAULT_BUDGET", 2_000)
    t0 = time.perf_counter()
    with pytest.raises(BudgetError) as info:
        mica.compile_affine(GEMM, mesh=(4, 4), params={"n": 16})
    assert time.perf_counter() - t0 < 30
    assert info.value.step.startswith("front end") or info.value.step == "dependence analysis"
    assert "MICA_ISL_BUDGET" in str(info.value)


def test_search_candidates_that_run_out_are_rejected_with_the_reason(monkeypatch):
    prog = mica.affine.from_c(GEMM, params={"n": 16})
    from mica.tiling import search as search_mod
    from mica.targets import get_target
    calls = []
    real = search_mod.derive_schedule

    def expensive(*a, **kw):
        calls.append(1)
        if len(calls) == 1:
            _hard()                     # the first candidate blows its budget
        return real(*a, **kw)
    monkeypatch.setattr(search_mod, "derive_schedule", expensive)
    monkeypatch.setattr(isl_names, "DEFAULT_BUDGET", 200_000)
    sched, report = search_mod.search(prog, (4, 4), get_target("wse2"), LOWERING)
    reasons = [c.rejected for c in report.candidates if c.cycles is None]
    assert any("needed more than its budget" in r for r in reasons)
    assert sched.space


PATHOLOGICAL = """
void p(double A[400][400][400], double B[400][400][400]) {
  for (int a = 0; a < 8; a++)
   for (int b = a; b < 16; b++)
    for (int c = b - a; c < 24; c++)
     for (int d = 0; d <= c + a - b; d++)
      for (int e = d; e < 8 + d && e < 30; e++)
       for (int f = a + e; f < 40 && f <= b + d + 7; f++) {
        A[a + 2*b + c][d + 3*e + f][a + b + c + d + e] += B[b + c + 3*f][2*d + e][a + e + f];
        B[a + c + e + 2*f][b + d + f][c + 2*e] = A[e + a + f][3*b + c][d + 5 + f];
      }
}"""


@pytest.mark.slow
def test_pathological_nest_ends_in_a_budget_error_with_the_default_budget():
    """Six coupled triangular loops with skewed subscripts: exact dataflow did not finish in 2 minutes
    without a budget; with the default one it stops in about a minute, naming the step."""
    with pytest.raises(BudgetError) as info:
        mica.compile_affine(PATHOLOGICAL, mesh=(4, 4))
    assert info.value.step == "dependence analysis"
