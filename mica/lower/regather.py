"""A layout change between any two block layouts of a small array: gathered to core (0, 0), broadcast back.

:func:`mica.lower.relayout.transpose` moves blocks when the two layouts are a transposition of each other.
Between other layouts — a vector on one line wanted spread over both axes, a 3D activation whose head
dimension moves to the other axis, a layout pinned to a point — an operator that cannot take the layout the
previous operator left would otherwise have no plan, and the whole program would fall to one core. For an
array small enough to be held whole by every core (activations of a decode step are a few KB), the change
runs in four parts, every message over a configured route:

1. every core copies the elements it is the *canonical owner* of (the first core in ``(x, y)`` order that
   holds the element in the source layout: a replicated element is taken once) into a whole-array buffer
   ``F``;
2. rows gather towards column 0: at stage ``s`` core ``x = X-1-s`` sends ``F`` west and the receiver copies
   in the elements owned by the cores east of it; then column 0 gathers towards ``(0, 0)`` the same way
   (cores south of it) — ``X`` and ``Y`` bound the canonical owners (the rows and columns beyond them hold
   nothing to gather: a vector pinned to column 0 needs no row chain);
3. ``(0, 0)`` broadcasts ``F``: one multicast over column 0, then one from column 0 over every row (each
   receiver copies the whole array);
4. every core copies from ``F`` the block the destination layout gives it.

Elements are copied, never combined, so every value arrives bit for bit. The cost is ``X + Y - 2``
one-hop stages of one whole-array message each and two multicasts (the cost model times them like any
shift and multicast), and two whole-array
buffers per core: arrays above :data:`MAX_FRACTION` of a core's SRAM are refused.

Spaces: the source's ownership ``{ core[x, y] -> A[a...] }``; the canonical owner ``{ A[a...] -> core[x, y] }``
(its lexicographic minimum); kernel domains ``[__x, __y] -> { K[a...] }``.

Public API: :func:`regather`, :func:`regather_program`, :func:`layout_change_program`.
"""

from __future__ import annotations

from dataclasses import replace

import islpy as isl

from ..affine.expr import Aff, Const, Read
from ..affine.isl_names import imap, iset
from ..comm.routes import multicast_routes, shift_routes
from ..errors import ScheduleError
from ..meshir.ir import (BoxDim, Compute, Exchange, KAccess, Kernel, KernelClass, Lin, Loop, MeshProgram,
                         Multicast, Rect, Region, RegionTensor, Shift)
from ..targets import Target
from ..tiling.operators import REGATHER_FRACTION

#: The largest share of a core's SRAM the two whole-array buffers may take (the search frees only the
#: layouts of arrays this small: :data:`mica.tiling.operators.REGATHER_FRACTION`).
MAX_FRACTION = REGATHER_FRACTION

_S = Lin(0, (("s", 1),))


def regather(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target
             ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The buffers, kernels and ops that fill ``dst`` (``src``'s array in any block layout) from ``src`` on
    the cores of ``region`` (its corner at the origin), gathering to ``(0, 0)`` and broadcasting (see the
    module text). Preserves every element bit for bit; ``src`` is left as it was. Names start with
    ``prefix``. Raises :class:`ScheduleError` when the whole array is too large for every core to hold
    twice, or a layout has ghost zones."""
    what = f"gathering {src.array} to re-lay it out from {[str(d) for d in src.box]} to {[str(d) for d in dst.box]}"
    if region.x0 or region.y0:
        raise ScheduleError(f"{what}: the region {region} does not start at the origin")
    for t in (src, dst):
        if any(d.window for d in t.box) or t.slots != 1:
            raise ScheduleError(f"{what}: homes with ghost zones or double buffers are not gathered")
        if not t.ownership:
            raise ScheduleError(f"{what}: buffer {t.name} has no ownership relation")
    shape = tuple(d.extent for d in src.box)
    whole = tuple(BoxDim(None, n, n) for n in shape)
    nbytes = src.elem_bytes * _prod(shape)
    if 2 * nbytes > MAX_FRACTION * target.sram_bytes:
        raise ScheduleError(f"{what}: the whole array ({nbytes} B) is too large for every core to hold twice "
                            f"(at most {MAX_FRACTION:.0%} of {target.sram_bytes} B)", cause="sram")
    w, h = region.x1, region.y1
    rank = len(shape)
    idx = ", ".join(f"a{i}" for i in range(rank))
    every = f"{{ core[x, y] -> {src.array}[{idx}] : 0 <= x < {w} and 0 <= y < {h} }}"
    full = RegionTensor(f"{prefix}whole", src.array, src.dtype, src.elem_bytes, region, whole, "recv", every)
    inbox = RegionTensor(f"{prefix}whole_in", src.array, src.dtype, src.elem_bytes, region, whole, "recv", every)
    own = imap(src.ownership).intersect_domain(iset(f"{{ core[x, y] : 0 <= x < {w} and 0 <= y < {h} }}"))
    canon = own.reverse().lexmin().reverse()                    # { core[x, y] -> A[a] }: one owner each
    name = f"{prefix}regather"
    box = " and ".join(f"0 <= a{i} < {n}" for i, n in enumerate(shape)) or "true"
    loops = tuple(f"a{i}" for i in range(rank))

    def kernel(kname: str, write: RegionTensor, read: RegionTensor | None, dom: isl.Set | str) -> Kernel:
        ix = tuple(Aff.var(a) for a in loops)
        reads = (KAccess("r0", read.name, ix),) if read is not None else ()
        expr = Read("r0") if read is not None else Const(0.0)
        text = dom if isinstance(dom, str) else str(dom.set_tuple_name(kname))
        cls = (KernelClass(f"{kname}_0", replace(region, name=f"{kname}_0")),)
        return Kernel(kname, "", loops, text, loops, KAccess("w", write.name, ix), reads, expr, cls)

    def held(rel: isl.Map, cond: str) -> isl.Set:
        """``[__x, __y] -> { K[a...] }``: the elements of the array some core ``(x2, y2)`` with ``cond`` holds
        in ``rel``."""
        pick = iset(f"[__x, __y] -> {{ core[x2, y2] : {cond} }}")
        # bounded by the array's extents: an ownership relation may leave a whole dimension unbounded
        return rel.intersect_domain(pick).range().set_tuple_name("K").intersect(
            iset(f"[__x, __y] -> {{ K[{idx}] : {box} }}"))

    kernels = [kernel(f"{name}_own", full, src, held(canon, "x2 = __x and y2 = __y")),
               kernel(f"{name}_row", full, inbox, held(canon, "y2 = __y and x2 > __x")),
               kernel(f"{name}_col", full, inbox, held(canon, "y2 > __y")),
               kernel(f"{name}_all", full, inbox, f"[__x, __y] -> {{ K[{idx}] : {box} }}"),
               kernel(f"{name}_out", dst, full, held(imap(dst.ownership), "x2 = __x and y2 = __y"))]
    zero = kernel(f"{name}_zero", full, None, f"[__x, __y] -> {{ K[{idx}] : {box} }}")
    zero = replace(zero, expr=Const(0) if src.dtype.startswith(("i", "u")) else Const(0.0))
    kernels.insert(0, zero)
    k_zero, k_own, k_row, k_col, k_all, k_out = (k.name for k in kernels)
    everywhere = Rect.of(0, w, 0, h)
    ops: list = [Compute(k_zero, everywhere), Compute(k_own, everywhere)]

    def chain(axis: str, direction: str, n: int, across: int, toward_zero: bool, acc: str) -> None:
        """Stage ``s`` of a chain of one-hop shifts along ``axis`` on every line of ``across`` cores: towards 0
        from position ``n-1-s``, or away from 0 from position ``s``; the receivers run ``acc``."""
        if n <= 1:
            return
        if toward_zero:
            snd, rcv = Lin(n - 1, (("s", -1),)), Lin(n - 2, (("s", -1),))
        else:
            snd, rcv = _S, Lin(1, (("s", 1),))
        line = (Lin(0),), (Lin(across),)
        if axis == "x":
            senders, receivers = Rect((snd,), (snd.shifted(1),), *line), Rect((rcv,), (rcv.shifted(1),), *line)
        else:
            senders, receivers = Rect(*line, (snd,), (snd.shifted(1),)), Rect(*line, (rcv,), (rcv.shifted(1),))
        shift = Shift(f"{src.array} whole {direction}", src.array, full.name, inbox.name, direction, senders,
                      receivers, 0, shift_routes(direction, senders, receivers, 0),
                      relation=f"{{ [core_src[{axis}'] -> core_dst[{axis}' {'-' if toward_zero else '+'} 1]] }} "
                               f"along {axis}")
        ops.append(Loop("s", n - 1, (Exchange(f"{name}_{axis}_{direction}", (shift,)), Compute(acc, receivers))))

    def broadcast(axis: str, n: int, across: int) -> None:
        """Position 0 of every line of ``across`` cores along ``axis`` multicasts ``F`` over its line in one
        message; every core of the line (the root too: its copy is its own) copies it in."""
        if n <= 1:
            return
        line = (Lin(0),), (Lin(across),)
        first, whole_line = ((Lin(0),), (Lin(1),)), ((Lin(0),), (Lin(n),))
        senders, receivers = (Rect(*first, *line), Rect(*whole_line, *line)) if axis == "x" else \
            (Rect(*line, *first), Rect(*line, *whole_line))
        mc = Multicast(f"{src.array} whole along {axis}", src.array, full.name, inbox.name, axis, Lin(0), senders,
                       receivers, 0, multicast_routes(axis, Lin(0), (0, n), (0, across), 0), n - 1,
                       relation=f"{{ [core_src[{axis}' = 0] -> core_dst[{axis}']] }} along {axis}")
        ops.extend((Exchange(f"{name}_{axis}_bcast", (mc,)), Compute(k_all, receivers)))

    # Only the rows and columns up to the farthest owner gather (a vector on column 0 needs no row chain).
    owners = canon.domain()                     # the cores that own an element
    xs, ys = (int(owners.dim_max_val(i).to_python()) + 1 for i in (0, 1))
    chain("x", "W", xs, ys, True, k_row)        # every row with owners towards column 0
    chain("y", "N", ys, 1, True, k_col)         # column 0 towards (0, 0)
    broadcast("y", h, 1)                        # (0, 0) over column 0
    broadcast("x", w, h)                        # column 0 over every row
    ops.append(Compute(k_out, everywhere))
    return [full, inbox], kernels, ops


def regather_program(src: RegionTensor, dst: RegionTensor, mesh: tuple[int, int], target: Target) -> MeshProgram:
    """A mesh program that only re-lays out ``src`` into ``dst`` through :func:`regather` on the whole
    ``mesh`` (arena laid out from offset 0), for costing the change with :func:`mica.tiling.cost.estimate`."""
    region = Region("work", 0, mesh[0], 0, mesh[1])
    return layout_change_program(f"regather_{src.array}", (src, dst), regather(src, dst, "", region, target),
                                 mesh, region, target, 1)


def layout_change_program(name: str, homes: tuple[RegionTensor, ...], change, mesh: tuple[int, int],
                          region: Region, target: Target, colours: int) -> MeshProgram:
    """A mesh program running only a layout change ``change`` (its buffers, kernels and ops) between the
    buffers ``homes`` on ``region``: every buffer one after another from arena offset 0."""
    bufs, kernels, ops = change
    laid, offset = [], 0
    for t in (*homes, *bufs):
        laid.append(replace(t, offset=offset, region=region))
        offset += t.alloc_bytes
    return MeshProgram(name, target.name, mesh, region, tuple(laid), tuple(kernels), tuple(ops), offset, (),
                       colours)


def _prod(shape) -> int:
    out = 1
    for n in shape:
        out *= n
    return out
