"""A layout change between any two block layouts: an all-gather of the whole array, or line by line.

:func:`mica.lower.relayout.transpose` moves blocks when the two layouts are a transposition of each other.
Between other layouts — a vector on one line wanted spread over both axes, a 3D activation whose head
dimension moves to the other axis, a layout pinned to a point, a factorised matrix gathered onto the core
that solves with it — an operator that cannot take the layout the previous operator left would otherwise
have no plan, and the whole program would fall to one core. For an array small enough to be held whole by
every core (activations of a decode step are a few KB), the change runs in three parts, every message over a
configured route:

1. every row of cores gathers its *row share* ``R`` (the source's box with the ``x`` dimensions whole): at
   step ``t`` the core at position ``t`` of every row multicasts its source block along the row, and every
   receiver copies in the elements that core is the *canonical owner* of (the first core in ``(x, y)``
   order that holds the element in the source layout: a replicated element is taken once);
2. every column gathers the whole array ``F`` the same way: at step ``t`` the core in row ``t`` multicasts
   its row share along the column, and every receiver copies in that row's elements;
3. every core copies from ``F`` the block the destination layout gives it.

Only the rows and columns up to the farthest canonical owner send (a vector pinned to column 0 needs no
row stage, one core alone copies locally), and the gather reaches along each line only as far as the
destination layout has cores (none beyond column 0 and row 0 for a destination on ``(0, 0)``). Elements are
copied, never combined, so every value arrives bit for bit. Each link carries every element of its line
once, in one message per core position: the cost is ``X + Y`` multicasts of a block and of a row share
(the cost model times them like any multicast), with buffers of the whole array, a row share and a block
per core.

A large array does not fit every core: :func:`_by_lines` gathers on lines instead -- every row gathers and
broadcasts what its cores hold, then every column gathers (and broadcasts, when more than its first core needs
it) what its cores need -- by chains of one-hop shifts, with buffers of one line's share. :func:`regather` builds whichever of the two the cost model times shorter
among those whose buffers fit :data:`MAX_FRACTION` of a core's SRAM.

Spaces: the source's ownership ``{ core[x, y] -> A[a...] }``; the canonical owner ``{ A[a...] -> core[x, y] }``
(its lexicographic minimum); kernel domains ``[__x, __y] -> { K[a...] }`` (``[__x, __y, __t]`` at the steps of an
all-gather); the receive buffers of an all-gather ``[t] -> { core[x, y] -> A[a...] }``.

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
from ..tiling.cost import estimate
from ..tiling.operators import REGATHER_FRACTION
from ..tiling.schedule import OTHER_AXIS

#: The largest share of a core's SRAM the two whole-array buffers may take (the search frees only the
#: layouts of arrays this small: :data:`mica.tiling.operators.REGATHER_FRACTION`).
MAX_FRACTION = REGATHER_FRACTION


def regather(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target
             ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The buffers, kernels and ops that fill ``dst`` (``src``'s array in any block layout) from ``src`` on
    the cores of ``region`` (its corner at the origin): gathered whole to ``(0, 0)`` and broadcast (see the
    module text) or line by line (:func:`_by_lines`), whichever the cost model times shorter among those
    that fit (the whole array only when every core can hold it twice). Preserves every element bit for bit;
    ``src`` is left as it was. Names start with ``prefix``. Raises :class:`ScheduleError` when neither fits
    a core's SRAM.

    Either home may have ghost zones (an operator reads the array with a halo): the change reads the elements
    each core of ``src`` owns and fills those each core of ``dst`` owns (their ownership relations, at their
    places inside the wider boxes); the consumer's own strip exchanges fill ``dst``'s ghost zones before it
    reads them, as for any array an earlier operator produced (:mod:`mica.lower.halo`)."""
    what = f"gathering {src.array} to re-lay it out from {[str(d) for d in src.box]} to {[str(d) for d in dst.box]}"
    if region.x0 or region.y0:
        raise ScheduleError(f"{what}: the region {region} does not start at the origin")
    for t in (src, dst):
        if t.slots != 1:
            raise ScheduleError(f"{what}: double buffers are not gathered")
        if not t.ownership:
            raise ScheduleError(f"{what}: buffer {t.name} has no ownership relation")
    shape = tuple(d.extent for d in src.box)
    nbytes = src.elem_bytes * _prod(shape)
    if 2 * nbytes > MAX_FRACTION * target.sram_bytes or any(d.window for d in src.box):
        # (The whole-array gather multicasts ``src``'s own boxes; line by line, what a core owns is copied into
        # its line share first, so a source with ghost zones goes that way.)
        return _by_lines(src, dst, prefix, region, target, what)
    whole = _whole(src, dst, prefix, region)
    try:
        lines = _by_lines(src, dst, prefix, region, target, what)
    except ScheduleError:
        return whole
    # Every hop of the whole-array gather carries the whole array; line by line, one line's share.
    return min((lines, whole), key=lambda change: _cycles(src, dst, change, region, target))


def _cycles(src: RegionTensor, dst: RegionTensor, change, region: Region, target: Target) -> float:
    """Modelled cycles of the layout change ``change`` (its buffers, kernels, ops) on its own."""
    mesh = (region.x1, region.y1)
    return estimate(layout_change_program(f"regather_{src.array}", (src, dst), change, mesh,
                                          replace(region, name="work"), target, 1), target).total_cycles


def _whole(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region
           ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The whole-array all-gather of :func:`regather` (see the module text): every row of cores gathers its
    row share ``R`` by one multicast per core position, then every column gathers the whole array ``F`` from
    the row shares the same way; each core copies its block of ``dst`` from ``F``. Only the rows that own
    elements gather, and only as far along each line as ``dst``'s cores reach. Raises
    :class:`ScheduleError` when ``src`` has a padded dimension on a mesh axis (its blocks are no box a
    receiver can name)."""
    shape = tuple(d.extent for d in src.box)
    if any(d.padded and d.coord in ("x", "y") for d in src.box):
        raise ScheduleError(f"gathering {src.array}: its home {[str(d) for d in src.box]} has padded blocks")
    g = _Gather(src, prefix, region)
    whole = tuple(BoxDim(None, n, n) for n in shape)
    every = f"{{ core[x, y] -> {src.array}[{g.idx}] : 0 <= x < {g.w} and 0 <= y < {g.h} }}"
    full = RegionTensor(f"{prefix}whole", src.array, src.dtype, src.elem_bytes, region, whole, "recv", every)
    own = imap(src.ownership).intersect_domain(g.inside)
    canon = own.reverse().lexmin().reverse()                    # { core[x, y] -> A[a] }: one owner each
    row_share = g.line("x").apply_range(canon)                  # { core[x, y] -> A[a] }: its row's elements
    rows = _widened(src, "x", f"{prefix}whole_row", region, row_share)
    name = f"{prefix}regather"
    here = "x2 = __x and y2 = __y"
    # Every element some core owns arrives in F; any other is zeroed (only those are read past the gather).
    unowned = iset(f"{{ K[{g.idx}] : {g.box} }}").subtract(canon.range().set_tuple_name("K"))
    if not unowned.is_empty():
        g.ops.append(Compute(g.zero(f"{name}_zero", full, f"[__x, __y] -> {unowned}"), g.everywhere))
    # Only the rows and columns up to the farthest owner send (a vector on column 0 needs no row stage),
    # and each line carries its data only as far as the destination's cores reach.
    owners = canon.domain()
    xs, ys = (int(owners.dim_max_val(i).to_python()) + 1 for i in (0, 1))
    users = imap(dst.ownership).intersect_domain(g.inside).domain()
    wx, hy = (int(users.dim_max_val(i).to_python()) + 1 if not users.is_empty() else 1 for i in (0, 1))
    tag = f"{src.array} whole"
    g.allgather("x", src, rows, canon, xs, wx, ys, tag, f"{name}_row")      # every row: its row share
    g.allgather("y", rows, full, row_share, ys, hy, wx, tag, f"{name}_col")   # every column: the whole array
    g.ops.append(Compute(g.kernel(f"{name}_out", dst, full, g.held(imap(dst.ownership), here)), g.everywhere))
    return [full, rows, *g.inboxes], g.kernels, g.ops


def _by_lines(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target, what: str
              ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """A layout change of an array too large for every core to hold: in two phases, one per mesh axis.

    With ``first = x``: every row gathers what its cores hold in ``src`` (its *row share*: ``src``'s box with
    the ``x`` dimensions whole) towards column 0 and broadcasts it back over the row, into buffer ``R``; then
    every column gathers, from the ``R`` of its cores, what its cores need in ``dst`` (``dst``'s box with the
    ``y`` dimensions whole) towards row 0, into buffer ``C``, and broadcasts it over the column (not when
    ``dst`` lives on row 0 only); each core copies its ``dst`` block from ``C``. ``first = y`` is the same with
    the axes swapped; the order whose four buffers (``R``, ``C`` and their inboxes) take less SRAM is built.
    Every element is copied, never combined, by the first core along each line holding it.

    Spaces: ownership relations ``{ core[x, y] -> A[a...] }`` (``src``'s, ``dst``'s, the line shares, the first
    holders on each line); kernel domains ``[__x, __y] -> { K[a...] }``."""
    g = _Gather(src, prefix, region)
    src_own = imap(src.ownership).intersect_domain(g.inside)
    dst_own = imap(dst.ownership).intersect_domain(g.inside)
    plans = []
    for first in ("x", "y"):
        second = OTHER_AXIS[first]
        # A source every core of which already holds its line's share (a whole array on every core) skips the
        # first phase: the second reads the source itself.
        share = g.line(first).apply_range(src_own)
        held = not any(d.window for d in src.box) and share.is_subset(src_own)
        rows = src if held else _widened(_owned(src), first, f"{prefix}lines_{first}", region, share)
        cols = _widened(_owned(dst), second, f"{prefix}lines_{second}", region, g.line(second).apply_range(dst_own))
        plans.append((2 * ((0 if held else rows.max_bytes) + cols.max_bytes), first, rows, cols))
    need, first, rows, cols = min(plans, key=lambda p: (p[0], p[1]))
    if need > MAX_FRACTION * target.sram_bytes:
        raise ScheduleError(f"{what}: its line shares take {need} B of buffers per core even line by line (at "
                            f"most {MAX_FRACTION:.0%} of {target.sram_bytes} B)", cause="sram")
    second = OTHER_AXIS[first]
    n = {"x": region.x1, "y": region.y1}
    name = f"{prefix}regather_lines"
    # Phase 2 takes from R what the core's line needs in dst, each element from the first core of the line
    # holding it; phase 1's broadcast is needed only when some of them are away from position 0.
    taken = g.first_on_lines(imap(rows.ownership).intersect(imap(cols.ownership)), second)
    bufs = []
    for phase, axis, buf, source, first_holders, users in (
            (1, first, rows, src, g.first_on_lines(src_own, first), taken.domain()),
            (2, second, cols, rows, taken, dst_own.domain())):
        if buf is src:
            continue                     # the source holds its line share already
        inbox = replace(buf, name=f"{buf.name}_in")
        share = imap(buf.ownership)
        pos, across = ("x2", "y2") if axis == "x" else ("y2", "x2")
        here = "x2 = __x and y2 = __y"
        k_zero = g.zero(f"{name}{phase}_zero", buf, g.held(share, here))
        k_own = g.kernel(f"{name}{phase}_own", buf, source, g.held(first_holders, here))
        k_acc = g.kernel(f"{name}{phase}_acc", buf, inbox,
                         g.held(first_holders, f"{across} = __{OTHER_AXIS[axis]} and {pos} > __{axis}"))
        k_all = g.kernel(f"{name}{phase}_all", buf, inbox, g.held(share, here))
        g.ops += [Compute(k_zero, g.everywhere), Compute(k_own, g.everywhere)]
        span = int(first_holders.domain().dim_max_val(0 if axis == "x" else 1).to_python()) + 1
        lines = n[OTHER_AXIS[axis]]
        tag = f"{src.array} line share {phase}"
        g.chain(axis, "W" if axis == "x" else "N", span, lines, buf, inbox, k_acc, tag, f"{name}{phase}")
        # The line's share goes back over the line, unless only position 0 of each line needs it (a dst
        # kept on row or column 0).
        if not users.is_subset(iset(f"{{ core[x, y] : {axis} = 0 }}")):
            g.broadcast(axis, n[axis], lines, buf, inbox, k_all, tag, f"{name}{phase}")
        bufs += [buf, inbox]
    k_out = g.kernel(f"{name}_out", dst, cols, g.held(dst_own, "x2 = __x and y2 = __y"))
    g.ops.append(Compute(k_out, g.everywhere))
    return bufs, g.kernels, g.ops


def _owned(t: RegionTensor) -> RegionTensor:
    """``t`` with its ghost zones dropped: each core's box is the block it owns."""
    return replace(t, box=tuple(replace(d, offset=0, span=0) for d in t.box))


def _widened(t: RegionTensor, axis: str, name: str, region: Region, share: isl.Map) -> RegionTensor:
    """A buffer holding ``t``'s array on every line along ``axis``: ``t``'s box with the dimensions on
    ``axis`` whole, owning ``share`` (``{ core[x, y] -> A[a...] }``)."""
    box = tuple(BoxDim(None, d.extent, d.extent) if d.coord == axis else d for d in t.box)
    return RegionTensor(name, t.array, t.dtype, t.elem_bytes, region, box, "recv", str(share))


class _Gather:
    """The kernels and ops of a gather-and-broadcast layout change being built on ``region`` (corner at the
    origin), for ``src``'s array; names start with ``prefix``."""

    def __init__(self, src: RegionTensor, prefix: str, region: Region):
        self.src, self.region = src, region
        self.kernels: list[Kernel] = []
        self.ops: list = []
        self.inboxes: list[RegionTensor] = []
        shape = tuple(d.extent for d in src.box)
        self.loops = tuple(f"a{i}" for i in range(len(shape)))
        self.idx = ", ".join(self.loops)
        self.box = " and ".join(f"0 <= a{i} < {n}" for i, n in enumerate(shape)) or "true"
        self.w, self.h = region.x1, region.y1
        self.inside = iset(f"{{ core[x, y] : 0 <= x < {self.w} and 0 <= y < {self.h} }}")
        self.everywhere = Rect.of(0, self.w, 0, self.h)

    def line(self, axis: str) -> isl.Map:
        """``{ core[x, y] -> core[x2, y2] }``: every core of the region to every core of its line along
        ``axis`` (itself included)."""
        same = "y2 = y" if axis == "x" else "x2 = x"
        return imap(f"{{ core[x, y] -> core[x2, y2] : 0 <= x < {self.w} and 0 <= y < {self.h} and "
                    f"0 <= x2 < {self.w} and 0 <= y2 < {self.h} and {same} }}")

    @staticmethod
    def first_on_lines(held: isl.Map, axis: str) -> isl.Map:
        """``held`` (``{ core[x, y] -> A[a...] }``) keeping, on every line along ``axis``, each element at the
        lowest position that holds it."""
        later = "{ core[x, y] -> core[x2, y] : x2 > x }" if axis == "x" else "{ core[x, y] -> core[x, y2] : y2 > y }"
        return held.subtract(held.apply_domain(imap(later)))

    def kernel(self, kname: str, write: RegionTensor, read: RegionTensor | None, dom: isl.Set | str) -> str:
        """Adds the copy kernel ``write[a...] = read[a...]`` over ``dom`` (without ``read``: ``write[a...] = 0``);
        returns its name."""
        ix = tuple(Aff.var(a) for a in self.loops)
        reads = (KAccess("r0", read.name, ix),) if read is not None else ()
        expr = Read("r0") if read is not None else Const(0) if self.src.dtype.startswith(("i", "u")) else Const(0.0)
        text = dom if isinstance(dom, str) else str(dom.set_tuple_name(kname))
        cls = (KernelClass(f"{kname}_0", replace(self.region, name=f"{kname}_0")),)
        self.kernels.append(Kernel(kname, "", self.loops, text, self.loops, KAccess("w", write.name, ix), reads,
                                   expr, cls))
        return kname

    def zero(self, kname: str, buf: RegionTensor, dom: isl.Set | str | None = None) -> str:
        """Adds a kernel that zeroes ``buf`` over ``dom`` (default: every element of the array, for a buffer
        holding it whole); returns its name."""
        return self.kernel(kname, buf, None, dom or f"[__x, __y] -> {{ K[{self.idx}] : {self.box} }}")

    def held(self, rel: isl.Map, cond: str) -> isl.Set:
        """``[__x, __y] -> { K[a...] }``: the elements of the array some core ``(x2, y2)`` with ``cond`` holds
        in ``rel``."""
        params = "__x, __y, __t" if "__t" in cond else "__x, __y"
        pick = iset(f"[{params}] -> {{ core[x2, y2] : {cond} }}")
        # bounded by the array's extents: an ownership relation may leave a whole dimension unbounded
        return rel.intersect_domain(pick).range().set_tuple_name("K").intersect(
            iset(f"[{params}] -> {{ K[{self.idx}] : {self.box} }}"))

    def allgather(self, axis: str, send: RegionTensor, buf: RegionTensor, canon: isl.Map, n: int, reach: int,
                  across: int, tag: str, name: str) -> None:
        """Fills ``buf`` on the first ``reach`` positions of the first ``across`` lines along ``axis`` with the
        elements ``canon`` (``{ core[x, y] -> A[a...] }``, no element twice on one line) gives the cores of
        its line, read from their ``send`` buffers: at step ``t`` the core at position ``t`` (plus ``send``'s
        origin on ``axis``) of every line multicasts its ``send`` box along the line (the receive buffer's box
        is ``send``'s with ``t`` for ``axis``), and every receiver copies in the elements that core owns. The
        ``n`` positions with owners send; one position alone copies locally."""
        pos, other = ("x2", "y2") if axis == "x" else ("y2", "x2")
        on_line = f"{other} = __{OTHER_AXIS[axis]}"
        if n <= 1 and reach <= 1:
            copy = self.kernel(f"{name}_own", buf, send, self.held(canon, f"{pos} = __{axis} and {on_line}"))
            self.ops.append(Compute(copy, self.everywhere))
            return
        origins = {d.origin for d in send.box if d.coord == axis}
        if len(origins) > 1:
            raise ScheduleError(f"gathering {send.array}: the blocks of {send.name} start at different cores")
        o = origins.pop() if origins else 0
        box = tuple(BoxDim("t", d.tile, d.extent) if d.coord == axis else d for d in send.box)
        # [t] -> { core[x, y] -> A[a...] }: what the step's root holds in send
        root_of = imap(f"[t] -> {{ core[x, y] -> core[x2, y2] : {pos} = t + {o} and {on_line.replace('__', '')} }}")
        inbox = RegionTensor(f"{buf.name}_in", send.array, send.dtype, send.elem_bytes, self.region, box, "recv",
                             str(root_of.apply_range(imap(send.ownership))))
        self.inboxes.append(inbox)
        span = max(n, reach)
        root = Lin(o, (("t", 1),))
        line = ((Lin(0),), (Lin(across),))
        at, whole, took = ((root,), (root.shifted(1),)), ((Lin(0),), (Lin(span),)), ((Lin(0),), (Lin(reach),))
        senders, receivers, took = ((Rect(*at, *line), Rect(*whole, *line), Rect(*took, *line)) if axis == "x" else
                                    (Rect(*line, *at), Rect(*line, *whole), Rect(*line, *took)))
        mc = Multicast(f"{tag} along {axis}", send.array, send.name, inbox.name, axis, root, senders, receivers, 0,
                       multicast_routes(axis, root, (0, span), (0, across), 0), span - 1,
                       relation=f"{{ [core_src[{axis}' = t + {o}] -> core_dst[{axis}']] }} along {axis}")
        copy = self.kernel(f"{name}_take", buf, inbox, self.held(canon, f"{pos} = __t + {o} and {on_line}"))
        self.ops.append(Loop("t", n - o, (Exchange(f"{name}_{axis}_mcast", (mc,)), Compute(copy, took))))

    def chain(self, axis: str, direction: str, n: int, across: int, buf: RegionTensor, inbox: RegionTensor,
              acc: str, tag: str, name: str) -> None:
        """Stage ``s`` of a chain of one-hop shifts of ``buf`` towards position 0 along ``axis`` on every line
        of ``across`` cores, from position ``n-1-s``; the receivers run ``acc``."""
        if n <= 1:
            return
        snd, rcv = Lin(n - 1, (("s", -1),)), Lin(n - 2, (("s", -1),))
        line = (Lin(0),), (Lin(across),)
        if axis == "x":
            senders, receivers = Rect((snd,), (snd.shifted(1),), *line), Rect((rcv,), (rcv.shifted(1),), *line)
        else:
            senders, receivers = Rect(*line, (snd,), (snd.shifted(1),)), Rect(*line, (rcv,), (rcv.shifted(1),))
        shift = Shift(f"{tag} {direction}", self.src.array, buf.name, inbox.name, direction, senders,
                      receivers, 0, shift_routes(direction, senders, receivers, 0),
                      relation=f"{{ [core_src[{axis}'] -> core_dst[{axis}' - 1]] }} along {axis}")
        self.ops.append(Loop("s", n - 1, (Exchange(f"{name}_{axis}_{direction}", (shift,)),
                                          Compute(acc, receivers))))

    def broadcast(self, axis: str, n: int, across: int, buf: RegionTensor, inbox: RegionTensor, copy: str,
                  tag: str, name: str) -> None:
        """Position 0 of every line of ``across`` cores along ``axis`` multicasts ``buf`` over its line in one
        message; every core of the line (the root too: its copy is its own) runs ``copy``."""
        if n <= 1:
            return
        line = (Lin(0),), (Lin(across),)
        first, whole_line = ((Lin(0),), (Lin(1),)), ((Lin(0),), (Lin(n),))
        senders, receivers = (Rect(*first, *line), Rect(*whole_line, *line)) if axis == "x" else \
            (Rect(*line, *first), Rect(*line, *whole_line))
        mc = Multicast(f"{tag} along {axis}", self.src.array, buf.name, inbox.name, axis, Lin(0), senders,
                       receivers, 0, multicast_routes(axis, Lin(0), (0, n), (0, across), 0), n - 1,
                       relation=f"{{ [core_src[{axis}' = 0] -> core_dst[{axis}']] }} along {axis}")
        self.ops.extend((Exchange(f"{name}_{axis}_bcast", (mc,)), Compute(copy, receivers)))


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
