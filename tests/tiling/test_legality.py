"""Legality: mappings that could violate a dependence are refused; such programs still compile on one core."""

import numpy as np
import pytest

import mica
from mica.affine.expr import Aff, Bin, Const, Read
from mica.affine.program import Access, Array, Program, Statement
from mica.errors import ScheduleError
from mica.tiling.schedule import Home, Schedule, SpaceMap


def _scan(n=20):
    """x[i] = x[i-1] + a[i] for i >= 1: a recurrence on every iteration."""
    s = Statement("S", ("i",), f"{{ S[i] : 1 <= i < {n} }}", Access("w", "x", (Aff.var("i"),)),
                  Bin("+", Read("r"), Read("a")),
                  (Access("r", "x", (Aff.of({"i": 1}, -1),)), Access("a", "a", (Aff.var("i"),))), (0, "i", 0))
    return Program("scan", (Array("x", (n,), "f64"), Array("a", (n,), "f64")), (s,), ("x", "a"), ("x",))


def _skew(n=6):
    """A[p][i][j] = A[p][i-1][j+1] + 1: p carries nothing, (i, j) distance (1, -1) — interchanging i and j
    breaks it."""
    s = Statement("S", ("p", "i", "j"), f"{{ S[p, i, j] : 0 <= p < 4 and 1 <= i < {n} and 0 <= j < {n - 1} }}",
                  Access("w", "A", (Aff.var("p"), Aff.var("i"), Aff.var("j"))),
                  Bin("+", Read("r"), Const(1.0)),
                  (Access("r", "A", (Aff.var("p"), Aff.of({"i": 1}, -1), Aff.of({"j": 1}, 1))),),
                  (0, "p", 0, "i", 0, "j", 0))
    return Program("skew", (Array("A", (4, n, n), "f64"),), (s,), ("A",), ("A",))


def test_a_recurrence_mapped_across_cores_is_refused():
    p = _scan()
    forced = Schedule((4, 1), (SpaceMap("i", "x", 5),), None, (("S", ("i",)),),
                      (Home("x", (("x", 5),)), Home("a", (("x", 5),))))
    with pytest.raises(ScheduleError, match="needs data statement S produces on another core"):
        mica.compile_affine(p, mesh=(4, 1), schedule=forced)


def test_a_recurrence_compiles_on_one_core_and_says_why():
    p = _scan()
    prog = mica.compile_affine(p, mesh=(4, 4), target="wormhole")
    assert prog.mesh_program.region.cores == 1
    assert "carries a dependence" in prog.explain() and "runs on core (0, 0)" in prog.explain()
    x = np.arange(20, dtype=np.float64)
    a = np.linspace(0, 1, 20)
    res = prog.run({"x": x, "a": a})
    want = x.copy()
    for i in range(1, 20):
        want[i] = want[i - 1] + a[i]
    np.testing.assert_array_equal(res.outputs["x"], want)


def test_an_interchange_that_breaks_a_dependence_is_refused():
    p = _skew()
    bad = Schedule((4, 1), (SpaceMap("p", "x", 1),), None, (("S", ("p", "j", "i")),),
                   (Home("A", (("x", 1), (None, 6), (None, 6))),))
    with pytest.raises(ScheduleError, match="before the instance of S it depends on"):
        mica.compile_affine(p, mesh=(4, 1), target="wormhole", schedule=bad)
    good = bad.copy(local_order=(("S", ("p", "i", "j")),))
    A = np.arange(4 * 36, dtype=np.float64).reshape(4, 6, 6)
    res = mica.compile_affine(p, mesh=(4, 1), target="wormhole", schedule=good).run({"A": A})
    want = A.copy()
    for i in range(1, 6):
        for j in range(5):
            want[:, i, j] = want[:, i - 1, j + 1] + 1
    np.testing.assert_array_equal(res.outputs["A"], want)


def test_instances_outside_the_scheduled_cores_are_refused():
    """Tiles come from the main statement; a statement with a longer loop must not lose instances."""
    init = Statement("S0", ("i",), "{ S0[i] : 0 <= i < 12 }", Access("w0", "B", (Aff.var("i"),)), Const(1.0),
                     (), (0, "i", 0))
    main = Statement("S1", ("i", "j"), "{ S1[i, j] : 0 <= i < 6 and 0 <= j < 2 }",
                     Access("w1", "C", (Aff.var("i"), Aff.var("j"))), Read("b"),
                     (Access("b", "B", (Aff.var("i"),)),), (1, "i", 0, "j", 0))
    p = Program("ragged", (Array("B", (12,), "f64"), Array("C", (6, 2), "f64")), (init, main), (), ("B", "C"))
    forced = Schedule((3, 2), (SpaceMap("i", "y", 3), SpaceMap("j", "x", 1)), None,
                      (("S0", ("i",)), ("S1", ("i", "j"))),
                      (Home("B", (("y", 3),), (("x", 0),)), Home("C", (("y", 3), ("x", 1)))))
    with pytest.raises(ScheduleError, match="statement S0: some instances fall outside"):
        mica.compile_affine(p, mesh=(3, 2), schedule=forced)
    res = mica.compile_affine(p, mesh=(3, 2)).run({})
    np.testing.assert_array_equal(res.outputs["B"], np.ones(12))
    np.testing.assert_array_equal(res.outputs["C"], np.ones((6, 2)))


def _named_like_the_mesh(n=12):
    """C[t][x] = A[t][x] * 2 with loops named t and x — the names MICA's mesh relations use for the step
    and the column must not be confused with them."""
    s = Statement("S", ("t", "x"), f"{{ S[t, x] : 0 <= t < {n} and 0 <= x < {n + 1} }}",
                  Access("w", "C", (Aff.var("t"), Aff.var("x"))),
                  Bin("*", Read("a"), Const(2.0)), (Access("a", "A", (Aff.var("t"), Aff.var("x"))),),
                  (0, "t", 0, "x", 0))
    return Program("names", (Array("A", (n, n + 1), "f64"), Array("C", (n, n + 1), "f64")), (s,), ("A",), ("C",))


@pytest.mark.parametrize("mesh", [(3, 4), (5, 2)])
def test_loops_named_like_mesh_coordinates(mesh):
    p = _named_like_the_mesh()
    A = np.arange(12 * 13, dtype=np.float64).reshape(12, 13)
    res = mica.compile_affine(p, mesh=mesh).run({"A": A})
    np.testing.assert_array_equal(res.outputs["C"], 2 * A)


def test_names_with_a_double_underscore_are_reserved():
    with pytest.raises(mica.AffineError, match="reserved"):
        Statement("S", ("__x",), "{ S[__x] : 0 <= __x < 3 }", Access("w", "C", (Aff.var("__x"),)), Const(1.0),
                  (), (0, "__x", 0))
