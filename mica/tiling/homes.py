"""Home layouts as per-core boxes: the block box a :class:`~mica.tiling.schedule.Home` gives its array, and
the same layout with its two mesh axes swapped (the *mirror* an operator reads ``Aᵀ`` through)."""

from __future__ import annotations

from .schedule import Home
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
    swap = {"x": "y", "y": "x"}
    return Home(home.array, tuple((swap[a], t) for a, t in home.dims), ())
