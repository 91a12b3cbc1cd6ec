"""Programs of several operators: one after another on the mesh, each with its own mapping.

A program whose statements form several top-level loop nests (``2mm``: ``tmp = A B`` then ``D = tmp C``;
``atax``; a gemv feeding an elementwise op) is split into *operators* (:func:`mica.tiling.split.split_operators`), each
mapped by its own :class:`~mica.tiling.schedule.Schedule` (the ``phases`` of a phased schedule). An array
an operator produces stays where that operator left it: later operators take its layout as fixed and
read it in place or through the usual derived communication (a multicast from the producer's layout), so
no data goes back through the host. :func:`build_phased` builds each operator's MeshIR with the pass of
:mod:`mica.lower.build` and merges them: buffers of one operator are renamed ``p<k>_...`` unless they are
an array's shared home, kernels are renamed likewise, every input is loaded once per layout before the
first operator, and every output is stored from the home the last operator that writes it left. The
arena is laid out by liveness (:func:`lay_out`): the receive buffers, rings and lanes of operators that
never run at once share bytes, so the program needs the SRAM of its busiest operator, not of all of them.
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.program import Program
from ..errors import ScheduleError, SramError
from ..targets import Target
from ..tiling.schedule import Schedule
from ..tiling.split import mapped_program, operator_program, phase_operators
from ..comm.halo import merge_widths
from .build import build_mesh_program
from .place import move_blocks, same_blocks, same_place, translate
from .relayout import transpose
from ..meshir.ir import (Compute, Exchange, HostLoad, HostStore, KAccess, Kernel, KernelClass, Loop, MeshProgram, Region,
                 RegionTensor)


def _rename_tensor(t: RegionTensor, name: str) -> RegionTensor:
    return replace(t, name=name)


def _rename_ops(ops, buf, ker):
    out = []
    for op in ops:
        if isinstance(op, Loop):
            out.append(replace(op, body=tuple(_rename_ops(op.body, buf, ker))))
        elif isinstance(op, Exchange):
            out.append(replace(op, ops=tuple(replace(c, src=buf(c.src), dst=buf(c.dst)) for c in op.ops)))
        elif isinstance(op, Compute):
            out.append(replace(op, kernel=ker(op.kernel)))
        elif isinstance(op, (HostLoad, HostStore)):
            out.append(replace(op, buffer=buf(op.buffer)))
        else:
            out.append(op)
    return out


def _rename_kernel(k: Kernel, buf, ker, prefix: str) -> Kernel:
    def acc(a: KAccess) -> KAccess:
        return replace(a, buffer=buf(a.buffer))
    parts = tuple(_rename_kernel(p, buf, ker, prefix) for p in k.parts)
    classes = tuple(KernelClass(prefix + c.name, replace(c.region, name=prefix + c.region.name)) for c in k.classes)
    return replace(k, name=ker(k.name), write=acc(k.write), reads=tuple(acc(a) for a in k.reads),
                   classes=classes, parts=parts)


def build_phased(prog: Program, sched: Schedule, target: Target) -> MeshProgram:
    """The merged MeshIR of every operator of ``prog`` under the phases of ``sched``."""
    ops = phase_operators(prog, sched)
    written = {s.write.array for s in prog.statements}
    homes: dict[str, RegionTensor] = {}          # array -> the buffer holding it between operators
    loaded: set[str] = set()
    tensors: dict[str, RegionTensor] = {}
    kernels: list[Kernel] = []
    loads: list[HostLoad] = []
    body: list = []
    last_writer: dict[str, tuple[str, Region]] = {}
    skew = None
    colours = 0
    x1 = y1 = 1
    mesh_region = Region("mesh", 0, sched.mesh[0], 0, sched.mesh[1])
    live: dict[str, set[int]] = {}               # buffer -> the operators that use it (see lay_out)
    built = _build_operators(prog, ops, sched, target, {})
    widths = shared_ghosts(built)
    if widths:
        built = _build_operators(prog, ops, sched, target, widths)
    for k, mp in enumerate(built):
        if mp.skew is not None:
            if skew is not None and skew != mp.skew:
                raise ScheduleError("two operators ring their panels differently; one skew per program")
            skew = mp.skew
        prefix = f"p{k}_"
        names: dict[str, str] = {}
        relayouts: list = []
        for t in mp.tensors:
            shared = homes.get(t.array)
            if t.role in ("home", "partial") and t.name == t.array:
                if shared is not None and not same_place(shared, t) and t.array not in written:
                    # An array no operator writes may be loaded once per layout.
                    names[t.name] = prefix + t.name
                    tensors[prefix + t.name] = _rename_tensor(t, prefix + t.name)
                    continue
                if shared is not None:
                    dst = _rename_tensor(t, prefix + t.name)
                    if not same_place(shared, t) and (shared.box == t.box or same_blocks(shared, t)):
                        # The same blocks on another operator's rectangle: moved there by a conveyor.
                        moved, need = move_blocks(shared, dst, f"{prefix}{t.array}_", target), 2
                    elif shared.box != t.box:
                        # Produced data in another layout: transposed on the mesh (or a clear error).
                        try:
                            moved = transpose(shared, dst, f"{prefix}{t.array}_", mesh_region, target)
                        except ScheduleError as exc:
                            raise ScheduleError(
                                f"operator {k} expects {t.array} laid out as {[str(d) for d in t.box]}, the "
                                f"previous operator left it as {[str(d) for d in shared.box]}: {exc}") from None
                        need = 4
                    else:
                        names[t.name] = shared.name
                        continue
                    # The source, the destination and the lanes are all live while operator k moves the
                    # blocks (before it runs); the destination is the array's home from now on.
                    lanes, kers, mops = moved
                    for buf in (dst, *lanes):
                        tensors[buf.name] = buf
                    for name in (shared.name, dst.name, *(lane.name for lane in lanes)):
                        live.setdefault(name, set()).add(k)
                    kernels += kers
                    relayouts += mops
                    colours = max(colours, need)
                    homes[t.array] = dst
                    names[t.name] = dst.name
                    continue
                new = t.name if t.name not in tensors else prefix + t.name
                homes[t.array] = _rename_tensor(t, new)
                names[t.name] = new
                tensors[new] = homes[t.array]
            else:
                names[t.name] = prefix + t.name
                tensors[prefix + t.name] = _rename_tensor(t, prefix + t.name)

        for n in names.values():
            live.setdefault(n, set()).add(k)

        def buf(n, names=names):
            return names[n]

        def ker(n, prefix=prefix):
            return prefix + n
        kernels += [_rename_kernel(kn, buf, ker, prefix) for kn in mp.kernels]
        body += relayouts
        for op in _rename_ops(mp.body, buf, ker):
            if isinstance(op, HostLoad):
                if op.array not in prog.inputs:
                    if homes.get(op.array) is None or homes[op.array].name != op.buffer:
                        raise ScheduleError(
                            f"operator {k} reads {op.array}, which an earlier operator produced, through "
                            f"{op.buffer}; MICA does not re-lay out produced data on the mesh yet")
                    continue                 # already where the producer left it
                if op.buffer not in loaded:
                    loads.append(op)
                    loaded.add(op.buffer)
            elif isinstance(op, HostStore):
                last_writer[op.array] = (op.buffer, op.region)
            else:
                body.append(op)
        colours = max(colours, mp.colours)
        x1, y1 = max(x1, mp.region.x1), max(y1, mp.region.y1)
    stores = [HostStore(last_writer[n][0], n, last_writer[n][1]) for n in prog.outputs if n in last_writer]
    region = Region("work", 0, x1, 0, y1)
    for ld in loads:
        live.setdefault(ld.buffer, set()).add(0)        # loaded before the first operator
    for st in stores:
        live.setdefault(st.buffer, set()).add(len(built))   # read back after the last one
    spans = {n: (min(live[n]), max(live[n])) for n in tensors}
    laid, offset = lay_out(list(tensors.values()), spans)
    if offset > target.sram_bytes:
        parts = ", ".join(f"{t.name} {t.max_bytes} B" + (" x 2 slots" if t.slots == 2 else "")
                          + (f" (operators {spans[t.name][0]}-{spans[t.name][1]})"
                             if spans[t.name] != (0, len(built)) else "") for t in laid)
        raise SramError(f"{prog.name}: its operators need {offset} bytes per core at the peak ({parts}); target "
                        f"{target.name} has {target.sram_bytes} bytes of SRAM per core")
    return MeshProgram(prog.name, target.name, sched.mesh, region, tuple(laid), tuple(kernels),
                       tuple(loads + body + stores), offset, tuple(n for n, _ in prog.scalars), colours, skew)


def lay_out(tensors: list[RegionTensor], spans: dict[str, tuple[int, int]]) -> tuple[list[RegionTensor], int]:
    """Arena offsets for ``tensors`` and the arena's size: two buffers whose spans — the first and last
    operator that use them, ``spans[name]`` (loaded buffers from 0, stored ones to one past the last) —
    overlap never share a byte; buffers of operators that never run at once may (the receive buffers,
    rings and lanes of one operator reuse another's). First fit in the given order: when every span
    overlaps, the buffers lie one after another as listed. Offsets stay multiples of the arena
    alignment (every ``alloc_bytes`` is one)."""
    placed: list[tuple[int, int, tuple[int, int]]] = []
    laid = []
    for t in tensors:
        lo, hi = spans[t.name]
        busy = sorted((a, b) for a, b, (l2, h2) in placed if l2 <= hi and lo <= h2)
        at = 0
        for a, b in busy:
            if at + t.alloc_bytes <= a:
                break
            at = max(at, b)
        placed.append((at, at + t.alloc_bytes, (lo, hi)))
        laid.append(replace(t, offset=at))
    return laid, max((b for _, b, _ in placed), default=0)


def _build_operators(prog: Program, ops, sched: Schedule, target: Target, ghosts: dict) -> list[MeshProgram]:
    """Each operator's MeshIR (arrays written by earlier operators resident; homes ghosted by ``ghosts``),
    built on its phase's rectangle and placed at the phase's origin of the whole mesh."""
    out = []
    for k, (stmts, sub_sched) in enumerate(zip(ops, sched.phases)):
        sub = operator_program(prog, stmts, k)
        resident = frozenset(st.write.array for g in ops[:k] for st in g)
        mp = build_mesh_program(sub, sub_sched, target, resident=resident, ghost_widths=ghosts)
        ox, oy = sub_sched.origin
        if ox + sub_sched.mesh[0] > sched.mesh[0] or oy + sub_sched.mesh[1] > sched.mesh[1]:
            raise ScheduleError(f"operator {k} is placed on {sub_sched.cores()}, outside the "
                                f"{sched.mesh[0]}x{sched.mesh[1]} mesh")
        out.append(translate(mp, sub_sched.origin, sched.mesh))
    return out


def _widths(t: RegionTensor) -> tuple[tuple[int, int], ...]:
    """The ghost widths ``(low, high)`` per dimension of a home box (zero where it is not a window)."""
    return tuple((-d.offset, d.span - d.tile + d.offset) if d.window else (0, 0) for d in t.box)


def shared_ghosts(built: list[MeshProgram]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Arrays whose home some operator ghosts and another does not (or ghosts less), with the widths
    every operator's home must then have, so that one home (the widest window) serves all of them.
    Homes tiled differently are left alone (:func:`build_phased` refuses them)."""
    homes: dict[str, list[RegionTensor]] = {}
    for mp in built:
        for t in mp.tensors:
            if t.role == "home" and t.name == t.array:
                homes.setdefault(t.array, []).append(t)
    out = {}
    for name, ts in homes.items():
        tiling = {tuple((d.coord, d.tile, d.extent) for d in t.box) for t in ts}
        if len(tiling) != 1 or len({tuple(replace(d, origin=0) for d in t.box) for t in ts}) == 1:
            continue
        widths = _widths(ts[0])
        for t in ts[1:]:
            widths = merge_widths(widths, _widths(t))
        out[name] = widths
    return out


def build_program(op: Program, sched: Schedule, tgt: Target) -> MeshProgram:
    """The MeshIR of ``op`` under ``sched`` (a phased schedule maps its operators one after another)."""
    if sched.phases:
        return build_phased(mapped_program(op, sched), sched, tgt)
    return build_mesh_program(op, sched, tgt)
