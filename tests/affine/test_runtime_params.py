"""Runtime parameters in the C front end (mica.affine.runtime): guards, the loops a subscript's parameter
becomes, exact dataflow at every value, and the errors a user meets."""

import islpy as isl
import numpy as np
import pytest

from mica.affine.deps import dependences
from mica.affine.from_c import from_c
from mica.affine.runtime import check_values, normalise_ranges
from mica.errors import AffineError, InputError
from mica.testing import run_c, run_program

APPEND = """
void append(int pos, float K[16][4], float k[4]) {
  for (int d = 0; d < 4; d++) K[pos][d] = k[d];
}
"""

PREFIX = """
void prefix(int n, float x[12], float y[12], float s[1]) {
  s[0] = 0.0f;
  for (int i = 0; i < n; i++) s[0] += x[i];
  for (int i = 0; i < 12; i++) y[i] = i < n ? x[i] * (float)n : 0.0f;
}
"""


def test_a_subscript_parameter_becomes_a_guarded_loop():
    p = from_c(APPEND, runtime={"pos": (0, 16)})
    (s,) = p.statements
    assert s.loops == ("d", "pos_at")
    assert p.runtime == (("pos", 0, 16),)
    assert ("pos", "f64") in p.scalars
    # every row is a candidate; the guard picks the one the run's value names
    assert s.domain_set.count_val().to_python() == 16 * 4
    assert s.guard_params == ("pos",)
    assert s.write.index[0].names == ("pos_at",)
    # K is written only where the guard holds: its other rows keep their values, so it is an input too
    assert "K" in p.inputs and "K" in p.outputs


def test_a_bound_parameter_is_a_guard_on_the_loops_it_bounds():
    p = from_c(PREFIX, runtime={"n": range(1, 13)})
    acc = p.statements[1]
    assert acc.loops == ("i",) and acc.guard
    assert acc.domain_set.count_val().to_python() == 12
    # the ternary's condition on n splits the statement; both halves are guarded
    assert all(s.guard for s in p.statements[2:])


def test_dataflow_is_exact_at_every_value():
    """s[l] = 0 then s[l] += ... under the same guard: the accumulation reads the zero (no live-in), at every
    value; a may-write analysis would call s read before written."""
    src = """
    void f(int pos, float q[4], float K[8][4], float out[8]) {
      float s[8];
      for (int l = 0; l <= pos; l++) {
        s[l] = 0.0f;
        for (int d = 0; d < 4; d++) s[l] += q[d] * K[l][d];
        out[l] = s[l];
      }
    }"""
    p = from_c(src, runtime={"pos": (0, 8)})
    assert p.inputs == ("q", "K", "out")            # out: rows past pos keep their values
    live = dependences(p).live_in
    names = []
    live.foreach_map(lambda m: names.append(m.get_tuple_name(isl.dim_type.out)))
    assert "s" not in names and "K" in names


@pytest.mark.parametrize("pos", [0, 5, 15])
def test_reference_and_native_c_agree(pos):
    rng = np.random.default_rng(pos)
    p = from_c(APPEND, runtime={"pos": (0, 16)})
    ins = {"K": rng.random((16, 4), dtype=np.float32), "k": rng.random(4, dtype=np.float32), "pos": pos}
    want = run_c(APPEND, None, ins)
    got = run_program(p, ins)
    np.testing.assert_array_equal(got["K"], want["K"])
    assert np.array_equal(got["K"][pos], ins["k"])


CHUNK = """
void chunk(int pos, float k[4][3], float K[16][3]) {
  for (int l = pos; l < pos + 4; l++)
    for (int d = 0; d < 3; d++) K[l][d] = k[l - pos][d];
}
"""


@pytest.mark.parametrize("pos", [0, 5, 12])
def test_a_loop_from_a_parameter_reading_a_row_it_names(pos):
    """A loop bounded below and above by the parameter whose body reads a row the parameter names: the
    gathered row's temporary is sized by the loop's bounds over the declared range (the union of the rows
    every value reaches), and the rows pos .. pos+3 are written at every value."""
    p = from_c(CHUNK, runtime={"pos": (0, 13)})
    gathered = [a for a in p.arrays if a.name.startswith("k_pos")]
    assert [a.shape for a in gathered] == [(16, 3)]               # rows 0 .. 15 of l over pos in 0 .. 12
    rng = np.random.default_rng(pos)
    ins = {"K": rng.random((16, 3), dtype=np.float32), "k": rng.random((4, 3), dtype=np.float32), "pos": pos}
    got = run_program(p, ins)
    np.testing.assert_array_equal(got["K"], run_c(CHUNK, None, ins)["K"])
    np.testing.assert_array_equal(got["K"][pos:pos + 4], ins["k"])


def test_prefix_reference_matches_native_c_at_each_value():
    p = from_c(PREFIX, runtime={"n": (1, 13)})
    x = np.arange(12, dtype=np.float32) + 1
    for n in (1, 7, 12):
        want = run_c(PREFIX, None, {"x": x, "n": n})
        got = run_program(p, {"x": x, "n": n})
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-6)


@pytest.mark.parametrize("runtime, message", [
    ({"pos": (0, 17)}, "outside the declared extent"),              # row 16 of K[16]
    ({"pos": (-1, 16)}, "outside the declared extent"),
    ({"pos": (4, 4)}, "is empty"),
    ({"pos": (0, 1.5)}, "integer bounds"),
    ({"pos": "0:16"}, "needs a range"),
    ({"k": (0, 4)}, "not an int parameter"),
])
def test_bad_declarations_name_the_problem(runtime, message):
    with pytest.raises(AffineError, match=message):
        from_c(APPEND, runtime=runtime)


def test_a_runtime_parameter_cannot_size_an_array():
    src = "void f(int n, float A[n]) { for (int i = 0; i < 4; i++) A[i] = 1.0f; }"
    with pytest.raises(AffineError, match="runtime parameter 'n' is used where a compile-time constant"):
        from_c(src, runtime={"n": (1, 8)})


def test_value_and_range_together_are_refused():
    with pytest.raises(AffineError, match="both a value"):
        from_c(APPEND, params={"pos": 3}, runtime={"pos": (0, 16)})


def test_values_are_checked_against_the_range():
    rt = (("pos", 0, 16),)
    check_values(rt, {"pos": 15})
    check_values(rt, {"pos": np.int64(0)})
    for bad, message in ((16, "outside its declared range"), (-1, "outside"), (2.0, "must be an integer"),
                         (True, "must be an integer"), ("3", "must be an integer")):
        with pytest.raises(InputError, match=message):
            check_values(rt, {"pos": bad})
    with pytest.raises(InputError, match="missing"):
        check_values(rt, {})


def test_ranges_accept_ranges_and_pairs():
    assert normalise_ranges({"a": range(2, 9), "b": (0, 4)}) == {"a": (2, 9), "b": (0, 4)}
    with pytest.raises(AffineError, match="step 1"):
        normalise_ranges({"a": range(0, 9, 2)})
