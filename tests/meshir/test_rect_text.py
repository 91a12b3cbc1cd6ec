"""The text of a core rectangle: strides are printed reduced where the bounds are constants."""

from mica.meshir.ir import Lin, Rect


def test_a_stride_that_leaves_one_column_prints_as_that_column():
    assert str(Rect.of(2, 6, 0, 6, xs=4, xp=0)) == "[4:5, 0:6]"
    assert str(Rect.of(0, 4, 0, 6, xs=4, xp=-2)) == "[2:3, 0:6]"
    assert str(Rect.of(0, 6, 2, 6, ys=4, yp=0)) == "[0:6, 4:5]"


def test_phases_are_printed_in_range_and_kept_where_they_select_several():
    assert str(Rect.of(0, 9, 0, 2, xs=4, xp=-3)) == "[0:9, 0:2, x = 1 mod 4]"
    assert str(Rect.of(0, 9, 0, 9, xs=2, xp=5, ys=3, yp=7)) == "[0:9, 0:9, x = 1 mod 2, y = 1 mod 3]"


def test_strides_that_move_with_a_loop_are_printed_as_they_are():
    t = Lin(0, (("t", 1),))
    assert str(Rect.of(0, 8, 0, 8, xs=4, xp=t)) == "[0:8, 0:8, x = t mod 4]"
    assert str(Rect((t,), (Lin(8),), (Lin(0),), (Lin(8),), 2, Lin(0), 1, Lin(0))) == "[t:8, 0:8, x = 0 mod 2]"


def test_the_members_agree_with_the_text():
    for x0, x1, s, p in [(2, 6, 4, 0), (0, 4, 4, -2), (1, 4, 4, 3), (3, 6, 4, 5), (0, 9, 4, -3)]:
        r = Rect.of(x0, x1, 0, 1, xs=s, xp=p)
        cols = list(r.members({})[0])
        text = str(r)
        lo, hi = (int(v) for v in text[1:].split(",")[0].split(":"))
        shown = [x for x in range(lo, hi) if "mod" not in text or x % s == p % s]
        assert shown == cols, (text, cols)
