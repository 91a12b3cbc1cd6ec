"""Privatisation (mica.affine.privatise): which temporaries are expanded along which loops, what must not
be expanded, idempotence, and that the outputs of the expanded program equal the original's (run
sequentially by mica.testing.run_program) on small programs and on the PolyBench-style kernels."""

import json

import numpy as np
import pytest

import samples
from mica.affine.expr import Aff, Read
from mica.affine.from_c import from_c
from mica.affine.privatise import plan, privatise
from mica.affine.program import Access, Array, Program, Statement
from mica.testing import assert_matches, run_c, run_program

MANIFEST = json.loads((samples.KERNELS / "manifest.json").read_text())


def inputs_of(prog, seed=0):
    """Uniform [0.5, 1.5) inputs for every input array and scalar of ``prog``."""
    rng = np.random.default_rng(seed)
    dt = {"f32": np.float32, "f64": np.float64}
    ins = {a: rng.uniform(0.5, 1.5, prog.array(a).shape).astype(dt[prog.array(a).dtype]) for a in prog.inputs}
    ins.update({n: float(rng.uniform(0.5, 1.5)) for n, _ in prog.scalars})
    return ins


def expanded(src, params=None):
    """(original, privatised, {array: [loops of each web]}) after checking outputs and idempotence."""
    prog = from_c(src, params=params or {})
    q = privatise(prog)
    assert privatise(q) is q
    ins = inputs_of(prog)
    assert_matches(run_program(q, ins), run_program(prog, ins))
    assert_matches(run_program(q, ins), run_c(src, None, ins, params or {}))
    return prog, q, {x: sorted(w.loops for w in ws) for x, ws in plan(prog).items()}


def test_scalar_of_a_loop_body_is_expanded_along_its_loops():
    prog, q, loops = expanded("""
void f(double A[6][5], double B[6][5]) {
  for (int i = 0; i < 6; i++) for (int j = 1; j < 5; j++) { double t = A[i][j] * 2.0; B[i][j] = t + A[i][j - 1]; }
}""")
    assert loops == {"t": [("i", "j")]}
    assert q.array("t").shape == (6, 4)                      # j runs 1..4: index j - 1
    w = q.statement("S0").write
    assert [str(ix) for ix in w.index] == ["i", "j - 1"]
    assert q.inputs == prog.inputs and q.outputs == prog.outputs
    assert [s.name for s in q.statements] == [s.name for s in prog.statements]


def test_running_sum_across_the_outer_loop_is_not_expanded_along_it():
    # s carries from one i to the next: expanding along i would lose the sum; j is not enclosing the
    # initialisation, so nothing can be expanded.
    _, q, loops = expanded("""
void f(double A[7][4], double y[7]) {
  double s = 0.0;
  for (int i = 0; i < 7; i++) { for (int j = 0; j < 4; j++) s += A[i][j]; y[i] = s; }
}""")
    assert loops == {"s": [()]}
    assert q.array("s").shape == ()


def test_running_sum_reset_per_outer_iteration_is_expanded_along_the_outer_loop_only():
    prog, q, loops = expanded("""
void f(double A[7][4], double y[7]) {
  double s;
  for (int i = 0; i < 7; i++) { s = 0.0; for (int j = 0; j < 4; j++) s += A[i][j]; y[i] = s; }
}""")
    assert loops == {"s": [("i",)]}
    assert q.array("s").shape == (7,)


def test_value_carried_into_the_next_nest_is_not_expanded():
    # The second nest's first iteration reads the last t of the first nest: one web over both nests.
    _, q, loops = expanded("""
void f(double A[8], double B[8]) {
  double t;
  for (int i = 0; i < 8; i++) { B[i] = A[i]; t = A[i]; }
  for (int i = 1; i < 8; i++) { B[i] = B[i] + t; t = A[i] * 2.0; }
}""")
    assert loops == {"t": [()]}
    assert q.array("t").shape == ()


def test_read_before_write_is_not_expanded():
    # The C front end refuses a local read before it is written; a Program built directly may have one:
    # the read at i = 0 gets the value from before the program, so the web is left alone.
    stmts = (
        Statement("S0", ("i",), "{ S0[i] : 0 <= i < 8 }", Access("w0", "B", (Aff.var("i"),)), Read("r0"),
                  (Access("r0", "t", ()),), (0, "i", 0)),
        Statement("S1", ("i",), "{ S1[i] : 0 <= i < 8 }", Access("w1", "t", ()), Read("r1"),
                  (Access("r1", "A", (Aff.var("i"),)),), (0, "i", 1)),
    )
    prog = Program("f", (Array("A", (8,)), Array("B", (8,)), Array("t", ())), stmts, ("A",), ("B",))
    (w,) = plan(prog)["t"]
    assert not w.loops and "before the program" in w.reason
    assert privatise(prog) is prog


def test_temporary_read_after_the_loop_is_not_expanded_along_it():
    _, q, loops = expanded("""
void f(double A[8], double B[8], double C[1]) {
  double t;
  for (int i = 0; i < 8; i++) { t = A[i] * A[i]; B[i] = t; }
  C[0] = t;
}""")
    assert loops == {"t": [()]}


def test_two_live_ranges_of_one_scalar_are_expanded_separately():
    # m lives within an i iteration in the first nest and within a j iteration in the second: two variables
    # that share a C name, so two arrays (split_webs), m[i] in the first nest and m_1[j] in the second.
    _, q, loops = expanded("""
void f(double X[6][4], double Y[6][4], double Z[6][4]) {
  double m;
  for (int i = 0; i < 6; i++) { m = 0.0; for (int j = 0; j < 4; j++) { Y[i][j] = X[i][j] + m; m = Y[i][j]; } }
  for (int j = 0; j < 4; j++) { m = 0.0; for (int i = 0; i < 6; i++) { Z[i][j] = Y[i][j] * m; m = X[i][j]; } }
}""")
    assert loops == {"m": [("i",), ("j",)]}
    assert q.array("m").shape == (6,) and q.array("m_1").shape == (4,)
    assert [a.name for a in q.arrays] == ["X", "Y", "Z", "m", "m_1"]
    assert {s.write.array for s in q.statements if s.order[0] == 1} == {"Z", "m_1"}


def test_a_scalar_reused_by_later_nests_becomes_one_array_per_nest():
    # ludcmp's w: the factorisation's w[i][j], then the forward and the back substitution's own w[i]. Split,
    # an operator of one nest never moves another nest's values; a value carried from one nest into the next
    # keeps the two nests on one array.
    spec = MANIFEST["ludcmp"]
    prog = from_c((samples.KERNELS / "ludcmp.c").read_text(), params=spec["params"])
    q = privatise(prog)
    n = spec["params"]["n"]
    assert {a.name: a.shape for a in q.arrays if a.name.startswith("w")} == {"w": (n, n), "w_1": (n,), "w_2": (n,)}
    assert {s.write.array for s in q.statements if s.write.array.startswith("w")} == {"w", "w_1", "w_2"}
    ins = inputs_of(prog, seed=4)
    assert_matches(run_program(q, ins), run_c((samples.KERNELS / "ludcmp.c").read_text(), None, ins, spec["params"]))
    _, carried, _ = expanded("""
void f(double A[5], double B[5], double C[1]) {
  double t = 0.0;
  for (int i = 0; i < 5; i++) t = t + A[i];
  for (int i = 0; i < 5; i++) B[i] = A[i] * t;
  C[0] = t;
}""")
    assert [a.name for a in carried.arrays] == ["A", "B", "C", "t"]


def test_live_ranges_along_the_same_loops_share_one_origin():
    # ludcmp's w: the lower part's web has i from 1 (j < i), the upper part's from 0; both index w[i][j], so
    # the copies of one (i, j) iteration are at the same element whichever statement writes them.
    _, q, loops = expanded("""
void f(double A[6][6]) {
  double w;
  for (int i = 0; i < 6; i++) {
    for (int j = 0; j < i; j++) { w = A[i][j]; for (int k = 0; k < j; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w / A[j][j]; }
    for (int j = i; j < 6; j++) { w = A[i][j]; for (int k = 0; k < i; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w; }
  }
}""")
    assert loops == {"w": [("i", "j"), ("i", "j")]}
    assert q.array("w").shape == (6, 6)
    writes = {str(s.write.index) for s in q.statements if s.write.array == "w"}
    assert len(writes) == 1 and [str(ix) for ix in q.statement("S0").write.index] == ["i", "j"]


def test_array_temporary_already_indexed_by_the_loop_is_not_expanded_again():
    _, q, loops = expanded("""
void f(double A[5][6], double B[5][6]) {
  double tmp[5];
  for (int i = 0; i < 5; i++) { tmp[i] = 0.0; for (int j = 0; j < 6; j++) tmp[i] += A[i][j];
    for (int j = 0; j < 6; j++) B[i][j] = A[i][j] / tmp[i]; }
}""")
    assert loops == {"tmp": [()]}
    assert q.array("tmp").shape == (5,)


def test_triangular_bounds_give_exact_extents():
    # k runs from i+1 to 7 and only for i >= 2: the web's i takes 2..6, its j 0..3.
    _, q, loops = expanded("""
void f(double A[8][8], double B[8][4]) {
  double s;
  for (int i = 2; i < 7; i++) for (int j = 0; j < 4; j++) {
    s = 0.0; for (int k = i + 1; k < 8; k++) s += A[i][k]; B[i][j] = s * 2.0; }
}""")
    assert loops == {"s": [("i", "j")]}
    assert q.array("s").shape == (5, 4)
    assert [str(ix) for ix in q.statement("S0").write.index] == ["i - 2", "j"]


def test_inputs_and_outputs_are_never_expanded():
    prog = from_c("""
void f(double A[8], double t[1]) {
  for (int i = 0; i < 8; i++) { t[0] = A[i]; A[i] = t[0] * 2.0; }
}""")
    assert "t" in prog.outputs and plan(prog) == {}
    assert privatise(prog) is prog


@pytest.mark.parametrize("name", ["gesummv", "symm", "doitgen", "deriche", "durbin", "ludcmp", "gramschmidt"])
def test_kernels_keep_their_outputs(name):
    spec = MANIFEST[name]
    prog = from_c((samples.KERNELS / f"{name}.c").read_text(), params=spec["params"])
    q = privatise(prog)
    assert q is not prog and privatise(q) is q
    ins = inputs_of(prog, seed=2)
    assert_matches(run_program(q, ins), run_program(prog, ins))


def test_expanded_kernels_say_what_they_expand():
    def loops(name):
        spec = MANIFEST[name]
        prog = from_c((samples.KERNELS / f"{name}.c").read_text(), params=spec["params"])
        return {x: [w.loops for w in ws] for x, ws in plan(prog).items()}, privatise(prog)
    got, q = loops("gesummv")
    assert got == {"t": [("i",)], "u": [("i",)]} and q.array("t").shape == (25,)
    got, q = loops("doitgen")
    assert got == {"sum": [("r", "q")]} and q.array("sum").shape == (8, 10, 12)
    got, q = loops("symm")
    assert got == {"acc": [("i", "j")]} and q.array("acc").shape == (18, 22)
