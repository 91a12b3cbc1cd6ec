"""Loop alignment (mica.affine.align): the main nest of trisolv, lu and cholesky rewritten with another loop
of its deepest statement outermost. Every alignment isl accepts computes bit for bit what the original C
computes — run in order, and spread over cores by a forced plan whose legality the pipeline proves."""

import islpy as isl
import numpy as np
import pytest

from frontend.frontend_util import MANIFEST, kernel_function, kernel_source, make_inputs
import mica
from mica.affine.align import BEFORE, _realigned, aligned_program, alignments
from mica.affine.from_c import from_c
from mica.tiling.mapping import derive_schedule
from mica.testing import run_c, run_program


def _prog(name):
    spec = MANIFEST[name]
    return from_c(kernel_source(name), kernel_function(name), params=spec["params"], filename=f"{name}.c")


def _native(name):
    spec = MANIFEST[name]
    src, fn = kernel_source(name), kernel_function(name)
    ins = make_inputs(src, fn, spec["params"], spec, seed=3)
    return ins, run_c(src, fn, ins, spec["params"])


def test_trisolv_runs_column_by_column():
    (al,) = alignments(_prog("trisolv"))
    assert al.loop == "j"
    assert dict(al.choices) == {"S0": BEFORE, "S1": "j", "S2": "i"}
    assert al.order == ("S2", "S1")            # x[j] /= L[j][j] before the updates that read x[j]
    p = aligned_program(_prog("trisolv"), al)
    assert [(s.name, s.loops, s.order) for s in p.statements] == [
        ("S0", ("i",), (0, "i", 0)), ("S2", ("j",), (1, "j", 0)), ("S1", ("j", "i"), (1, "j", 1, "i", 0))]


def test_lu_aligned_by_k_is_right_looking():
    al = next(a for a in alignments(_prog("lu")) if a.loop == "k")
    assert dict(al.choices) == {"S0": "k", "S1": "j", "S2": "k"}    # S1: A[i][j] /= A[j][j] at step j
    p = aligned_program(_prog("lu"), al)
    assert [(s.name, s.loops) for s in p.statements] == [
        ("S1", ("k", "i")), ("S0", ("k", "i", "j")), ("S2", ("k", "i", "j"))]
    assert p.statement("S1").write.index[1].single_var() == "k"     # the pivot column k


def test_a_loop_named_like_the_outer_one_is_renamed():
    # Cholesky's A[i][i] -= A[i][k]*A[i][k] aligned by its i under an outer loop named k: its own k becomes k_.
    s = _prog("cholesky").statement("S2")
    assert s.loops == ("i", "k")
    moved = _realigned(s, "i", "k", 1, 0)
    assert moved.loops == ("k", "k_") and moved.order == (1, "k", 0, "k_", 0)
    assert [str(ix) for ix in moved.write.index] == ["k", "k"]
    assert [str(ix) for a in moved.reads for ix in a.index] == ["k", "k", "k", "k_", "k", "k_"]
    assert moved.domain_set.is_equal(isl.Set("{ S2[k, k_] : 0 <= k_ < k <= 23 }"))


@pytest.mark.parametrize("name", ["trisolv", "lu", "cholesky"])
def test_aligned_programs_are_bit_identical_to_native_c(name):
    ins, want = _native(name)
    found = alignments(_prog(name))
    assert found
    for al in found:
        got = run_program(aligned_program(_prog(name), al), ins)
        assert all(np.array_equal(got[k], want[k]) for k in want), al.describe()


@pytest.mark.parametrize("name, loop, mesh, assignment", [
    ("cholesky", "k", (2, 2), [("i", "y"), ("j", "x")]),
    ("lu", "k", (2, 1), [("j", "x")]),
])
def test_aligned_nest_spread_by_a_forced_plan_matches_native_c(name, loop, mesh, assignment):
    # The pipeline proves the plan legal (mica.tiling.legality) on the aligned program; the original order
    # has no legal plan spreading these loops.
    prog = aligned_program(_prog(name), next(a for a in alignments(_prog(name)) if a.loop == loop))
    sched = derive_schedule(prog, mesh, assignment=assignment)
    compiled = mica.compile_affine(prog, mesh=mesh, schedule=sched)
    assert compiled.cost.cores > 1
    ins, want = _native(name)
    res = compiled.run(ins, threads=2)
    for k in want:
        assert np.array_equal(res.outputs[k], want[k]), k


SKEWED = """
void skewed(float A[16][16]) {
  for (int i = 1; i < 16; i++)
    for (int j = 1; j < 15; j++)
      A[i][j] = A[i - 1][j + 1] + A[i][j - 1];
}"""


def test_an_alignment_that_would_break_a_dependence_is_refused():
    # With j outermost, A[i-1][j+1] would be overwritten after A[i][j] reads it: isl refuses it.
    assert alignments(from_c(SKEWED, "skewed")) == ()


def test_gemm_alignments_hoist_the_scaling_and_keep_the_values():
    prog = from_c("""
void gemm(float C[6][5], float A[6][4], float B[4][5]) {
  for (int i = 0; i < 6; i++) { for (int j = 0; j < 5; j++) C[i][j] *= 0.5f;
    for (int k = 0; k < 4; k++) for (int j = 0; j < 5; j++) C[i][j] += A[i][k] * B[k][j]; } }""", "gemm")
    found = {a.loop: dict(a.choices) for a in alignments(prog)}
    assert found["k"]["S0"] == BEFORE        # every C[i][j] scaled before the first update at k = 0
    rng = np.random.default_rng(0)
    ins = {"C": rng.random((6, 5), np.float32), "A": rng.random((6, 4), np.float32),
           "B": rng.random((4, 5), np.float32)}
    want = run_program(prog, ins)
    for al in alignments(prog):
        got = run_program(aligned_program(prog, al), ins)
        assert np.array_equal(got["C"], want["C"])


LUD = """
void lud(int n, double A[n][n]) {
  int i, j, k; double w;
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      w = A[i][j];
      for (k = 0; k < j; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w / A[j][j];
    }
    for (j = i; j < n; j++) {
      w = A[i][j];
      for (k = 0; k < i; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w;
    }
  }
}"""


def test_both_priorities_are_tried_so_the_privatised_factorisation_runs_right_looking():
    # ludcmp's factorisation with its scalar w privatised: the fewest-hoisted alignment runs each dot product
    # whole at the step of its column (left-looking, no plan spreads it); the other priority hoists the two
    # initialisations of w and runs every update at the step of its k, as lu's right-looking order does.
    from mica.affine.privatise import privatise
    prog = privatise(from_c(LUD, "lud", params={"n": 12}))
    found = {dict(a.choices)["S1"]: a for a in alignments(prog) if a.loop == "k"}
    assert set(found) == {"j", "k"}
    right = dict(found["k"].choices)
    assert right["S0"] == right["S3"] == BEFORE and right["S4"] == "k"


@pytest.mark.parametrize("n, mesh", [(12, (4, 4)), (13, (3, 5)), pytest.param(10, (8, 8), marks=pytest.mark.slow)])
def test_the_privatised_factorisation_spreads_and_matches_native_c(n, mesh):
    prog = from_c(LUD, "lud", params={"n": n})
    compiled = mica.compile_affine(prog, mesh=mesh)
    assert compiled.cost.cores > 1
    rng = np.random.default_rng(n)
    a = rng.uniform(0.5, 1.5, (n, n)) + n * np.eye(n)
    want = run_c(LUD, "lud", {"A": a}, {"n": n})
    res = compiled.run({"A": a}, threads=2)
    assert res.stats.summary()["computing_cores"] > 1
    np.testing.assert_array_equal(res.outputs["A"], want["A"])
