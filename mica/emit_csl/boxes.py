"""Per-core box geometry of a MeshIR RegionTensor dimension, in one place for every renderer.

A dimension is whole (no coordinate: the leading ``min(tile, extent)`` elements), tiled by a coordinate
(``x``, ``y``, a loop variable: ``[tile*c, min(tile*c + tile, extent))``, a prefix on partial tiles),
padded / skewed (``kb``: always ``tile`` elements), or a **window** (``span > 0``: always ``span``
elements from global index ``tile*c + offset``; ghost zones and halo strips). Windows are read with
``getattr`` so this module works with MeshIR versions with and without them.

Public API: :func:`dims`, :func:`alloc`, :func:`size_at`, :func:`size_csl`.
"""

from __future__ import annotations

from math import prod


def offset(d) -> int:
    return getattr(d, "offset", 0)


def span(d) -> int:
    return getattr(d, "span", 0)


def dims(t) -> tuple[tuple, ...]:
    """``(coord, tile, extent, padded, offset, span)`` per dimension (the plan's record of a box)."""
    return tuple((d.coord, d.tile, d.extent, d.padded, offset(d), span(d)) for d in t.box)


def alloc_dim(d) -> int:
    """Elements the buffer allocates along ``d`` (its largest size on any core)."""
    if span(d):
        return span(d)
    if d.padded or d.coord:
        return d.tile
    return min(d.tile, d.extent)


def alloc(t) -> int:
    return prod(alloc_dim(d) for d in t.box)


def fixed_size(d):
    """The size along ``d`` when it is the same on every core, else None."""
    if span(d):
        return span(d)
    if d.padded or d.coord == "kb":
        return d.tile
    if d.coord is None:
        return min(d.tile, d.extent)
    return None


def size_at(d, c: int) -> int:
    """Size along ``d`` on a core whose coordinate for ``d`` is ``c``."""
    f = fixed_size(d)
    if f is not None:
        return f
    return max(0, min(d.tile, d.extent - d.tile * c))


def size_csl(d, c: str) -> str:
    """CSL text of the size along ``d``, the coordinate being the CSL expression ``c``."""
    f = fixed_size(d)
    if f is not None:
        return str(f)
    return f"imax(0, imin({d.tile}, {d.extent} - {d.tile} * {c}))"
