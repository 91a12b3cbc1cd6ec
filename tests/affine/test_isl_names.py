"""The names-first isl helpers: parameter shifts of single and union sets and maps."""

import islpy as isl

from mica.affine.isl_names import shift_params


def test_shift_params_moves_what_held_at_p_to_p_plus_shift():
    got = isl.Set(shift_params("[__x, __y] -> { K[i] : i = 4 * __x and 0 <= i < 16 }", {"__x": 2}))
    want = isl.Set("[__x, __y] -> { K[i] : i = 4 * (__x - 2) and 0 <= i < 16 }")
    assert got.is_equal(want)


def test_shift_params_of_a_union_shifts_every_piece():
    """A sequence kernel's domain names several statements (a union set): each piece is shifted, and a
    piece that does not name the parameter is left alone (a one-core kernel placed away from (0, 0))."""
    text = "[__x] -> { S1[i] : 0 <= i < 8 and i = __x; S2[i, j] : 0 <= i < 4 and 0 <= j < 3 }"
    got = isl.UnionSet(shift_params(text, {"__x": 3}))
    want = isl.UnionSet("[__x] -> { S1[i] : 0 <= i < 8 and i = __x - 3; S2[i, j] : 0 <= i < 4 and 0 <= j < 3 }")
    assert got.is_equal(want)
    maps = "[__y] -> { A[i] -> B[i] : i = __y; C[i] -> D[i] : 0 <= i < 2 }"
    got_map = isl.UnionMap(shift_params(maps, {"__y": 1}))
    assert got_map.is_equal(isl.UnionMap("[__y] -> { A[i] -> B[i] : i = __y - 1; C[i] -> D[i] : 0 <= i < 2 }"))
