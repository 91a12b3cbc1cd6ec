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

from ..affine.deps import dependences
from ..affine.program import Program
from ..errors import ScheduleError, SramError
from ..targets import Target
from ..tiling.schedule import Schedule
from ..tiling.split import loop_carried, mapped_program, operator_program, phase_operators
from ..comm.halo import merge_widths
from .build import build_mesh_program
from .place import copies, move_blocks, same_blocks, same_place, translate
from .regather import regather
from .relayout import copy_kernel, transpose, via_blocks
from ..meshir.on_mesh import check_on_mesh
from ..meshir.ir import (Compute, Exchange, HostLoad, HostStore, KAccess, Kernel, KernelClass, Loop, MeshProgram, Region,
                 RegionTensor)


def _rename_tensor(t: RegionTensor, name: str) -> RegionTensor:
    """``t`` named ``name`` (same array, box, region and ownership)."""
    return replace(t, name=name)


def _rename_ops(ops, buf, ker):
    """``ops`` (loops' bodies included) with every buffer ``b`` renamed ``buf(b)`` and every kernel ``k``
    ``ker(k)``; everything else, relations included, unchanged."""
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


def _rename_access(a: KAccess, buf) -> KAccess:
    """``a`` on the buffer ``buf(a.buffer)``."""
    return replace(a, buffer=buf(a.buffer))


def _rename_kernel(k: Kernel, buf, ker, prefix: str) -> Kernel:
    """``k`` (and its parts) renamed ``ker(name)`` with its accesses on ``buf(buffer)`` and its classes and
    their regions prefixed with ``prefix``; domains and expressions unchanged."""
    parts = tuple(_rename_kernel(p, buf, ker, prefix) for p in k.parts)
    classes = tuple(KernelClass(prefix + c.name, replace(c.region, name=prefix + c.region.name)) for c in k.classes)
    return replace(k, name=ker(k.name), write=_rename_access(k.write, buf),
                   reads=tuple(_rename_access(a, buf) for a in k.reads), classes=classes, parts=parts)


class _Merger:
    """The mutable state of :func:`build_phased` while it merges the operators' MeshIR one by one.

    ``homes`` (array -> the buffer holding it between operators), ``tensors`` (merged buffers in arena
    order), ``kernels``, ``loads`` (host loads before the first operator; ``loaded`` their buffers), ``body``
    (the operators' ops in order), ``last_writer`` (output array -> (buffer, region) to store it from),
    ``skew``, ``colours``, the extent ``x1``, ``y1`` of the cores with work, ``live`` (buffer -> the
    operators that use it, see :func:`lay_out`) and, while a phase loop's operators are merged,
    ``loop_first`` (array -> the home the loop's first operator touching it found it in); ``moves`` counts the
    layout changes so far (their lanes' liveness positions, :func:`_add_move`)."""

    def __init__(self, prog: Program, sched: Schedule, target: Target):
        self.prog, self.sched, self.target = prog, sched, target
        self.written = {s.write.array for s in prog.statements}
        self.homes: dict[str, RegionTensor] = {}
        self.loaded: set[str] = set()
        self.tensors: dict[str, RegionTensor] = {}
        self.kernels: list[Kernel] = []
        self.loads: list[HostLoad] = []
        self.body: list = []
        self.last_writer: dict[str, tuple[str, Region]] = {}
        self.skew = None
        self.colours = 0
        self.x1 = self.y1 = 1
        self.mesh_region = Region("mesh", 0, sched.mesh[0], 0, sched.mesh[1])
        self.live: dict[str, set[int]] = {}
        self.loop_first: dict[str, RegionTensor] | None = None
        self.moves = 0

    def use(self, name: str, k: float) -> None:
        """Operator ``k`` uses buffer ``name``."""
        self.live.setdefault(name, set()).add(k)


def build_phased(prog: Program, sched: Schedule, target: Target) -> MeshProgram:
    """The merged MeshIR of every operator of ``prog`` under the phases of ``sched``: each operator built
    on its rectangle (:func:`_operators`), merged in order (:func:`_merge_operator`), the arena laid out by
    liveness (:func:`_merged_program`)."""
    built = _operators(prog, sched, target)
    m = _Merger(prog, sched, target)
    first, end = sched.repeat[3:] if sched.repeat else (-1, -1)
    before: list = []
    for k, mp in enumerate(built):
        if k == first:
            before, m.body, m.loop_first = m.body, [], {}
        _merge_operator(m, k, mp)
        if k == end - 1:
            _close_loop(m, k, loop_live_in(prog, phase_operators(prog, sched), first, end))
            m.body = before + [Loop(f"{sched.repeat[1]}_phase", sched.repeat[2], tuple(m.body), phase=True)]
            for name, ks in m.live.items():
                # A home the loop's operators use may hold what one iteration leaves the next: it lives
                # through the whole loop, the layout changes before its first operator and after its last
                # included (receive buffers, rings and lanes live within their operator or change).
                if m.tensors[name].role in ("home", "partial") and any(first - 1 < j < end for j in ks):
                    ks.update((first - 1 + LOOP_EDGE, end - LOOP_EDGE))
            m.loop_first = None
    return _merged_program(m, len(built))


#: How far inside the interval around a phase loop's operators its homes live (:func:`build_phased`): past the
#: operator before the loop, up to the layout changes closing it (:func:`_add_move` positions them strictly
#: between operators).
LOOP_EDGE = 1e-9


def _close_loop(m: _Merger, k: int, live_in: frozenset[str]) -> None:
    """At the end of a phase loop's body (after operator ``k``, its last): every array of ``live_in`` (what an
    iteration reads of the previous one's values) the loop's operators write and whose home has moved since
    the first of them used it is moved back there (:func:`_moved`), so that every iteration starts from the
    layouts the first one did. An array each iteration writes before reading needs no move back."""
    ops: list = []
    for a, first in m.loop_first.items():
        now = m.homes.get(a)
        if now is None or now.name == first.name or a not in m.written or a not in live_in:
            continue
        steps, need = _moved(m, k, now, first, f"p{k}_{a}_back_")
        _add_move(m, k, now, first, steps, need, ops, after=True)
    m.body += ops


def loop_live_in(prog: Program, ops: list, first: int, end: int) -> frozenset[str]:
    """The arrays whose values at the head of a phase loop around operators ``ops[first:end]`` of ``prog``
    the loop's body reads: its reads of elements it has not written earlier in the same iteration (the live-in
    reads of the body run once, from exact dataflow, :func:`mica.affine.deps.dependences`)."""
    body = operator_program(prog, tuple(s for g in ops[first:end] for s in g), first)
    return frozenset(_range_arrays(dependences(body).live_in))


def _range_arrays(rel) -> set[str]:
    """The arrays ``{ S[loops] -> A[a...] }`` reaches."""
    out: set[str] = set()
    rel.range().foreach_set(lambda s: out.add(s.get_tuple_name()))
    return out


def _operators(prog: Program, sched: Schedule, target: Target) -> list[MeshProgram]:
    """Each operator's MeshIR placed on the whole mesh (:func:`_build_operators`), rebuilt with the shared
    ghost widths (:func:`shared_ghosts`) when operators ghost a shared home differently."""
    ops = phase_operators(prog, sched)
    built = _build_operators(prog, ops, sched, target, {})
    widths = shared_ghosts(built)
    if widths:
        built = _build_operators(prog, ops, sched, target, widths)
    return built


def _merge_operator(m: _Merger, k: int, mp: MeshProgram) -> None:
    """Merges operator ``k``'s MeshIR ``mp`` into ``m``: its buffers (:func:`_merge_tensor`, relayouts of
    shared homes first), its kernels and ops renamed with the prefix ``p<k>_``, its host loads and stores
    (:func:`_merge_ops`), its colours and extent. Raises :class:`ScheduleError` when two operators ring
    their panels differently."""
    if mp.skew is not None:
        if m.skew is not None and m.skew != mp.skew:
            raise ScheduleError("two operators ring their panels differently; one skew per program")
        m.skew = mp.skew
    prefix = f"p{k}_"
    relayouts: list = []
    names = {}
    for t in mp.tensors:
        had = m.homes.get(t.array)
        names[t.name] = _merge_tensor(m, k, t, prefix, relayouts)
        if m.loop_first is not None and t.array not in m.loop_first and t.array in m.homes:
            # Inside a phase loop: the home the loop's first operator touching the array finds it in.
            m.loop_first[t.array] = had if had is not None else m.homes[t.array]
    for n in names.values():
        m.use(n, k)
    buf, ker = names.__getitem__, prefix.__add__
    m.kernels += [_rename_kernel(kn, buf, ker, prefix) for kn in mp.kernels]
    m.body += relayouts
    _merge_ops(m, k, _rename_ops(mp.body, buf, ker))
    m.colours = max(m.colours, mp.colours)
    m.x1, m.y1 = max(m.x1, mp.region.x1), max(m.y1, mp.region.y1)


def _merge_tensor(m: _Merger, k: int, t: RegionTensor, prefix: str, relayouts: list) -> str:
    """The merged name of operator ``k``'s buffer ``t``, added to ``m.tensors`` when new: an array's home
    is shared with the previous operators' home of it (``m.homes``) when it lies in the same place, moved
    or transposed there otherwise (:func:`_relayout_home`, ops appended to ``relayouts``); a read-only
    array in another layout, and every other buffer, is the operator's own, ``p<k>_<name>``."""
    shared = m.homes.get(t.array)
    if t.role in ("home", "partial") and t.name == t.array:
        if shared is not None and not same_place(shared, t) and t.array not in m.written:
            # An array no operator writes may be loaded once per layout.
            m.tensors[prefix + t.name] = _rename_tensor(t, prefix + t.name)
            return prefix + t.name
        if shared is not None:
            return _relayout_home(m, k, shared, t, prefix, relayouts)
        new = t.name if t.name not in m.tensors else prefix + t.name
        m.homes[t.array] = _rename_tensor(t, new)
        m.tensors[new] = m.homes[t.array]
        return new
    m.tensors[prefix + t.name] = _rename_tensor(t, prefix + t.name)
    return prefix + t.name


def _relayout_home(m: _Merger, k: int, shared: RegionTensor, t: RegionTensor, prefix: str, relayouts: list) -> str:
    """The buffer operator ``k`` reads its home ``t`` of a produced array from, given the home ``shared``
    the previous operators left: ``shared`` itself when it lies in the same place, else ``p<k>_<array>``
    filled before operator ``k`` runs — the same blocks ``{ core[x, y] -> A[a...] }`` carried to another
    rectangle by a conveyor (:func:`mica.lower.place.move_blocks`), or a 2D layout transposed on the mesh
    (:func:`mica.lower.relayout.transpose`); the ops go to ``relayouts``, the new home to ``m.homes``.
    Raises :class:`ScheduleError` when the layout cannot be transposed."""
    dst = _rename_tensor(t, prefix + t.name)
    if same_place(shared, t) and shared.box == t.box:
        return shared.name
    steps, need = _moved(m, k, shared, dst, f"{prefix}{t.array}_")
    # The source, the destination and the lanes are all live while operator k moves the
    # blocks (before it runs); the destination is the array's home from now on.
    _add_move(m, k, shared, dst, steps, need, relayouts)
    m.homes[t.array] = dst
    return dst.name


def _moved(m: _Merger, k: int, shared: RegionTensor, dst: RegionTensor, prefix: str):
    """The steps ``(from, to, (buffers, kernels, ops))`` that fill ``dst`` (its array in another layout or
    place) from ``shared`` before operator ``k`` runs, and the colours they need: a copy on every core
    gathered and broadcast, the same blocks moved to another rectangle by a conveyor, a 2D layout transposed
    on the mesh, any other layout gathered and broadcast (:mod:`mica.lower.regather`) or else changed through
    blocks over both axes (:func:`mica.lower.relayout.via_blocks`, three steps), or the same blocks copied in
    place (another buffer of the same layout). Raises :class:`ScheduleError` naming both layouts when none
    applies."""
    cores = Region("relaid", 0, max(shared.region.x1, dst.region.x1), 0, max(shared.region.y1, dst.region.y1))

    def one(change):
        return [(shared, dst, change)]
    if not same_place(shared, dst) and copies(dst):
        # A copy on every core (a scalar every core of a 2D plan reads): gathered and broadcast.
        return one(regather(shared, dst, prefix, cores, m.target)), 1
    if not same_place(shared, dst) and (shared.box == dst.box or same_blocks(shared, dst)):
        # The same blocks on another operator's rectangle: moved there by a conveyor.
        return one(move_blocks(shared, dst, prefix, m.target)), 2
    if shared.box == dst.box:
        # The same blocks in another buffer of the same cores: copied in place.
        return one(([], [copy_kernel(f"{prefix}copy", dst, shared, dst.box, True, "true", cores)],
                    [Compute(f"{prefix}copy", cores.rect)])), 0
    # Produced data in another layout: transposed on the mesh, else gathered and broadcast (a small
    # array: mica.lower.regather), or a clear error.
    try:
        return one(transpose(shared, dst, prefix, m.mesh_region, m.target)), 4
    except ScheduleError as exc:
        # On the cores that hold either layout (every core of that rectangle has an arena).
        try:
            return one(regather(shared, dst, prefix, cores, m.target)), 1
        except ScheduleError as exc2:
            try:
                return via_blocks(shared, dst, prefix, m.mesh_region, m.target), 4
            except ScheduleError as exc3:
                raise ScheduleError(
                    f"operator {k} expects {dst.array} laid out as {[str(d) for d in dst.box]}, the "
                    f"previous operator left it as {[str(d) for d in shared.box]}: {exc}; {exc2}; {exc3}") from None


def _add_move(m: _Merger, k: int, src: RegionTensor, dst: RegionTensor, steps, need: int, ops: list,
              after: bool = False) -> None:
    """Records the layout change ``steps`` (:func:`_moved`) from ``src`` into ``dst`` before operator ``k``
    runs (``after``: once it has run, closing a phase loop): its buffers, kernels, ops (appended to ``ops``)
    and colours. ``src`` and ``dst`` are homes, live at ``k``; each step's lanes (and a block layout between
    two steps) live only while it runs, at a position of its own between operator ``k - 1`` and ``k`` (``k``
    and ``k + 1``), so the changes before an operator, which run one after another, may share bytes with each
    other and with the operators' own transient buffers."""
    for s_src, s_dst, (lanes, kers, mops) in steps:
        for buf in (s_dst, *lanes):
            m.tensors[buf.name] = buf
            # The change may run on cores no operator computes on (a line's data spread over the mesh).
            m.x1, m.y1 = max(m.x1, buf.region.x1), max(m.y1, buf.region.y1)
        m.moves += 1
        at = k + (0 if after else -1) + m.moves / (m.moves + 1)      # distinct inside the interval, in order
        for t in (s_src, s_dst):
            m.use(t.name, at)
            if t.name in (src.name, dst.name):
                m.use(t.name, k)
        for lane in lanes:
            m.use(lane.name, at)
        m.kernels += kers
        ops += mops
    m.colours = max(m.colours, need)


def _merge_ops(m: _Merger, k: int, ops: list) -> None:
    """Appends operator ``k``'s renamed ops to ``m.body``, except host loads — an input's is kept once per
    buffer in ``m.loads``, a produced array's dropped (it is where its producer left it) — and host stores,
    of which the last per array is kept in ``m.last_writer``. Raises :class:`ScheduleError` when an operator
    would load a produced array into another buffer than its home."""
    for op in ops:
        if isinstance(op, HostLoad):
            if op.array not in m.prog.inputs:
                if m.homes.get(op.array) is None or m.homes[op.array].name != op.buffer:
                    raise ScheduleError(
                        f"operator {k} reads {op.array}, which an earlier operator produced, through "
                        f"{op.buffer}; MICA does not re-lay out produced data on the mesh yet")
                continue                 # already where the producer left it
            if op.buffer not in m.loaded:
                m.loads.append(op)
                m.loaded.add(op.buffer)
        elif isinstance(op, HostStore):
            m.last_writer[op.array] = (op.buffer, op.region)
        else:
            m.body.append(op)


def _merged_program(m: _Merger, n: int) -> MeshProgram:
    """The merged :class:`MeshProgram` of ``n`` operators: the loads, the operators' ops, then a store of
    every output from the home its last writer left; the arena laid out by liveness (:func:`lay_out`:
    loaded buffers live from operator 0, stored ones until ``n``). Raises :class:`SramError` when the
    peak exceeds the target's SRAM."""
    prog, sched, target = m.prog, m.sched, m.target
    stores = [HostStore(m.last_writer[a][0], a, m.last_writer[a][1]) for a in prog.outputs if a in m.last_writer]
    region = Region("work", 0, m.x1, 0, m.y1)
    for ld in m.loads:
        m.use(ld.buffer, 0)             # loaded before the first operator
    for st in stores:
        m.use(st.buffer, n)             # read back after the last one
    for op in (*m.loads, *stores):
        if op.array in prog.on_mesh:    # kept between runs: no other buffer may reuse its bytes
            m.use(op.buffer, 0)
            m.use(op.buffer, n)
    spans = {name: (min(m.live[name]), max(m.live[name])) for name in m.tensors}
    laid, offset = lay_out(list(m.tensors.values()), spans)
    if offset > target.sram_bytes:
        parts = ", ".join(f"{t.name} {t.max_bytes} B" + (" x 2 slots" if t.slots == 2 else "")
                          + (f" (operators {spans[t.name][0]}-{spans[t.name][1]})"
                             if spans[t.name] != (0, n) else "") for t in laid)
        raise SramError(f"{prog.name}: its operators need {offset} bytes per core at the peak ({parts}); target "
                        f"{target.name} has {target.sram_bytes} bytes of SRAM per core", needed=offset)
    return MeshProgram(prog.name, target.name, sched.mesh, region, tuple(laid), tuple(m.kernels),
                       tuple(m.loads + m.body + stores), offset, tuple(name for name, _ in prog.scalars),
                       m.colours, m.skew, prog.runtime, prog.on_mesh)


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
        resident = frozenset(st.write.array for g in ops[:k] for st in g) | loop_carried(ops, sched.repeat, k)
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
        mp = build_phased(mapped_program(op, sched), sched, tgt)
        check_on_mesh(mp)
        return mp
    return build_mesh_program(op, sched, tgt)
