"""Arrays streamed from device DRAM (a schedule's :attr:`~mica.tiling.schedule.Schedule.dram`).

On a target with a DRAM level (Tenstorrent), a read-only input too large for the cores' SRAM stays in device
DRAM: it gets no home on the cores and no host load into the arenas. Each step of the step loop, every core
reads the panel it needs into a receive buffer (:class:`~mica.meshir.ir.DramLoad`), the reader kernels'
interleaved-DRAM reads of Tenstorrent's matmul examples. The receive buffer's box follows the read's
subscripts: a dimension indexed by a spatial loop is that loop's tile on its mesh axis, one indexed by the
step loop is the step's tile at ``t``, any other is whole; :func:`stream_buffer` proves with isl that the box
holds everything the core reads at the step.

By default every core reads its own panels: the DRAM traffic is the mesh's width (height) times one copy of
each panel, and the chip's bandwidth is shared by every reader (:meth:`mica.targets.Target.dram_read_cycles`,
charged alike by the cost model and the emulator). With ``Schedule.dram_roots`` a panel that a row (column)
of cores shares is read by the line's first core only and multicast along the line (Tenstorrent's
``matmul_multicore_reuse_mcast``): one copy of each panel crosses the DRAM interface, and the multicast
starts once the root's read is done (the emulator times a prefetched multicast from the later of the
previous compute's start and the root's last DRAM read).

Outputs stay in L1: the written array keeps its home block on every core (at 4096^3 bf16 on 8x8 Wormhole C's
512x512 block is 512 KiB of the 1464 KiB L1, next to two double-buffered 32-wide panels of 32 KiB each) and is
stored to the host at the end. A block that does not fit is an :class:`~mica.errors.SramError` (16384^3 on 8x8:
8 MiB per core); writing C back to DRAM block by block is not built.
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.program import Statement
from ..comm.sets import box_map, need_map
from ..errors import DramError, ScheduleError
from ..comm.routes import assign_colours, multicast_routes
from ..meshir.ir import BoxDim, DramLoad, Exchange, Lin, Multicast, Rect, RegionTensor
from .builder import _Builder


def stream_box(b: _Builder, stmt: Statement, acc) -> tuple[BoxDim, ...]:
    """The per-core, per-step box of the streamed read ``acc`` of ``stmt``: spatial loops' tiles on their axes,
    the step's tile at ``t``, whole elsewhere. Raises :class:`ScheduleError` when it does not hold every
    element the core reads at the step (``need ⊆ box``, proven with isl). Changes nothing."""
    arr = b.prog.array(acc.array)
    space = {sm.loop: sm for sm in b.sched.space}
    dims = []
    for ix, n in zip(acc.index, arr.shape):
        v = ix.single_var()
        if v is not None and v in space:
            dims.append(BoxDim(space[v].axis, space[v].tile, n))
        elif v is not None and b.step is not None and v == b.step.loop:
            dims.append(BoxDim("t", b.step.tile, n))
        else:
            dims.append(BoxDim(None, n, n))
    box = tuple(dims)
    if not need_map(stmt, acc, b.sched).is_subset(box_map(arr, box)):
        raise ScheduleError(f"statement {stmt.name}: read {acc.ref} of {acc.array} reaches outside the panel a "
                            f"core streams from DRAM per step", cause="dram-panel")
    return box


def stream_buffer(b: _Builder, stmt: Statement, acc) -> str:
    """The receive buffer ``<array>_recv`` the streamed read ``acc`` of ``stmt`` uses, added to ``b.tensors``
    (role ``recv``) on first use. Raises :class:`ScheduleError` for a statement outside the step loop (only a
    step's panels stream)."""
    if stmt not in b.in_step:
        raise ScheduleError(f"statement {stmt.name} reads {acc.array} outside step loop {b.step.loop if b.step else ''}"
                            f": only the step's panels stream from DRAM", cause="dram-panel")
    box = stream_box(b, stmt, acc)
    name = f"{acc.array}_recv"
    n = 1
    while name in b.tensors and b.tensors[name].box != box:
        n += 1
        name = f"{acc.array}_recv{n}"
    if name not in b.tensors:
        b.add_tensor(name, acc.array, box, "recv", str(box_map(b.prog.array(acc.array), box)))
    return name


def dram_loads(b: _Builder, stmt: Statement, streams: list[tuple[str, str]], prefetch: bool) -> list:
    """The ops that bring ``stmt``'s streamed panels at a step, one load per (array, receive buffer) of
    ``streams``: on every core of the work region, or (``dram_roots``) for a panel a row (column) of cores
    shares, on the row's (column's) first core only, followed by one exchange multicasting those panels along
    their lines (:func:`root_multicasts`). With ``prefetch`` each is double-buffered (its buffer gets a second
    slot, and the op's name joins ``b.prefetched``)."""
    out: list = []
    casts = []
    for array, dst in dict.fromkeys(streams):
        axis = shared_axis(b.tensors[dst]) if b.sched.dram_roots else None
        rect = b.region.rect if axis is None else root_line(b, axis)
        out.append(DramLoad(f"dram_{stmt.name}_{dst}", array, dst, rect, prefetch))
        if axis is not None:
            casts.append((array, dst, axis))
        if prefetch:
            b.tensors[dst] = replace(b.tensors[dst], slots=2)
            b.prefetched.append(out[-1].name)
    if casts:
        x = root_multicasts(b, f"dram_cast_{stmt.name}", casts)
        if prefetch:
            x = replace(x, prefetch=True)
            b.prefetched.append(x.name)
        out.append(x)
    return out


def shared_axis(t: RegionTensor) -> str | None:
    """The mesh axis along which every core holds the same box of ``t`` (``x`` when no box dimension follows
    ``x`` but one follows ``y``: a row shares it), or None (no line shares it, or every core does)."""
    coords = {d.coord for d in t.box}
    if "y" in coords and "x" not in coords:
        return "x"
    if "x" in coords and "y" not in coords:
        return "y"
    return None


def root_line(b: _Builder, axis: str) -> Rect:
    """The first core of every line along ``axis`` of the work region: column ``x0`` for ``x`` (rows), row ``y0``
    for ``y``."""
    r = b.region
    return Rect.of(r.x0, r.x0 + 1, r.y0, r.y1) if axis == "x" else Rect.of(r.x0, r.x1, r.y0, r.y0 + 1)


def root_multicasts(b: _Builder, name: str, casts: list[tuple[str, str, str]]) -> Exchange:
    """The exchange ``name`` multicasting each (array, buffer, axis) of ``casts`` from the first core of every
    line along ``axis`` to the whole line, the buffer sent into itself (the root's copy is already in place),
    each on its own colour."""
    colours = assign_colours(len(casts), b.target.colours, name)
    ops = []
    r = b.region
    for (array, dst, axis), colour in zip(casts, colours):
        span = (r.x0, r.x1) if axis == "x" else (r.y0, r.y1)
        across = (r.y0, r.y1) if axis == "x" else (r.x0, r.x1)
        root = Lin(span[0])
        ops.append(Multicast(f"{dst}->{dst}", array, dst, dst, axis, root, root_line(b, axis), r.rect, colour,
                             multicast_routes(axis, root, span, across, colour), span[1] - span[0] - 1))
    return Exchange(name, tuple(ops))


def check_dram_capacity(b: _Builder) -> None:
    """Raises :class:`DramError` when the program's arrays do not fit the target's device DRAM (a plan that
    streams keeps its inputs and outputs there, as a Tenstorrent host program does). Changes nothing."""
    if not b.sched.dram:
        return
    if not b.target.has_dram:
        raise ScheduleError(f"target {b.target.name} has no device DRAM to stream {', '.join(b.sched.dram)} from",
                            cause="no-dram")
    need = sum(a.elem_bytes * _elems(a.shape) for a in b.prog.arrays)
    if need > b.target.dram_bytes:
        parts = ", ".join(f"{a.name} {a.elem_bytes * _elems(a.shape):,} B" for a in b.prog.arrays)
        raise DramError(f"{b.prog.name} needs {need:,} bytes of device DRAM ({parts}); target {b.target.name} has "
                        f"{b.target.dram_bytes:,}", needed=need)


def _elems(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
