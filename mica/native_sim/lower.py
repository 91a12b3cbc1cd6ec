"""MeshIR -> the emulator's op code.

A plain translation with no decisions: loop variables get slots by nesting depth (phase loops from the
last slot down), MeshIR rectangles and
boxes become op-code rectangles and boxes, each :class:`~mica.meshir.ir.Exchange` becomes one EXCHANGE op
(its patterns' routes, sends and receives) and each :class:`~mica.meshir.ir.Compute` one COMPUTE op with an
entry per kernel class, clipped to the op's rectangle, and each :class:`~mica.meshir.ir.DramLoad` one DRAM op
reading from slot ``mp.dram.index(array)`` (DRAM_PREFETCH when prefetched). Host loads and stores are not op code: they run
before and after it (:func:`lower` checks they sit at the ends of the program).

``op_names[op_id]`` tells which MeshIR op an emulator error is about, ``ops[op_id]`` is that op (an
:class:`~mica.meshir.ir.Exchange` or :class:`~mica.meshir.ir.Compute`; the trace names its events by it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..emit_c.kernels import KernelModule
from ..errors import MeshIRError
from ..meshir import ir
from . import opcode as oc

_DIR_BITS = {"RAMP": oc.RAMP, "N": oc.NORTH, "E": oc.EAST, "S": oc.SOUTH, "W": oc.WEST}
_AXIS = {"x": oc.AXIS_X, "y": oc.AXIS_Y}


@dataclass(frozen=True)
class Lowered:
    code: np.ndarray
    op_names: tuple[str, ...]
    loads: tuple[ir.HostLoad, ...]
    stores: tuple[ir.HostStore, ...]
    ops: tuple = ()


def _affine(lin: ir.Lin, slots: dict[str, int]) -> oc.Affine:
    coeffs = [0] * oc.MAX_VARS
    for var, c in lin.terms:
        if var not in slots:
            raise MeshIRError(f"loop variable {var!r} used outside its loop")
        coeffs[slots[var]] += c
    return oc.Affine(lin.const, tuple(coeffs), lin.div)


def _bound(b: tuple[ir.Lin, ...], slots, fold) -> tuple[oc.Affine, ...]:
    """The affine terms of a max (lower) or min (upper) bound, constants folded into one."""
    consts = [v.const for v in b if not v.terms]
    terms = [_affine(v, slots) for v in b if v.terms]
    if consts:
        terms.append(oc.Affine(fold(consts)))
    return tuple(terms)


def rect(r: ir.Rect, slots: dict[str, int], guard: ir.Lin | None = None, big: int = 0) -> oc.Rect:
    """The op-code rectangle of ``r``; with a ``guard``, empty wherever the guard is not positive (an
    extra upper bound ``big * guard``, with ``big`` at least the mesh width)."""
    if guard is not None and guard.div != 1:
        raise MeshIRError(f"an exchange guard is a plain affine value, got {guard}")
    x1 = r.x1 if guard is None else (*r.x1, ir.Lin(guard.const * big, tuple((v, c * big) for v, c in guard.terms)))
    return oc.Rect(_bound(r.x0, slots, max), _bound(x1, slots, min),
                   _bound(r.y0, slots, max), _bound(r.y1, slots, min),
                   r.xs, _affine(r.xp, slots), r.ys, _affine(r.yp, slots))


def clip(r: ir.Rect, region: ir.Region) -> ir.Rect:
    """``r`` intersected with a constant region."""
    return ir.Rect((*r.x0, ir.Lin(region.x0)), (*r.x1, ir.Lin(region.x1)),
                   (*r.y0, ir.Lin(region.y0)), (*r.y1, ir.Lin(region.y1)), r.xs, r.xp, r.ys, r.yp)


def box(t: ir.RegionTensor, slots: dict[str, int]) -> oc.Box:
    dims = []
    for d in t.box:
        if d.padded or d.coord == "kb" or d.window:
            dims.append(oc.BoxDim(oc.AXIS_WHOLE, d.alloc, d.alloc))
        elif d.coord is None:
            dims.append(oc.BoxDim(oc.AXIS_WHOLE, d.tile, d.extent))     # tile <= extent (BoxDim)
        elif d.coord in _AXIS:
            dims.append(oc.BoxDim(_AXIS[d.coord], d.tile, d.extent, d.origin))
        else:
            if d.coord not in slots:
                raise MeshIRError(f"buffer {t.name} is indexed by {d.coord!r} outside its loop")
            if d.per != 1:
                raise MeshIRError(f"buffer {t.name}: a box holding a step's block (steps per block {d.per}) has no "
                                  f"emulator layout; plans send the step's panel instead")
            dims.append(oc.BoxDim(oc.AXIS_V0 + slots[d.coord], d.tile, d.extent))
    return oc.Box(t.offset, t.elem_bytes, tuple(dims))


def _bits(dirs: tuple[str, ...]) -> int:
    out = 0
    for d in dirs:
        out |= _DIR_BITS[d]
    return out


def lower(mp: ir.MeshProgram, km: KernelModule) -> Lowered:
    """The op code of ``mp`` calling the kernels of ``km`` by table index."""
    names: list[str] = []
    by_id: list = []                    # the MeshIR op of each op id
    body = list(mp.body)
    loads, stores = [], []
    while body and isinstance(body[0], ir.HostLoad):
        loads.append(body.pop(0))
    while body and isinstance(body[-1], ir.HostStore):
        stores.insert(0, body.pop())
    if any(isinstance(op, (ir.HostLoad, ir.HostStore)) for op, _ in ir.walk_ops(body)):
        raise MeshIRError(f"{mp.name}: host transfers in the middle of a program are not supported yet")

    def go(ops, slots: dict[str, int], phases: int = 0) -> list:
        out = []
        for op in ops:
            if isinstance(op, ir.Loop):
                slot = ir.loop_slot(op, len(slots), phases, oc.MAX_VARS)
                if len(slots) >= oc.MAX_VARS:
                    raise MeshIRError(f"{mp.name}: loops nest deeper than {oc.MAX_VARS}")
                out.append(oc.Loop(slot, op.count, tuple(go(op.body, {**slots, op.var: slot}, phases + op.phase)),
                                   down=op.down))
            elif isinstance(op, ir.Exchange):
                routes, sends, recvs = [], [], []
                g, big = op.guard, mp.mesh[0]

                def R(r):
                    return rect(r, slots, g, big)
                for c in op.ops:
                    routes += [oc.Route(r.colour, _bits(r.rx), _bits(r.tx), R(r.rect)) for r in c.routes]
                    src, dst = box(mp.tensor(c.src), slots), box(mp.tensor(c.dst), slots)
                    if isinstance(c, ir.RingShift):
                        for grp in c.groups:
                            sends.append(oc.Send(grp.colour, abs(grp.offset), R(grp.senders), src))
                            recvs.append(oc.Recv(grp.colour, R(grp.receivers), dst))
                    else:
                        sends.append(oc.Send(c.colour, c.max_hops, R(c.senders), src))
                        recvs.append(oc.Recv(c.colour, R(c.receivers), dst))
                names.append(f"exchange {op.name}{' (prefetched)' if op.prefetch else ''} "
                             f"({', '.join(c.name for c in op.ops)})")
                by_id.append(op)
                out.append(oc.Exchange(len(names) - 1, tuple(routes), tuple(sends), tuple(recvs), op.prefetch))
            elif isinstance(op, ir.DramLoad):
                if op.array not in mp.dram:
                    raise MeshIRError(f"{mp.name}: dram load {op.name} of {op.array}, which is not in device DRAM")
                names.append(f"dram load {op.name}{' (prefetched)' if op.prefetch else ''} ({op.array} -> {op.dst})")
                by_id.append(op)
                out.append(oc.Dram(len(names) - 1, mp.dram.index(op.array), rect(op.rect, slots),
                                   box(mp.tensor(op.dst), slots), op.prefetch))
            elif isinstance(op, ir.Compute):
                k = mp.kernel(op.kernel)
                entries = tuple((km.index(cls.name), rect(clip(op.rect, cls.region), slots)) for cls in k.classes)
                names.append(f"compute {op.kernel}")
                by_id.append(op)
                out.append(oc.Compute(len(names) - 1, entries))
            else:
                raise MeshIRError(f"{mp.name}: cannot lower {type(op).__name__}")
        return out

    code = oc.encode(go(body, {}))
    return Lowered(code, tuple(names), tuple(loads), tuple(stores), tuple(by_id))
