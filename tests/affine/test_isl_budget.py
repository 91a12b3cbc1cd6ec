"""isl work has a budget: a step that runs out ends in a BudgetError (a ScheduleError) naming the step,
never a hang, and isl is usable again afterwards."""

import time

import pytest

import mica
from mica.affine import isl_names
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
    sched, report = search_mod.search(prog, (4, 4), get_target("wse2"))
    reasons = [c.rejected for c in report.candidates if c.cycles is None]
    assert any("needed more than its budget" in r for r in reasons)
    assert sched.space
