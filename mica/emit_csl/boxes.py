"""Per-core boxes as the CSL back end records and prints them; the geometry itself is
:class:`mica.meshir.ir.BoxDim`'s (``alloc``, ``fixed``, ``size``).

Public API: :func:`dims`, :func:`coord_csl`, :func:`size_csl`.
"""

from __future__ import annotations


def dims(t) -> tuple[tuple, ...]:
    """``(coord, tile, extent, padded, offset, span, origin)`` per dimension (the plan's record of a box;
    ``origin`` is the core holding block 0 along an ``x`` / ``y`` dimension, :attr:`BoxDim.origin`)."""
    return tuple((d.coord, d.tile, d.extent, d.padded, d.offset, d.span, d.origin) for d in t.box)


def coord_csl(d, c: str) -> str:
    """CSL text of the block index along ``d`` on the core whose coordinate is the CSL expression ``c``:
    ``c`` itself, or ``(c - origin)`` for a box placed away from core 0 (:attr:`BoxDim.origin`)."""
    return f"({c} - {d.origin})" if d.origin else c


def size_csl(d, c: str) -> str:
    """CSL text of the size along ``d``, the coordinate being the CSL expression ``c``."""
    if d.fixed is not None:
        return str(d.fixed)
    return f"imax(0, imin({d.tile}, {d.extent} - {d.tile} * {coord_csl(d, c)}))"
