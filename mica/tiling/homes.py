"""Home layouts as per-core boxes: the block box a :class:`~mica.tiling.schedule.Home` gives its array, the
same layout with its two mesh axes swapped (the *mirror* an operator reads ``Aᵀ`` through), and a vector's
layout turned to the other axis."""

from __future__ import annotations

from .schedule import OTHER_AXIS, Home
from ..meshir.ir import BoxDim


def home_box(shape: tuple[int, ...], home: Home) -> tuple[BoxDim, ...]:
    """The per-core box of an array of ``shape`` under ``home``: block-tiled on its mesh axes, whole
    elsewhere (no ghost zones)."""
    return tuple(BoxDim(a, t, n) if a else BoxDim(None, n, n) for (a, t), n in zip(home.dims, shape))


def swap_home(home: Home) -> Home | None:
    """``home`` with its two distributed dimensions on the swapped mesh axes (same tiles), or None when it
    is not a 2D block distribution over both axes (the only layout change
    :func:`mica.lower.relayout.transpose` performs)."""
    axes = [a for a, _ in home.dims]
    if len(home.dims) != 2 or sorted(a for a in axes if a) != ["x", "y"]:
        return None
    return Home(home.array, tuple((OTHER_AXIS[a], t) for a, t in home.dims), ())


def turn_home(home: Home) -> Home | None:
    """A vector's ``home`` with its one distributed dimension on the other mesh axis (same tile), held the same
    way: by row 0 -> by column 0 (and back), or by every line -> by every line of the other axis; None for
    any other home (the vector layouts :func:`mica.lower.relayout.transpose` turns)."""
    if len(home.dims) != 1 or home.dims[0][0] not in ("x", "y"):
        return None
    axis, tile = home.dims[0]
    other = "y" if axis == "x" else "x"
    if home.pin and home.pin != ((other, 0),):
        return None
    return Home(home.array, ((other, tile),), ((axis, 0),) if home.pin else ())


def relaid_home(home: Home) -> Home | None:
    """The layout :func:`mica.lower.relayout.transpose` can change ``home`` into on the mesh: a 2D block
    layout with the axes swapped (:func:`swap_home`) or a vector turned (:func:`turn_home`); None if none."""
    return swap_home(home) or turn_home(home)
