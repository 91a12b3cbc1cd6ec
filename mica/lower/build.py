"""Building MeshIR from a program and its schedule.

:func:`build_mesh_program` is the pass ``(Program, Schedule, Target) -> MeshProgram``. It

1. sets the program region (the cores that get work) and every array's home :class:`RegionTensor`
   (:class:`~mica.lower.builder._Builder`, :func:`add_homes`);
2. asks :mod:`mica.comm.sets` for the communication plan of every read (local, row or column multicast),
   adds receive buffers and :class:`Exchange` ops with routes from :mod:`mica.comm.routes`
   (:mod:`mica.lower.reads`); a read that reaches into the neighbours' blocks is a halo
   (:mod:`mica.comm.halo`): the home gets ghost zones, filled by the host load for read-only arrays and by
   strip exchanges just before the reading statement for produced ones (:mod:`mica.lower.halo`); a read of
   a 2D array in the other orientation (``T[j][i]`` next to ``T[i][j]``) goes through a *mirror*, a second
   home with the mesh axes swapped, loaded so from the host or transposed on the mesh from the home an
   earlier operator left; under a skewed step, read-only panels move around rings (:mod:`mica.lower.rings`);
3. turns every statement into a :class:`Kernel` whose domain is the instances a core runs at a step,
   split into region classes where tile extents are constant (interior, last partial row/column);
4. combines reductions spread across cores with a chain of one-hop shifts towards coordinate 0
   (:mod:`mica.lower.reduce`);
5. lays out each core's arena and checks it against the target's SRAM.

With a double-buffered step (``StepMap.buffers == 2``) the step loop's exchanges of read-only panels —
SUMMA multicasts and Cannon / interleaved ring shifts — are marked ``prefetch`` and their receive buffers
get a second slot (counted in the arena). Halo strips (data the step writes) and reduction partials are
never prefetched.

Nothing here enumerates cores: the work is per array, per statement and per region class.
"""

from __future__ import annotations

from dataclasses import replace


from ..affine.program import Program, Statement
from ..comm.sets import CommPlan
from ..errors import MeshIRError, MicaError, ScheduleError, SramError
from ..targets import Target
from ..tiling.legality import check_legal
from ..tiling.mapping import fused_body
from ..tiling.schedule import Schedule
from ..meshir.on_mesh import check_on_mesh
from ..meshir.ir import (ARENA_ALIGN, walk_ops, BoxDim, Compute, Exchange, HostLoad, HostStore, Loop, MeshProgram,
                         Region, RegionTensor)
from .builder import _Builder
from .dram import check_dram_capacity, dram_loads
from .owner_core import at_owner_core, original_order_kernel
from .halo import ghost_homes, halo_exchange, initial_ghosts
from .reads import multicast_exchange, panel_unchanged, plan_reads
from .reduce import fill_partials, reduction_chains
from .refusals import refuse_known
from .rings import find_ring_arrays, step_ring_exchange

ALIGN = ARENA_ALIGN


def build_mesh_program(prog: Program, sched: Schedule, target: Target, *,
                       resident: frozenset[str] = frozenset(),
                       ghost_widths: dict[str, tuple[tuple[int, int], ...]] | None = None) -> MeshProgram:
    """The MeshIR of ``prog`` under ``sched`` on ``target`` (see the module docstring).

    ``resident`` names the arrays an earlier operator left on the mesh: they are not loaded from the
    host, so reads of their neighbours' blocks are halo exchanges before the read. ``ghost_widths``
    gives homes ghost zones at least this wide (another operator of the program reads them with a halo,
    and the home is shared), per array dimension ``(low, high)``.

    Raises :class:`ScheduleError` when the schedule could violate a dependence
    (:func:`mica.tiling.legality.check_legal`), or when the plan would not keep an array of
    ``prog.on_mesh`` in one untouched buffer between runs (:func:`mica.meshir.on_mesh.check_on_mesh`)."""
    try:
        check_legal(prog, sched)
        if not sched.space and sched.step is None:
            return _kept(_one_core(prog, sched, target))
        b = _Builder(prog, sched, target, resident)
        check_dram_capacity(b)
        refuse_known(b)                     # an access an earlier candidate could not serve (lower.refusals)
        find_ring_arrays(b)
        add_homes(b)
        initial_ghosts(b, ghost_widths)
        pre, body_main, post = _statement_groups(b)
        body = _host_loads(b)
        early = len(body)                   # where the mirrors and ring buffers are loaded
        body += fill_partials(b)
        emit_statements(b, pre, body)
        if b.step is not None:
            loop = _step_loop(b, body_main, body)
            body.append(loop)
        elif len(fused_body(prog, sched)) > 1:
            emit_fused(b, body_main, body)
        else:
            emit_statements(b, body_main, body)
    except MicaError as exc:
        # Nothing above reads sched.reduce or sched.group (only reduction_chains does).
        exc.before_combining = True
        raise
    body += reduction_chains(b)
    _insert_early_loads(b, body, early)
    emit_statements(b, post, body)
    body += b.deliveries                    # routed writes reach their owners once nothing else touches them
    body += _host_stores(b)
    ghost_homes(b, body)
    mp = _assemble(b, body)
    _check_statements(prog, mp)
    return _kept(mp)


def _check_statements(prog: Program, mp: MeshProgram) -> None:
    """Every statement of ``prog`` runs in some kernel of ``mp``: a plan that lost one is a bug, reported
    as a :class:`MeshIRError` rather than a program that computes something else."""
    ran = {part.statement for k in mp.kernels for part in k.statements}
    lost = [s.name for s in prog.statements if s.name not in ran and not s.domain_set.is_empty()]
    if lost:
        raise MeshIRError(f"{prog.name}: the mesh program runs no kernel of statement(s) {', '.join(lost)}")


def _kept(mp: MeshProgram) -> MeshProgram:
    """``mp`` once it keeps the arrays that stay on the mesh between runs (:func:`check_on_mesh`)."""
    check_on_mesh(mp)
    return mp


def add_homes(b: _Builder) -> None:
    """Adds the home of every array of the program but the ring arrays to ``b.tensors``, in the program's
    array order, each holding ``{ core[x, y] -> A[a...] }``; raises :class:`ScheduleError` when a home
    reaches beyond the cores with work. Arrays streamed from DRAM have no home."""
    for arr in b.prog.arrays:
        if arr.name not in b.ring_arrays and arr.name not in b.streamed:
            b.ensure_home(arr.name)


def _statement_groups(b: _Builder) -> tuple[list[Statement], list[Statement], list[Statement]]:
    """The statements before the main one, those of the main body (inside the step loop when there is
    one, else the main statement) and those after it, in textual order. Changes nothing."""
    prog, in_step = b.prog, b.in_step
    idx = prog.statements.index(b.main)
    fused = fused_body(prog, b.sched)
    if len(fused) > 1 and b.step is None:
        pre = [s for s in prog.statements[:idx] if s not in in_step and s not in fused]
        post = [s for s in prog.statements[idx + 1:] if s not in in_step and s not in fused]
        return pre, list(fused), post
    pre = [s for s in prog.statements[:idx] if s not in in_step and s is not b.partner]
    post = [s for s in prog.statements[idx + 1:] if s not in in_step]
    body_main = in_step if b.step is not None else [s for s in (b.partner, b.main) if s is not None]
    return pre, body_main, post


def _host_loads(b: _Builder) -> list:
    """Host loads of every live-in array into its home (ring arrays are loaded later, already skewed,
    by :func:`_insert_early_loads`; arrays streamed from DRAM are not loaded into the arenas). Changes nothing."""
    return [HostLoad(name, name, b.home_region(name)) for name in b.prog.inputs
            if name not in b.ring_arrays and name not in b.streamed]


def emit_statements(b: _Builder, stmts: list[Statement], out: list, hoisted: list | None = None,
                    prefetch: bool = False) -> None:
    """Appends to ``out``, for each statement of ``stmts``: the halo exchanges it needs, the multicasts of
    its step (``step_<stmt>``: receive boxes that move with ``t``), the loads of the panels it streams from
    device DRAM (:func:`mica.lower.dram.dram_loads`, prefetched with ``prefetch``) and its kernel's compute. Multicasts
    that do not move with ``t`` (``bring_<stmt>``) go to ``hoisted`` when given (before the step loop),
    else to ``out``. With ``prefetch`` the step's multicasts are marked prefetched and their receive
    buffers get a second slot. Adds the buffers and kernels to ``b``.

    The index half of a (value, index) pair (``b.partner``) runs in one kernel with the main statement,
    interleaved in their original order (:meth:`_Builder.sequence_kernel`): its reads are planned with
    its own, its compute is the main statement's."""
    pending: dict[str, str] = {}
    # receive buffer -> (what the multicast that last filled it in this step sent: kind, array, source buffer,
    # root and box -- its routes reach every core of the line, whoever reads it; the index in ``stmts`` of
    # the statement it was sent for)
    delivered: dict[str, tuple[tuple, int]] = {}
    for n, s in enumerate(stmts):
        buffers, moves, halos = plan_reads(b, s)
        out.extend(halo_exchange(b, s, halos))
        in_loop = [(p, d) for p, d in moves if p.in_step or any(bd.coord == "t" for bd in p.recv_box)]
        outside = [(p, d) for p, d in moves if (p, d) not in in_loop]
        # A panel an earlier statement of the step received into the same buffer, unchanged since: not sent again.
        in_loop = [(p, d) for p, d in in_loop
                   if not (d in delivered and delivered[d][0] == _sent(p)
                           and panel_unchanged(b, p, stmts[delivered[d][1]:n]))]
        delivered.update({d: (_sent(p), n) for p, d in in_loop})
        if outside:
            (hoisted if hoisted is not None else out).append(multicast_exchange(b, f"bring_{s.name}", outside))
        # The panels a step sends, each packed from its home (once) on the cores that hold it.
        for pack, array in {p.pack: p.array for p, _ in in_loop if p.pack}.items():
            out.append(Compute(pack, b.home_region(array).rect))
        if in_loop:
            x = multicast_exchange(b, f"step_{s.name}", in_loop)
            if prefetch:
                # Multicast panels of read-only arrays (classify only plans those): the exchange for
                # step t+1 may travel while step t computes, into the second slot of each receive buffer.
                x = replace(x, prefetch=True)
                for _, dst in in_loop:
                    b.tensors[dst] = replace(b.tensors[dst], slots=2)
                b.prefetched.append(x.name)
            out.append(x)
        out.extend(dram_loads(b, s, b.stream_reads.pop(s.name, []), prefetch))
        if b.partner is not None and s is b.partner:
            pending = dict(buffers)
            continue
        if b.partner is not None and s is b.main and pending:
            k = b.sequence_kernel([b.partner, s], {**pending, **buffers})
        else:
            k = b.statement_kernel(s, buffers)
        out.append(Compute(k.name, b.compute_rect(s).rect))


def _sent(plan: CommPlan) -> tuple:
    """What a multicast of ``plan`` sends and to which lines: equal for two reads served by one multicast."""
    return plan.kind, plan.array, plan.buffer, plan.root, plan.recv_box


def emit_fused(b: _Builder, stmts: list[Statement], out: list) -> None:
    """Appends to ``out`` the exchanges every statement of ``stmts`` (the main statement's fused body,
    :func:`~mica.tiling.mapping.fused_body`) needs, then one sequence kernel whose parts are their kernels,
    interleaved on each core in the original textual order (:meth:`_Builder.sequence_kernel`). Legality
    has checked that nothing the body reads from another core is produced inside it. Adds the buffers and
    the kernel to ``b``."""
    buffers: dict[str, str] = {}
    for s in stmts:
        bufs, moves, halos = plan_reads(b, s)
        out.extend(halo_exchange(b, s, halos))
        if moves:
            out.append(multicast_exchange(b, f"bring_{s.name}", moves))
        buffers.update(bufs)
    k = b.sequence_kernel(list(stmts), buffers)
    out.append(Compute(k.name, b.compute_rect(b.main).rect))


def _step_loop(b: _Builder, stmts: list[Statement], body: list) -> Loop:
    """The step loop ``t`` over ``stmts``, headed by the ring shift when there are ring buffers; the
    multicasts that do not move with ``t`` are appended to ``body`` (before the loop). Raises
    :class:`ScheduleError` when a double-buffered step prefetches nothing."""
    step = b.step
    loop_body: list = []
    fused = fused_body(b.prog, b.sched) if step.wavefront else ()
    if len(fused) > 1:
        # A recurrence inside each block (fused_body): the statements before it, the body as one sequence
        # kernel, the statements after it, at every step.
        first = stmts.index(fused[0])
        emit_statements(b, [s for s in stmts[:first] if s not in fused], loop_body, hoisted=body)
        emit_fused(b, list(fused), loop_body)
        emit_statements(b, [s for s in stmts[first:] if s not in fused], loop_body, hoisted=body)
    else:
        emit_statements(b, stmts, loop_body, hoisted=body, prefetch=b.double)
    if b.rings:
        # Before every step but the first, each ring buffer takes the panel its successor used.
        loop_body.insert(0, step_ring_exchange(b))
    loop = Loop("t", step.steps, tuple(loop_body), wave=step.wavefront, down=step.down)
    if b.double and not b.prefetched:
        raise ScheduleError(f"schedule '{b.sched.name}' asks for double buffering, but step loop {step.loop} "
                            f"receives no read-only panels to prefetch (everything it reads is local)",
                            cause="nothing-to-prefetch")
    return loop


def _insert_early_loads(b: _Builder, body: list, at: int) -> None:
    """Inserts at ``body[at]`` (right after the host loads of the homes) the mirrors — loaded from the
    host, or transposed on the mesh — then the host loads of the ring buffers (in reverse order of
    ``b.rings``)."""
    body[at:at] = b.mirror_loads + b.mirror_moves
    for name in b.rings:
        body.insert(at, HostLoad(name, b.tensors[name].array, b.region))


def _host_stores(b: _Builder) -> list:
    """Host stores of every live-out array from its home. Changes nothing."""
    return [HostStore(name, name, b.home_region(name)) for name in b.prog.outputs]


def _lay_out_arena(b: _Builder) -> tuple[list[RegionTensor], int]:
    """Every buffer of ``b.tensors`` at its arena offset — every core of the region holds every buffer at
    the same offset, one after another (a double buffer reserves both slots) — and the arena's size.
    Raises :class:`SramError` when the arena exceeds the target's SRAM."""
    prog, sched, target = b.prog, b.sched, b.target
    offset = 0
    laid = []
    for t in b.tensors.values():
        laid.append(replace(t, offset=offset))
        offset += t.alloc_bytes                         # a double buffer reserves both slots
    if offset > target.sram_bytes:
        parts = ", ".join(f"{t.name} {t.max_bytes} B" + (" x 2 slots" if t.slots == 2 else "") for t in laid)
        dbl = sum(t.alloc_bytes // 2 for t in laid if t.slots == 2)
        single_fits = bool(dbl) and offset - dbl <= target.sram_bytes
        why = (f"; the second slots of the double buffers take {dbl} of them" +
               (f" (single-buffered it would fit: {offset - dbl} bytes)" if single_fits else "") if dbl else "")
        raise SramError(
            f"{prog.name} on a {sched.mesh[0]}x{sched.mesh[1]} mesh needs {offset} bytes per core on the "
            f"interior class of region {b.region} (full tiles: {parts}){why}; target {target.name} has "
            f"{target.sram_bytes} bytes of SRAM per core", cause="double-buffers" if single_fits else "sram", needed=offset)
    return laid, offset


def _assemble(b: _Builder, body: list) -> MeshProgram:
    """The :class:`MeshProgram` of ``b`` and ``body``: the arena laid out (:func:`_lay_out_arena`), the
    colours the busiest exchange uses, the kernels in the order they were made. Changes nothing in ``b``."""
    laid, offset = _lay_out_arena(b)
    colours = max([sum(len(getattr(c, "groups", ())) or 1 for c in op.ops)
                   for op, _ in walk_ops(body) if isinstance(op, Exchange)] or [0])
    return MeshProgram(b.prog.name, b.target.name, b.sched.mesh, b.region, tuple(laid), tuple(b.kernels),
                       tuple(body), offset, tuple(n for n, _ in b.prog.scalars), colours, b.skew,
                       b.prog.runtime, b.prog.on_mesh, tuple(a.name for a in b.prog.arrays if a.name in b.streamed))


def _one_core(prog: Program, sched: Schedule, target: Target) -> MeshProgram:
    """Everything on core (0, 0), in the program's original order: one sequence kernel whose isl AST
    interleaves the statements exactly as the source does. Legal for every program, but only with
    every home whole on core (0, 0); when another operator fixed a layout, everything runs on the core that owns
    the data it touches (:func:`mica.lower.owner_core.at_owner_core`)."""
    written = {s.write.array for s in prog.statements}
    for h in sched.homes:
        copies = {"x", "y"} - {a for a, _ in h.dims if a} - {a for a, _ in h.pin}
        if copies and h.array in written:
            raise ScheduleError(f"a one-core plan writes {h.array} on core (0, 0) only, but the schedule keeps a copy "
                                f"of it on every core along {' and '.join(sorted(copies))} (as another operator "
                                f"reads it): the other copies would keep stale values", cause="ownership")
        if any(a for a, _ in h.dims) or any(c for _, c in h.pin):
            try:
                return at_owner_core(prog, sched, target)
            except ScheduleError as exc:
                raise ScheduleError(
                    f"a one-core plan keeps {h.array} whole on core (0, 0); the schedule lays it out over the mesh "
                    f"({', '.join(f'{a}/{t}' if a else 'whole' for a, t in h.dims)}), as another operator left it, "
                    f"and running on the core that owns the data fails: {exc}") from None
    region = Region("work", 0, 1, 0, 1)
    tensors, offset = [], 0
    for arr in prog.arrays:
        box = tuple(BoxDim(None, n, n) for n in arr.shape)
        dims = ", ".join(f"a{i}" for i in range(arr.rank))
        t = RegionTensor(arr.name, arr.name, arr.dtype, arr.elem_bytes, region, box, "home",
                         f"{{ core[x, y] -> {arr.name}[{dims}] : x = 0 and y = 0 }}", offset)
        tensors.append(t)
        offset += -(-t.max_bytes // ALIGN) * ALIGN
    if offset > target.sram_bytes:
        parts = ", ".join(f"{t.name} {t.max_bytes} B" for t in tensors)
        raise SramError(f"{prog.name} on one core needs {offset} bytes ({parts}); target {target.name} has "
                        f"{target.sram_bytes} bytes of SRAM per core", needed=offset)
    seq = original_order_kernel(prog, Region("k_program_0", 0, 1, 0, 1))
    body = [HostLoad(n, n, region) for n in prog.inputs]
    body.append(Compute(seq.name, region.rect))
    body += [HostStore(n, n, region) for n in prog.outputs]
    return MeshProgram(prog.name, target.name, sched.mesh, region, tuple(tensors), (seq,), tuple(body), offset,
                       tuple(n for n, _ in prog.scalars), 0, None, prog.runtime, prog.on_mesh)
