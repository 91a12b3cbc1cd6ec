"""Loop folding (mica.affine.fold): which loops fold, and that a folded program computes what the original does,
checked by running both programs' sequential references (``mica.testing.run_program``) on random programs of
the differential fuzzer, folded by every factor of every class."""

import numpy as np
import pytest

import mica
from mica.affine.fold import FoldClass, fold_classes, fold_factor, fold_program
from mica.errors import AffineError
from mica.fuzz.generate import case_from_seed
from mica.fuzz.oracle import make_inputs
from mica.testing import run_program

SAXPY = """
void saxpy(int N, float a, float x[N], float y[N], float s[2]) {
  for (int i = 0; i < N; i++) y[i] = a * x[i] + y[i];
  for (int j = 0; j < N; j++) { x[j] = x[j] * 2.0f + (float)j; for (int k = 0; k < 4; k++) y[j] += x[j]; }
  for (int j = 0; j < N; j++) s[1] += y[j];
}"""


def test_classes_join_dimensions_through_plain_subscripts():
    prog = mica.affine.from_c("""
    void f(float a[12][8], float b[13], float c[8], float d[12]) {
      for (int i = 0; i < 12; i++) for (int j = 0; j < 8; j++) a[i][j] = b[i] * c[j];
      for (int i = 0; i < 11; i++) d[i] = b[i + 1];
      for (int i = 0; i < 12; i++) d[i] += 1.0f;
    }""")
    classes = {frozenset(c.dims): c for c in fold_classes(prog)}
    # b is read at i + 1, so it keeps its shape (its plain read b[i] becomes b[B*i_o + i_i]); a's first
    # dimension folds with the first nest's i, c's with j (joined to a's second), d's with the second nest's i
    assert set(classes) == {frozenset({("a", 0)}), frozenset({("c", 0), ("a", 1)}), frozenset({("d", 0)})}
    assert classes[frozenset({("c", 0), ("a", 1)})].n == 8 and classes[frozenset({("d", 0)})].n == 12
    # statements of one nest fold its loop together
    shared = mica.affine.from_c("""
    void g(float x[8], float y[8], float z[8]) {
      for (int i = 0; i < 8; i++) { z[i] = x[7 - i]; y[i] = z[i] * 2.0f; }
    }""")
    (cls,) = [c for c in fold_classes(shared) if ("y", 0) in c.dims]
    assert cls.loops == {("S0", "i"), ("S1", "i")} and ("x", 0) not in cls.dims


def test_fold_keeps_instances_order_and_elements():
    prog = mica.affine.from_c(SAXPY.replace("float s[2]) {", "float s[2]) {").replace(
        "  for (int j = 0; j < N; j++) s[1] += y[j];\n", ""), params={"N": 24})
    (cls,) = fold_classes(prog)
    assert cls.n == 24 and cls.dims == {("x", 0), ("y", 0)}
    folded = fold_program(prog, cls, 6)
    assert folded.array("x").shape == (4, 6) and folded.user_shape("x") == (24,)
    s2 = folded.statement("S2")
    assert s2.loops == ("j_o", "j_i", "k") and s2.order == (1, "j_o", 0, "j_i", 1, "k", 0)
    assert s2.domain_set.count_val().to_python() == prog.statement("S2").domain_set.count_val().to_python()
    # (float)j reads the whole index
    assert "j_o" in str(folded.statement("S1").expr) and "6" in str(folded.statement("S1").expr)
    with pytest.raises(AffineError, match="cannot fold"):
        fold_program(prog, cls, 5)


def test_fold_factor():
    assert fold_factor(4096, 64) == 64
    assert fold_factor(24, 5) == 4
    assert fold_factor(13, 4) is None


def _folds(prog):
    for cls in fold_classes(prog):
        for b in (b for b in range(2, cls.n) if cls.n % b == 0):
            yield cls, b


def _check_folds(seed: int) -> int:
    """Runs every fold of random program ``seed`` (at most 4) against the program; returns how many ran."""
    case = case_from_seed(seed)
    prog = mica.affine.from_c(case.source, params=case.params)
    folds = list(_folds(prog))[:4]
    if not folds:
        return 0
    ins = make_inputs(case.source, case.params, seed=seed, data=case.data)
    want = run_program(prog, ins)
    for cls, b in folds:
        folded = fold_program(prog, cls, b)
        got = run_program(folded, {k: (v.reshape(folded.array(k).shape) if isinstance(v, np.ndarray) else v)
                                   for k, v in ins.items()})
        for name in prog.outputs:
            np.testing.assert_array_equal(got[name].reshape(prog.array(name).shape), want[name],
                                          err_msg=f"seed {seed}: {name} folded {cls.describe()} by {b}")
    return len(folds)


@pytest.mark.parametrize("seeds", [range(0, 60), pytest.param(range(60, 400), marks=pytest.mark.slow)],
                         ids=["60", "340"])
def test_folded_random_programs_compute_the_same(seeds):
    """Every fold of a random program (every class, every factor; up to four) gives the same outputs, bit for
    bit, run in its original order: the folded program reads and writes the same elements in the same order.
    Not vacuous: a fifth of the random programs have a loop that folds."""
    ran = [_check_folds(seed) for seed in seeds]
    assert sum(1 for r in ran if r) >= len(ran) // 8, ran


def test_a_program_records_how_the_user_shapes_its_arrays():
    prog = mica.affine.from_c(SAXPY, params={"N": 8})
    cls = next(c for c in fold_classes(prog) if ("x", 0) in c.dims)
    folded = fold_program(prog, cls, 4)
    assert dict(folded.folded) == {"x": (8,), "y": (8,)}
    assert folded.user_shape("s") == (2,)
    with pytest.raises(AffineError, match="no reshape"):
        folded.replace(folded=(("x", (7,)),))
    assert isinstance(cls, FoldClass)
