"""Per-core boxes as the CSL back end records and prints them; the geometry itself is
:class:`mica.meshir.ir.BoxDim`'s (``alloc``, ``fixed``, ``size``).

Public API: :func:`dims`, :func:`size_csl`.
"""

from __future__ import annotations


def dims(t) -> tuple[tuple, ...]:
    """``(coord, tile, extent, padded, offset, span)`` per dimension (the plan's record of a box)."""
    return tuple((d.coord, d.tile, d.extent, d.padded, d.offset, d.span) for d in t.box)


def size_csl(d, c: str) -> str:
    """CSL text of the size along ``d``, the coordinate being the CSL expression ``c``."""
    if d.fixed is not None:
        return str(d.fixed)
    return f"imax(0, imin({d.tile}, {d.extent} - {d.tile} * {c}))"
