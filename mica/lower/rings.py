"""Ring buffers of a skewed step loop (Cannon, interleaved): read-only panels that move around rings.

Under a skewed step, every array a statement of the step loop reads through the step loop lives in a
*ring buffer* instead of a home: the host loads it already skewed, and before every step but the first
each ring buffer takes the panel its ring successor used (one :class:`RingShift` per array, in one
exchange). How the panels move is derived and proved from the access by
:func:`mica.comm.sets.classify_ring`.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ScheduleError
from ..affine.program import Statement
from ..comm.routes import assign_colours, ring_moves, ring_routes
from ..comm.sets import box_map, classify_ring, need_map
from ..meshir.ir import BoxDim, Exchange, Lin, RingShift, Skew
from .builder import _Builder


def find_ring_arrays(b: _Builder) -> None:
    """Sets ``b.ring_arrays``: under a skewed step, the arrays a statement of the step loop reads through
    the step loop (a reduction's accumulator excepted). Raises :class:`ScheduleError` when the program
    writes one of them (only read-only panels move around rings) or an earlier operator produced one (ring
    buffers are loaded from the host). Adds no buffer."""
    ring_arrays = set()
    if b.skew is not None:
        for s_ in b.in_step:
            red_s = b.reds.get(s_.name)
            for acc in s_.reads:
                if red_s is not None and acc.ref in red_s.read_refs:
                    continue
                if any(ix.coeff(b.step.loop) for ix in acc.index):
                    ring_arrays.add(acc.array)
    if ring_arrays & b.written:
        raise ScheduleError(f"a {b.sched.step.skew} plan would ring {sorted(ring_arrays & b.written)}, which "
                            f"the program also writes; only read-only panels move around rings")
    if ring_arrays & b.resident:
        # Ring buffers are loaded from the host already skewed: an array an earlier operator produced on the
        # mesh would be read as the host's (stale) copy.
        raise ScheduleError(f"a {b.sched.step.skew} plan would ring {sorted(ring_arrays & b.resident)}, which "
                            f"an earlier operator produced on the mesh; ring buffers are loaded from the host")
    b.ring_arrays = ring_arrays


def ring_buffer(b: _Builder, stmt: Statement, acc) -> str:
    """The ring buffer holding ``acc``'s panels; derives and proves how they move (once per array).

    The buffer's box takes the step loop's dimension as coordinate ``kb``; it holds
    ``{ M[t, x, y] -> A[a...] }`` in logical ring coordinates (the interleaved layout is a permutation of
    each line). On first use it is added to ``b.tensors`` and its ring ``(axis, hops, relation)`` to
    ``b.rings``; a second read of the array through another panel shape is a :class:`ScheduleError`."""
    name = f"{acc.array}_ring"
    arr = b.prog.array(acc.array)
    hbox, _ = b.home_box(acc.array)
    box = tuple(BoxDim("kb", b.step.tile, d.extent, True) if ix.single_var() == b.step.loop
                else BoxDim(d.coord, d.tile, d.extent, True) if d.coord
                else BoxDim(None, d.tile, d.extent)
                for d, ix in zip(hbox, acc.index))
    if name in b.tensors and b.tensors[name].box != box:
        raise ScheduleError(f"statement {stmt.name} reads {acc.array} through another panel shape")
    # Derive in logical ring coordinates (the interleaved layout is a permutation of each line).
    logical = Skew("cannon", b.skew.n)
    held = box_map(arr, box, logical)
    lsched = b.sched.copy(step=replace(b.sched.step, skew="cannon"))
    axis, hops, rel = classify_ring(arr, acc.ref, need_map(stmt, acc, lsched), held, b.skew.kind,
                                    b.skew.n, f"statement {stmt.name}, read {acc.ref} of {acc.array}")
    if name not in b.tensors:
        b.add_tensor(name, acc.array, box, "ring", str(held))
        b.rings[name] = (axis, hops, rel)
    return name


def ring_exchange(b: _Builder) -> Exchange:
    """The exchange ``ring_shift`` at the head of the step loop (guarded to ``t >= 1``): one
    :class:`RingShift` per ring buffer of ``b.rings`` moving the panels ``{ M[t, x, y] -> core[x', y'] }``
    one ring position, each on its own colours. Raises when the rings need more colours than the
    target has. Adds nothing to ``b``."""
    ops, next_colour = [], 0
    for name, (axis, hops, rel) in b.rings.items():
        t = b.tensors[name]
        need = len(ring_moves(b.skew.kind, b.skew.n))
        colours = tuple(range(next_colour, next_colour + need))
        next_colour += need
        across = (b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1)
        groups, routes = ring_routes(b.skew.kind, b.skew.n, axis, across, colours)
        ops.append(RingShift(f"{t.array} ring along {axis}", t.array, name, name, axis, b.skew.kind,
                             b.skew.n, across, groups, routes, hops, rel))
    assign_colours(next_colour, b.target.colours, "ring shifts")
    return Exchange("ring_shift", tuple(ops), guard=Lin(0, (("t", 1),)))


def step_ring_exchange(b: _Builder) -> Exchange:
    """:func:`ring_exchange`, and with a double-buffered step marked ``prefetch``: ring arrays are
    read-only (checked by :func:`find_ring_arrays`), so a core forwards the panel it computes with while it
    computes and receives the next one into its ring buffer's second slot (every ring buffer of
    ``b.tensors`` gets ``slots=2``; the exchange joins ``b.prefetched``)."""
    ring = ring_exchange(b)
    if b.double:
        ring = replace(ring, prefetch=True)
        for name in b.rings:
            b.tensors[name] = replace(b.tensors[name], slots=2)
        b.prefetched.append(ring.name)
    return ring
