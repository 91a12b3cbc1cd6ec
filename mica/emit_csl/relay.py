"""Multicasts whose root moves, relayed hop by hop on a fixed number of colours (the CSL back end's
answer to the colour budget).

A CSL router holds one static route per colour, so a MeshIR :class:`~mica.meshir.ir.Multicast` whose root
moves with the step loop (SUMMA: root ``x = t``) needs one route table, hence about one colour, per root:
a 16x16 SUMMA needs 32 route tables, more than the 24 colours (21 with memcpy), and WSE-3, which binds
each fabric queue to one colour for the whole program, runs out of queues from 4x4. When the plan does
not fit, :func:`relay_multicasts` rewrites each such multicast as

1. a copy of the root's ``src`` box into its own ``dst`` (the root receives its own panel in a
   multicast), a kernel whose domain holds only the root line at each step; then
2. a loop of ``n - 1`` hops ``h``: the core ``h`` hops east of the root sends its ``dst`` box one hop
   east, the core ``h`` hops west of it one hop west (north / south for a multicast along y). Every hop
   is a one-hop :class:`~mica.meshir.ir.Shift` from a single line position; its concrete route tables do
   not depend on the root, only on the column (row) that sends, so the plan's channel colouring gives
   the sends of neighbouring columns different colours and reuses them two columns on: about two
   colours per direction and axis (8 for SUMMA) at any mesh size, and each core receives on at most
   one colour per direction.

Every element of ``dst`` on every receiving core is the root's ``src`` element, as in the multicast: the
value moves unchanged along the line, one core at a time. The price is latency: a panel reaches the
far end after ``n - 1`` store-and-forward hops, each paying a relay through the core (PLMR's beta), where
the multicast paid one fabric pass. The emulator and the cost model keep the multicast (the program
MICA models); ``plan.json`` names the relayed multicasts (``relayed_multicasts``).

A root that moves every ``tile`` steps (``floor(t / tile)``, :attr:`ir.Lin.div`: a multicast from the core
owning step ``t``'s block, :func:`mica.lower.reads.step_owner_plan`) is relayed the same way: the copy runs
on the owner of the step's block and hop ``h`` starts ``h`` cores from it (``floor((t + h*tile) / tile)``).

Only multicasts of an exchange that sits directly in the outermost loop, without a guard, whose root moves
with that loop, whose receivers are a fixed rectangle and whose root's source box is its receive box
block for block (:func:`_same_blocks`) are relayed; the others are left as they are. A
prefetched (double-buffered) exchange is relayed single-buffered: its loop now holds the relay's
exchanges, so :func:`mica.meshir.prefetch.double_buffering` drops its prefetch, and the relayed panel
buffers keep one slot -- the values are those of the prefetched program, as the emulator's are.

Public API: :func:`relayable`, :func:`relay_multicasts`.
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.expr import Aff, Read
from ..comm.routes import TOWARDS, shift_routes
from ..meshir import ir

#: The direction of a hop along ``axis`` towards larger (True) or smaller (False) coordinates.


def _fixed(bounds: tuple[ir.Lin, ...]) -> int | None:
    """The value of a rectangle bound that names no loop variable (one term), else None."""
    return bounds[0].const if len(bounds) == 1 and not bounds[0].terms else None


def _same_blocks(c: ir.Multicast, src: ir.RegionTensor, dst: ir.RegionTensor, var: str) -> bool:
    """True when the root's ``src`` box and its ``dst`` box hold the same elements in the same layout at
    every step (so copying by global index, as the root copy does, moves what the multicast's message
    would): equal dimensions but for the coordinate of the multicast's axis in ``src`` becoming the loop
    variable in ``dst``, with the root at block ``var`` of ``src``."""
    if len(src.box) != len(dst.box):
        return False
    for a, b in zip(src.box, dst.box):
        if (a.tile, a.extent, a.padded, a.offset, a.span) != (b.tile, b.extent, b.padded, b.offset, b.span):
            return False
        if a.coord == b.coord and a.origin == b.origin:
            continue
        if not (a.coord == c.axis and b.coord == "t" and var == "t" and c.root == ir.Lin(a.origin, (("t", 1),))):
            return False
    return True


def _relayable_op(mp: ir.MeshProgram, c, var: str) -> bool:
    if not isinstance(c, ir.Multicast) or not c.root.terms or {v for v, _ in c.root.terms} != {var}:
        return False
    r = c.receivers
    return r.xs == r.ys == 1 and all(_fixed(b) is not None for b in (r.x0, r.x1, r.y0, r.y1)) \
        and _same_blocks(c, mp.tensor(c.src), mp.tensor(c.dst), var)


def _candidates(mp: ir.MeshProgram):
    """(index in the body, loop, index in the loop body) of every exchange with relayable multicasts."""
    for i, op in enumerate(mp.body):
        if not isinstance(op, ir.Loop) or op.var != "t":
            continue
        for j, ex in enumerate(op.body):
            if isinstance(ex, ir.Exchange) and ex.guard is None \
                    and any(_relayable_op(mp, c, op.var) for c in ex.ops):
                yield i, op, j


def relayable(mp: ir.MeshProgram) -> list[str]:
    """The names of the multicasts :func:`relay_multicasts` would relay (empty: nothing to relay)."""
    return [c.name for i, loop, j in _candidates(mp) for c in loop.body[j].ops if _relayable_op(mp, c, loop.var)]


def _copy_kernel(name: str, c: ir.Multicast, src: ir.RegionTensor, dst: ir.RegionTensor) -> ir.Kernel:
    """``dst[a] = src[a]`` for every element ``a`` of the root's box, on the root line only (kernel
    parameters: ``__x``, ``__y`` the core, ``__t`` the step)."""
    loops = tuple(f"a{i}" for i in range(len(dst.box)))
    root = " + ".join([f"{k}*__{v}" for v, k in c.root.terms] + [str(c.root.const)])
    if c.root.div != 1:
        root = f"floor(({root}) / {c.root.div})"
    cons = [d.isl(a, "__") for d, a in zip(src.box, loops)] + [d.isl(a, "__") for d, a in zip(dst.box, loops)]
    cons.append(f"__{c.axis} = {root}")
    dom = f"[__x, __y, __t] -> {{ {name}[{', '.join(loops)}] : {' and '.join(cons)} }}"
    index = tuple(Aff.var(a) for a in loops)
    r = c.receivers
    region = ir.Region(f"{name}_0", _fixed(r.x0), _fixed(r.x1), _fixed(r.y0), _fixed(r.y1))
    return ir.Kernel(name, "", loops, dom, loops, ir.KAccess("w", dst.name, index),
                     (ir.KAccess("r0", src.name, index),), Read("r0"), (ir.KernelClass(f"{name}_0", region),))


def _hops(c: ir.Multicast, hop: str, colour: int) -> tuple[list[ir.Shift], int]:
    """The two one-hop shifts of hop ``hop`` of multicast ``c`` (towards larger and smaller coordinates
    along its axis), and the number of hops its line needs."""
    r = c.receivers
    lo, hi = (_fixed(r.x0), _fixed(r.x1)) if c.axis == "x" else (_fixed(r.y0), _fixed(r.y1))
    k = c.root.div                                                  # root = floor((const + terms) / k)
    at = ir.Lin(c.root.const, c.root.terms + ((hop, k),), k)        # root + h
    back = ir.Lin(c.root.const, c.root.terms + ((hop, -k),), k)     # root - h
    out = []
    for k, up in enumerate((True, False)):
        if up:      # senders root + h < hi - 1, receivers root + h + 1
            s0, s1, d0, d1 = (at, ir.Lin(lo)), (at.shifted(1), ir.Lin(hi - 1)), \
                (at.shifted(1), ir.Lin(lo + 1)), (at.shifted(2), ir.Lin(hi))
        else:       # senders root - h > lo, receivers root - h - 1
            s0, s1, d0, d1 = (back, ir.Lin(lo + 1)), (back.shifted(1), ir.Lin(hi)), \
                (back.shifted(-1), ir.Lin(lo)), (back, ir.Lin(hi - 1))
        if c.axis == "x":
            senders = ir.Rect(s0, s1, r.y0, r.y1)
            receivers = ir.Rect(d0, d1, r.y0, r.y1)
        else:
            senders = ir.Rect(r.x0, r.x1, s0, s1)
            receivers = ir.Rect(r.x0, r.x1, d0, d1)
        direction = TOWARDS[(c.axis, up)]
        out.append(ir.Shift(f"{c.name} relay {direction}", c.array, c.dst, c.dst, direction, senders, receivers,
                            colour + k, shift_routes(direction, senders, receivers, colour + k)))
    return out, hi - lo - 1


def relay_multicasts(mp: ir.MeshProgram) -> ir.MeshProgram:
    """``mp`` with every relayable multicast (see the module docstring) relayed hop by hop; the same
    values on every core after each exchange. Returns ``mp`` itself when there is none."""
    cands = list(_candidates(mp))
    if not cands:
        return mp
    kernels = list(mp.kernels)
    used = {v for _, scope in mp.walk() for v, _ in scope}
    hop = next(v for v in ("h", "hop", "h_relay") if v not in used)
    body = list(mp.body)
    for i in sorted({i for i, _, _ in cands}):
        loop = body[i]
        inner: list = []
        for ex in loop.body:
            if not (isinstance(ex, ir.Exchange) and ex.guard is None):
                inner.append(ex)
                continue
            kept, copies, shifts, count = [], [], [], 0
            for c in ex.ops:
                if not _relayable_op(mp, c, loop.var):
                    kept.append(c)
                    continue
                name = f"{ex.name}_{len(copies)}_root_copy"
                kernels.append(_copy_kernel(name, c, mp.tensor(c.src), mp.tensor(c.dst)))
                copies.append(ir.Compute(name, c.receivers))
                pair, n = _hops(c, hop, 2 * len(copies) - 2)
                shifts += pair
                count = max(count, n)
            if kept:
                inner.append(replace(ex, ops=tuple(kept)))
            inner += copies
            if count:
                inner.append(ir.Loop(hop, count, (ir.Exchange(f"{ex.name}_relay", tuple(shifts)),)))
        body[i] = replace(loop, body=tuple(inner))
    out = replace(mp, kernels=tuple(kernels), body=tuple(body))
    # a relayed multicast's panel buffer is single-buffered now, unless a prefetched exchange still fills it
    relayed = {c.dst for _, loop, j in cands for c in loop.body[j].ops if _relayable_op(mp, c, loop.var)}
    prefetched = {n for op, _ in out.walk() if isinstance(op, ir.Exchange) and op.prefetch
                  for c in op.ops for n in (c.src, c.dst)}
    return replace(out, tensors=tuple(replace(t, slots=1) if t.name in relayed - prefetched else t
                                      for t in out.tensors))
