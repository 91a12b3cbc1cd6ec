"""Operators placed side by side: a mesh program moved to another corner, and blocks moved between regions.

A program of several operators may run some of them at the same time on disjoint rectangles of the mesh
(``E = A B`` and ``F = C D`` of ``3mm`` on the two halves of a wafer too big for either). Each operator is
built as usual on a mesh the size of its rectangle, with its first core at (0, 0); :func:`translate` then
moves the whole MeshIR so that its first core is ``origin``: every rectangle, route, root and region is
shifted, kernel domains take ``__x - ox`` for ``__x`` (:func:`mica.affine.isl_names.shift_params`), and
every box records the core that holds its block 0 (:attr:`BoxDim.origin`), so each core keeps the block
it had before the move. The emulator's per-core clocks then run the operators of disjoint rectangles
concurrently, and the cost model does the same (:func:`mica.tiling.cost.estimate`).

An array one operator leaves on its rectangle and another reads on a different one, with the same tiles,
is moved by :func:`move_blocks`: a **conveyor** of one-hop shifts along one mesh axis. Each block is copied
into a one-block lane, every lane moves one hop per step (two colours by parity of the sender, so that
no router both sends and receives on one colour) for ``d`` steps, ``d`` the distance between the two
rectangles, and each lane is copied into the destination home. All of a row's blocks must cross the one
link between the rectangles anyway, so the conveyor's ``d`` steps of a block each are what the link
allows; no route ever passes a message through a core's processor. An array pinned to one line of cores
across the move (a reduction's result on the column its chain ends at) has one block per line to move:
one shift of the whole line ``d`` hops, the routers in between passing it on (:func:`owners` finds the
line, which the box does not name).
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.expr import Aff, Read
from ..affine.isl_names import imap, shift_cores, shift_params
from ..comm.routes import TOWARDS, shift_routes
from ..errors import ScheduleError
from ..targets import Target
from ..meshir.ir import (BoxDim, Compute, Exchange, HostLoad, HostStore, KAccess, Kernel, KernelClass, Lin, Loop,
                 MeshProgram, Multicast, Rect, Region, RegionTensor, Shift)


#: The direction of a move along ``axis`` towards larger (True) or smaller (False) coordinates.


def _region(r: Region, ox: int, oy: int) -> Region:
    return replace(r, x0=r.x0 + ox, x1=r.x1 + ox, y0=r.y0 + oy, y1=r.y1 + oy)


def _rect(r: Rect, ox: int, oy: int) -> Rect:
    def sh(b, k):
        return tuple(v.shifted(k) for v in b)
    return Rect(sh(r.x0, ox), sh(r.x1, ox), sh(r.y0, oy), sh(r.y1, oy), r.xs, r.xp.shifted(ox), r.ys,
                r.yp.shifted(oy))


def _box(box: tuple[BoxDim, ...], ox: int, oy: int) -> tuple[BoxDim, ...]:
    return tuple(replace(d, origin=d.origin + (ox if d.coord == "x" else oy)) if d.coord in ("x", "y") else d
                 for d in box)


def _kernel(k: Kernel, ox: int, oy: int) -> Kernel:
    shifts = {"__x": ox, "__y": oy}
    return replace(k, domain=shift_params(k.domain, shifts, ScheduleError),
                   classes=tuple(replace(c, region=_region(c.region, ox, oy)) for c in k.classes),
                   parts=tuple(_kernel(p, ox, oy) for p in k.parts))


def _relation(text: str, ox: int, oy: int) -> str:
    """A core relation's text with every core tuple shifted (empty text stays empty)."""
    return shift_cores(text, ox, oy, ScheduleError) if text else text


def _comm(c, ox: int, oy: int):
    routes = tuple(replace(r, rect=_rect(r.rect, ox, oy)) for r in c.routes)
    if isinstance(c, Multicast):
        return replace(c, root=c.root.shifted(ox if c.axis == "x" else oy), senders=_rect(c.senders, ox, oy),
                       receivers=_rect(c.receivers, ox, oy), routes=routes)
    if isinstance(c, Shift):
        return replace(c, senders=_rect(c.senders, ox, oy), receivers=_rect(c.receivers, ox, oy), routes=routes)
    raise ScheduleError(f"{c.name}: a {type(c).__name__} (a skewed ring) runs only on an operator placed at "
                        f"core (0, 0); this one is placed at ({ox}, {oy})")


def _ops(ops, ox: int, oy: int) -> tuple:
    out = []
    for op in ops:
        if isinstance(op, Loop):
            out.append(replace(op, body=_ops(op.body, ox, oy)))
        elif isinstance(op, Exchange):
            out.append(replace(op, ops=tuple(_comm(c, ox, oy) for c in op.ops)))
        elif isinstance(op, Compute):
            out.append(replace(op, rect=_rect(op.rect, ox, oy)))
        elif isinstance(op, (HostLoad, HostStore)):
            out.append(replace(op, region=_region(op.region, ox, oy)))
        else:
            raise ScheduleError(f"cannot place op {op!r} away from core (0, 0)")
    return tuple(out)


def translate(mp: MeshProgram, origin: tuple[int, int], mesh: tuple[int, int]) -> MeshProgram:
    """``mp`` (built with its first core at (0, 0)) run with its first core at ``origin`` of ``mesh``.

    Preserves what every core computes and holds, relative to the program's first core: core
    ``(x, y)`` of ``mp`` becomes core ``(x + ox, y + oy)`` with the same kernels, buffers (boxes record the
    origin), routes and messages. Raises :class:`ScheduleError` when the program does not fit ``mesh``
    there, or uses a skewed ring (whose block formula is in absolute coordinates). The ``relation`` a
    communication op records (documentation of the set it implements, read by no pass) stays in the
    operator's own coordinates."""
    ox, oy = origin
    if ox < 0 or oy < 0 or mp.region.x1 + ox > mesh[0] or mp.region.y1 + oy > mesh[1]:
        raise ScheduleError(f"{mp.name}: its cores {mp.region} placed at ({ox}, {oy}) do not fit the "
                            f"{mesh[0]}x{mesh[1]} mesh")
    if (ox, oy) == (0, 0):
        return replace(mp, mesh=tuple(mesh))
    if mp.skew is not None:
        raise ScheduleError(f"{mp.name}: a skewed plan (ring shifts) runs only at core (0, 0); it is placed at "
                            f"({ox}, {oy})")
    tensors = tuple(replace(t, region=_region(t.region, ox, oy), box=_box(t.box, ox, oy),
                            ownership=_relation(t.ownership, ox, oy)) for t in mp.tensors)
    return replace(mp, mesh=tuple(mesh), region=_region(mp.region, ox, oy), tensors=tensors,
                   kernels=tuple(_kernel(k, ox, oy) for k in mp.kernels), body=_ops(mp.body, ox, oy))


def same_place(a: RegionTensor, b: RegionTensor) -> bool:
    """True when ``a`` and ``b`` hold the same blocks on the same cores: equal boxes and the same first
    core (an array pinned to a line of cores is placed by its region, not its box), and the same cores
    holding each element (a copy on every core is not the same place as one copy on core (0, 0))."""
    if a.box != b.box or (a.region.x0, a.region.y0) != (b.region.x0, b.region.y0):
        return False
    return a.ownership == b.ownership or not copies(a) and not copies(b) or \
        imap(a.ownership).is_equal(imap(b.ownership))


def copies(t: RegionTensor) -> bool:
    """Some element of ``t`` is held by more than one core (a home replicated along a mesh axis)."""
    return not imap(t.ownership).reverse().is_single_valued()


def same_blocks(src: RegionTensor, dst: RegionTensor) -> bool:
    """True when ``dst`` holds ``src``'s blocks, perhaps on other cores: the boxes differ at most in their
    origins."""
    def key(t):
        return tuple(replace(d, origin=0) for d in t.box)
    return len(src.box) == len(dst.box) and key(src) == key(dst)


def move_distance(src: RegionTensor, dst: RegionTensor) -> tuple[int, int]:
    """How far ``dst``'s blocks are from ``src``'s: ``(dx, dy)`` between the first cores of their regions."""
    return dst.region.x0 - src.region.x0, dst.region.y0 - src.region.y0


def _copy(name: str, dst: RegionTensor, src: RegionTensor, box: tuple[BoxDim, ...], shift: tuple[int, ...],
          region: Region) -> Kernel:
    """``dst[a + shift] = src[a]`` for every element ``a`` of ``box``'s block at each core of ``region``."""
    loops = tuple(f"a{i}" for i in range(len(box)))
    cons = " and ".join(d.isl(a, "__") for d, a in zip(box, loops))
    dom = f"[__x, __y, __t] -> {{ {name}[{', '.join(loops)}] : {cons} }}"
    index = tuple(Aff.var(a) for a in loops)
    moved = tuple(Aff.var(a) + k if k else Aff.var(a) for a, k in zip(loops, shift))
    return Kernel(name, "", loops, dom, loops, KAccess("w", dst.name, moved), (KAccess("r0", src.name, index),),
                  Read("r0"), (KernelClass(f"{name}_0", replace(region, name=f"{name}_0")),))


def move_blocks(src: RegionTensor, dst: RegionTensor, prefix: str, target: Target
                ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The lane, kernels and ops that fill ``dst`` from ``src`` when ``dst`` holds the same blocks on a
    rectangle ``d`` cores away along one mesh axis (see the module docstring); ``src`` is left as it was.

    Preserves every element of the array. The lane is a padded one-block buffer on every core of the band
    from ``src``'s rectangle to ``dst``'s, indexed through ``dst``'s box: a core holds in it the block
    ``dst`` gives it. So the loading core, ``d`` cores before the one that will deliver the block, writes
    each element under its index less ``d`` tiles (the same place in the lane as at the delivering core,
    whose box starts ``d`` tiles further), and the delivering core copies the lane as it is.
    An array pinned to a line across the move is sent in one ``d``-hop shift instead (no lane, no kernels).
    Raises :class:`ScheduleError` when the layouts are not the same blocks, or the rectangles are apart
    along both axes."""
    what = f"moving {src.array} from the cores {src.region} to {dst.region}"
    if not same_blocks(src, dst):
        raise ScheduleError(f"{what}: the layouts {[str(d) for d in src.box]} and {[str(d) for d in dst.box]} "
                            f"are not the same blocks")
    dx, dy = move_distance(src, dst)
    if dx and dy or not (dx or dy):
        raise ScheduleError(f"{what}: blocks move along one mesh axis only (distance ({dx}, {dy}))")
    axis = "x" if dx else "y"
    if not any(b.coord == axis for b in src.box):
        return _move_line(src, dst, axis, what)
    moved = next(b.origin for b in dst.box if b.coord == axis) - next(b.origin for b in src.box if b.coord == axis)
    if moved != (dx or dy):
        raise ScheduleError(f"{what}: the blocks are {moved} cores apart, the rectangles {dx or dy}")
    if target.colours < 2:
        raise ScheduleError(f"{what}: the conveyor needs 2 colours; {target.name}'s routers hold {target.colours}",
                            cause="colours")
    axis, d = ("x", dx) if dx else ("y", dy)
    s, e = src.region, dst.region
    band = Region(f"{prefix}band", min(s.x0, e.x0), max(s.x1, e.x1), min(s.y0, e.y0), max(s.y1, e.y1))
    lane = RegionTensor(f"{prefix}lane", src.array, src.dtype, src.elem_bytes, band,
                        tuple(replace(b, padded=True) if b.coord else b for b in dst.box), "recv", "")
    step = tuple(b.tile * d if b.coord == axis else 0 for b in src.box)
    name = f"{prefix}move"
    load = _copy(f"{name}_load", lane, src, src.box, tuple(-k for k in step), s)
    deliver = _copy(f"{name}_deliver", dst, lane, dst.box, (0,) * len(dst.box), e)
    direction = TOWARDS[(axis, d > 0)]
    one = 1 if d > 0 else -1
    t = Lin(0, (("t", one),))
    shifts = []
    for parity in (0, 1):
        if axis == "x":
            senders = Rect((t.shifted(s.x0),), (t.shifted(s.x1),), (Lin(s.y0),), (Lin(s.y1),), 2,
                           Lin(parity), 1, Lin(0))
        else:
            senders = Rect((Lin(s.x0),), (Lin(s.x1),), (t.shifted(s.y0),), (t.shifted(s.y1),), 1, Lin(0), 2,
                           Lin(parity))
        receivers = _rect(senders, one if axis == "x" else 0, one if axis == "y" else 0)
        shifts.append(Shift(f"{src.array} {direction} lane {parity}", src.array, lane.name, lane.name, direction,
                            senders, receivers, parity, shift_routes(direction, senders, receivers, parity)))
    ops = [Compute(load.name, s.rect), Loop("t", abs(d), (Exchange(f"{name}_{direction}", tuple(shifts)),)),
           Compute(deliver.name, e.rect)]
    return [lane], [load, deliver], ops


def owners(t: RegionTensor) -> Region:
    """The smallest rectangle of cores holding elements of ``t`` (from its ownership ``{ core[x, y] -> A }``):
    for an array pinned to a line of cores, that line, which its box does not name."""
    own = imap(t.ownership, ScheduleError).domain()
    if own.is_empty():
        raise ScheduleError(f"{t.name}: no core holds any element of {t.array}")
    lo = [int(own.dim_min_val(k).to_python()) for k in (0, 1)]
    hi = [int(own.dim_max_val(k).to_python()) + 1 for k in (0, 1)]
    return Region(f"{t.name}_owners", lo[0], hi[0], lo[1], hi[1])


def _move_line(src: RegionTensor, dst: RegionTensor, axis: str, what: str
               ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """Ops that fill ``dst`` from ``src`` when both are pinned to one line of cores across ``axis`` (no box
    dimension spreads them along it): one shift of the whole line, the routers in between passing each
    block on. Preserves every element: each core of the line sends its block to the core ``d`` away,
    whose box is the same."""
    a, b = owners(src), owners(dst)
    if src.box != dst.box:
        raise ScheduleError(f"{what}: the layouts {[str(d) for d in src.box]} and {[str(d) for d in dst.box]} "
                            f"are not the same blocks")
    lo, hi = (a.x0, a.x1) if axis == "x" else (a.y0, a.y1)
    if hi - lo != 1:
        raise ScheduleError(f"{what}: the array has no blocks along mesh {axis} but spans cores {a}")
    d = (b.x0 - a.x0, b.y0 - a.y0)
    if (d[1] if axis == "x" else d[0]) or (b.x1 - b.x0, b.y1 - b.y0) != (a.x1 - a.x0, a.y1 - a.y0):
        raise ScheduleError(f"{what}: its lines of cores {a} and {b} are not {axis}-translates of each other")
    dist = d[0] if axis == "x" else d[1]
    direction = TOWARDS[(axis, dist > 0)]
    senders, receivers = a.rect, b.rect
    shift = Shift(f"{src.array} {direction} {abs(dist)} hops", src.array, src.name, dst.name, direction,
                  senders, receivers, 0, shift_routes(direction, senders, receivers, 0, abs(dist)), abs(dist),
                  distance=abs(dist))
    return [], [], [Exchange(f"{dst.name}_move_{direction}", (shift,))]
