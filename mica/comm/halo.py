"""Halo exchange: reads that reach a band of the neighbouring cores' blocks (stencils).

Spaces (as in :mod:`mica.comm.sets`): need ``{ M[t, x, y] -> A[a...] }``; a home box holds, along each
dimension distributed over mesh axis ``c`` with tile ``T``, the block ``[T*c, T*c + T)``.

The **halo** of a read is, per distributed dimension, the widths ``(lo, hi)`` by which what a core needs
reaches below and above its block, computed exactly with isl. A home with ghost zones is the window
``[T*c - lo, T*c + T + hi)`` (:func:`ghosted_box`); neighbours fill the ghost zones by one-hop shifts of
strips of their blocks (:func:`strips`): first along x, then along y with strips that span the x ghost
zones too, so corner elements (diagonal neighbours) arrive in two hops without a diagonal link.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..affine.isl_names import imap, max_of, rename_dims
from ..affine.program import Array
from ..errors import CommError
from ..meshir.ir import BoxDim


def halo_widths(array: Array, need: isl.Map, box: tuple[BoxDim, ...], what: str) -> tuple[tuple[int, int], ...]:
    """Per dimension of ``array``, how far ``need`` reaches below and above the core's block:
    ``(max(T*c - a), max(a - (T*c + T - 1)))`` clipped at 0; ``(0, 0)`` for dimensions not distributed.

    Raises :class:`CommError` when a width exceeds the tile (the data would come from beyond the
    immediate neighbour)."""
    if need.is_empty():
        return tuple((0, 0) for _ in box)
    names = ("t", "x", "y", *(f"a{i}" for i in range(array.rank)))
    s = rename_dims(need.wrap().flatten().set_tuple_name("P"), "set", names)
    out = []
    for i, d in enumerate(box):
        if d.coord not in ("x", "y"):
            out.append((0, 0))
            continue
        lo = max(0, max_of(s, f"{d.tile}*{d.coord} - a{i}"))
        hi = max(0, max_of(s, f"a{i} - {d.tile}*{d.coord} - {d.tile - 1}"))
        if lo > d.tile or hi > d.tile:
            raise CommError(f"{what}: the read reaches {max(lo, hi)} elements past a core's block of "
                            f"{d.tile} along dimension {i} of {array.name}; a halo comes from the immediate "
                            f"neighbours only (use fewer cores along mesh {d.coord})")
        out.append((lo, hi))
    return tuple(out)


def ghosted_box(box: tuple[BoxDim, ...], widths: tuple[tuple[int, int], ...]) -> tuple[BoxDim, ...]:
    """The home box with ghost zones: every distributed dimension a window ``[T*c - lo, T*c + T + hi)``
    (also when both widths are 0, so every core's buffer has one fixed shape)."""
    return tuple(BoxDim(d.coord, d.tile, d.extent, offset=-lo, span=d.tile + lo + hi)
                 if d.coord in ("x", "y") else d for d, (lo, hi) in zip(box, widths))


def check_covered(array: Array, need: isl.Map, held: isl.Map, what: str) -> None:
    """``need ⊆ held`` (both ``{ M[t, x, y] -> A[a...] }``), else :class:`CommError`."""
    if not need.is_subset(held):
        raise CommError(f"{what}: cores read {array.name} outside their block and its halo (not a "
                        f"neighbour pattern)", detail=str(need.subtract(held)))


def merge_widths(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    return tuple((max(p, r), max(q, s)) for (p, q), (r, s) in zip(a, b))


@dataclass(frozen=True)
class Strip:
    """One direction of a halo exchange along mesh ``axis`` (array dimension ``dim``): every core with
    ``parity`` along the axis (0 even, 1 odd) among ``senders`` (coordinates ``[lo, hi)`` along the axis)
    sends ``send`` (a window of its block) one hop towards ``direction``; the neighbour receives it as
    ``recv`` (a window of its ghost zone). Even and odd senders use separate colours, so no router has
    one colour both injecting and ejecting."""

    dim: int
    axis: str
    side: str            # "lo": the receiver's ghost below its block; "hi": above
    width: int
    direction: str
    senders: tuple[int, int]
    parity: int
    send: tuple[BoxDim, ...]
    recv: tuple[BoxDim, ...]


def strips(box: tuple[BoxDim, ...], widths: tuple[tuple[int, int], ...], axis: str,
           blocks: int, extended: tuple[tuple[int, int], ...] | None = None) -> list[Strip]:
    """The strips that fill the ghost zones along ``axis`` on a line of ``blocks`` cores. ``extended``
    gives the ghost widths already filled along the other axis: strips span them (corners)."""
    out = []
    for i, d in enumerate(box):
        if d.coord != axis or blocks < 2:
            continue
        lo, hi = widths[i]

        def boxes(send_dim: BoxDim, recv_dim: BoxDim):
            """(send box, receive box): dimension i as given, the others the block (with the ghost
            zones already filled along the other axis)."""
            send, recv = [], []
            for j, e in enumerate(box):
                if j == i:
                    send.append(send_dim)
                    recv.append(recv_dim)
                elif e.coord in ("x", "y"):
                    el, eh = extended[j] if extended is not None else (0, 0)
                    w = BoxDim(e.coord, e.tile, e.extent, offset=-el, span=e.tile + el + eh)
                    send.append(w)
                    recv.append(w)
                else:
                    send.append(e)
                    recv.append(e)
            return tuple(send), tuple(recv)

        toward_lo = "W" if axis == "x" else "N"
        toward_hi = "E" if axis == "x" else "S"
        if hi:
            # Core c's ghost above its block, [T*c + T, T*c + T + hi): the first `hi` elements of core
            # c + 1's block, sent towards lower coordinates.
            send, recv = boxes(BoxDim(axis, d.tile, d.extent, offset=0, span=hi),
                               BoxDim(axis, d.tile, d.extent, offset=d.tile, span=hi))
            for parity in (0, 1):
                out.append(Strip(i, axis, "hi", hi, toward_lo, (1, blocks), parity, send, recv))
        if lo:
            # Core c's ghost below its block, [T*c - lo, T*c): the last `lo` elements of core c - 1's
            # block, sent towards higher coordinates.
            send, recv = boxes(BoxDim(axis, d.tile, d.extent, offset=d.tile - lo, span=lo),
                               BoxDim(axis, d.tile, d.extent, offset=-lo, span=lo))
            for parity in (0, 1):
                out.append(Strip(i, axis, "lo", lo, toward_hi, (0, blocks - 1), parity, send, recv))
    return out


def strip_relation(array: Array, s: Strip) -> str:
    """The communication set a strip implements, as text: ``{ [core_src -> core_dst] -> A[...] }``."""
    step = -1 if s.direction in ("W", "N") else 1
    c = s.axis
    dims = ", ".join(f"a{i}" for i in range(array.rank))
    cons = " and ".join(d.isl(f"a{i}") for i, d in enumerate(s.send))
    src = f"core[{c}]"
    dst = f"core[{c} {'+' if step > 0 else '-'} 1]"
    return (f"{{ [{src} -> {dst}] -> {array.name}[{dims}] : {s.senders[0]} <= {c} < {s.senders[1]} and "
            f"{c} mod 2 = {s.parity} and {cons} }}")


def held_map(array: Array, box: tuple[BoxDim, ...], pins: dict[str, int], region) -> isl.Map:
    """``{ M[t, x, y] -> A[a...] }``: what a buffer with ``box`` holds on the cores of ``region`` (pinned
    axes fixed)."""
    dims = ", ".join(f"a{i}" for i in range(array.rank))
    cons = [d.isl(f"a{i}") for i, d in enumerate(box)]
    cons += [f"{a} = {c}" for a, c in pins.items()]
    cons += [f"{region.x0} <= x < {region.x1}", f"{region.y0} <= y < {region.y1}"]
    return imap(f"{{ M[t, x, y] -> {array.name}[{dims}] : {' and '.join(cons) or 'true'} }}", CommError)
