"""Building MeshIR from a program and its schedule.

:func:`build_mesh_program` is the pass ``(Program, Schedule, Target) -> MeshProgram``. It

1. sets the program region (the cores that get work) and every array's home :class:`RegionTensor`;
2. asks :mod:`mica.comm.sets` for the communication plan of every read (local, row or column multicast),
   adds receive buffers and :class:`Exchange` ops with routes from :mod:`mica.comm.routes`; a read that
   reaches into the neighbours' blocks is a halo (:mod:`mica.comm.halo`): the home gets ghost zones,
   filled by the host load for read-only arrays and by strip exchanges just before the reading statement
   for produced ones (:func:`halo_exchange`); a read of a 2D array in the other orientation (``T[j][i]``
   next to ``T[i][j]``) goes through a *mirror*, a second home with the mesh axes swapped, loaded so from
   the host or transposed on the mesh from the home an earlier operator left;
3. turns every statement into a :class:`Kernel` whose domain is the instances a core runs at a step,
   split into region classes where tile extents are constant (interior, last partial row/column);
4. combines reductions spread across cores with a chain of one-hop shifts towards coordinate 0;
5. lays out each core's arena and checks it against the target's SRAM.

With a double-buffered step (``StepMap.buffers == 2``) the step loop's exchanges of read-only panels —
SUMMA multicasts and Cannon / interleaved ring shifts — are marked ``prefetch`` and their receive buffers
get a second slot (counted in the arena). Halo strips (data the step writes) and reduction partials are
never prefetched.

Nothing here enumerates cores: the work is per array, per statement and per region class.
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from ..affine.deps import reductions
from ..affine.expr import Aff, Bin, Const, Read
import islpy as isl

from ..affine.isl_names import imap, iset
from ..affine.program import Program, Statement
from ..errors import CommError, ScheduleError, SramError
from ..targets import Target
from ..tiling.legality import check_legal
from ..tiling.cost import expr_flops
from ..tiling.mapping import loop_extent, main_statement, work_blocks
from ..tiling.schedule import Schedule
from ..comm.routes import assign_colours, multicast_routes, ring_moves, ring_routes, shift_routes
from ..comm.halo import check_covered, ghosted_box, halo_widths, held_map, merge_widths, strip_relation, strips
from ..comm.sets import CommPlan, box_map, classify, classify_ring, is_local, need_map, ownership_map
from ..tiling.spacetime import placement_constraints
from ..tiling.homes import home_box, swap_home
from .relayout import transpose
from ..meshir.ir import (ARENA_ALIGN, BoxDim, Compute, Exchange, HostLoad, HostStore, KAccess, Kernel, KernelClass, Lin, Loop,
                 MeshProgram, Multicast, Rect, Region, RegionTensor, RingShift, Shift, Skew)

ALIGN = ARENA_ALIGN
IDENTITY = {"+": 0.0, "*": 1.0}


def _splits(tilings: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """Cut ``[lo, hi)`` where a block tiling (tile, extent) changes its block size."""
    cuts = {lo, hi}
    for tile, extent in tilings:
        for c in (extent // tile, ceil(extent / tile)):
            if lo < c < hi:
                cuts.add(c)
    pts = sorted(cuts)
    return [(a, b) for a, b in zip(pts, pts[1:]) if a < b]


class _Builder:
    """Accumulates tensors, kernels and ops while the pass runs (the only mutable state of the pass)."""

    def __init__(self, prog: Program, sched: Schedule, target: Target):
        self.prog, self.sched, self.target = prog, sched, target
        self.main = main_statement(prog)
        self.reds = reductions(prog)
        self.tensors: dict[str, RegionTensor] = {}
        self.kernels: list[Kernel] = []
        blocks = work_blocks(prog, sched)
        w, h = sched.mesh
        self.skew = None
        if sched.step is not None and sched.step.skew != "none":
            self.skew = Skew(sched.step.skew, sched.step.steps)
        if blocks["x"] > w or blocks["y"] > h:
            raise ScheduleError(f"schedule needs {blocks['x']}x{blocks['y']} cores, mesh is {w}x{h}")
        self.region = Region("work", 0, blocks["x"], 0, blocks["y"])
        # Cross-core reductions: spatial loops of a reduction statement its write does not index.
        self.reduced_axes: list[str] = []
        red = self.reds.get(self.main.name)
        if red is not None:
            written = {v for ix in self.main.write.index for v in ix.names}
            for axis in ("x", "y"):
                sm = sched.loop_on(axis)
                if sm is not None and sm.loop not in written:
                    self.reduced_axes.append(axis)
        self.reduced_array = red.array if (red is not None and self.reduced_axes) else None

    # -- tensors -------------------------------------------------------------------------------------
    def home_box(self, array: str) -> tuple[tuple[BoxDim, ...], dict[str, int]]:
        home = self.sched.home(array)
        return home_box(self.prog.array(array).shape, home), dict(home.pin)

    def home_region(self, array: str) -> Region:
        box, pins = self.home_box(array)
        return self.box_region(array, box, pins)

    def box_region(self, array: str, box: tuple[BoxDim, ...], pins: dict[str, int]) -> Region:
        """The cores holding a block of ``array`` under ``box`` (pinned axes at ``pins``); raises
        :class:`ScheduleError` when they reach beyond the cores with work."""
        r = {"x": (self.region.x0, self.region.x1), "y": (self.region.y0, self.region.y1)}
        for d in box:
            if d.coord in ("x", "y"):
                r[d.coord] = (0, ceil(d.extent / d.tile))
        for axis, c in pins.items():
            r[axis] = (c, c + 1)
        reg = Region(f"home_{array}", r["x"][0], r["x"][1], r["y"][0], r["y"][1])
        if reg.x1 > self.region.x1 or reg.y1 > self.region.y1:
            raise ScheduleError(
                f"the home of {array} ({reg}) reaches beyond the cores with work ({self.region})")
        return reg

    def add_tensor(self, name: str, array: str, box, role: str, ownership: str) -> RegionTensor:
        arr = self.prog.array(array)
        t = RegionTensor(name, array, arr.dtype, arr.elem_bytes, self.region, tuple(box), role, ownership)
        self.tensors[name] = t
        return t

    def ensure_home(self, array: str) -> RegionTensor:
        if array in self.tensors:
            return self.tensors[array]
        box, pins = self.home_box(array)
        own = ownership_map(self.prog.array(array), box, self.home_region(array), pins)
        role = "partial" if array == self.reduced_array else "home"
        return self.add_tensor(array, array, box, role, str(own))

    # -- kernels -------------------------------------------------------------------------------------
    def compute_rect(self, stmt: Statement) -> Region:
        r = {"x": (self.region.x0, self.region.x1), "y": (self.region.y0, self.region.y1)}
        for sm in self.sched.space:
            if sm.loop not in stmt.loops:
                r[sm.axis] = (0, 1)
        return Region(f"run_{stmt.name}", r["x"][0], r["x"][1], r["y"][0], r["y"][1])

    def classes(self, kname: str, rect: Region, tilings: dict[str, list[tuple[int, int]]]) -> tuple[KernelClass, ...]:
        out = []
        for ya, yb in _splits(tilings["y"], rect.y0, rect.y1):
            for xa, xb in _splits(tilings["x"], rect.x0, rect.x1):
                out.append(KernelClass(f"{kname}_{len(out)}", Region(f"{kname}_{len(out)}", xa, xb, ya, yb)))
        return tuple(out)

    def tilings_of(self, stmt_loops: tuple[str, ...], buffers: list[RegionTensor]) -> dict[str, list]:
        til: dict[str, list] = {"x": [], "y": []}
        for sm in self.sched.space:
            if sm.loop in stmt_loops:
                til[sm.axis].append((sm.tile, loop_extent(self.main, sm.loop) if sm.loop in self.main.loops
                                     else sm.tile))
        for b in buffers:
            for d in b.box:
                if d.coord in ("x", "y"):
                    til[d.coord].append((d.tile, d.extent))
        return til

    def statement_kernel(self, stmt: Statement, buffers: dict[str, str]) -> Kernel:
        cons = " and ".join(placement_constraints(stmt, self.sched, kernel=True))
        params = "__x, __y, __t, __kb" if self.skew is not None else "__x, __y, __t"
        local = iset(f"[{params}] -> {{ {stmt.name}[{', '.join(stmt.loops)}] : {cons} }}")
        dom = stmt.domain_set.intersect(local)
        rect = self.compute_rect(stmt)
        bufs = [self.tensors[b] for b in buffers.values()]
        kname = f"k_{stmt.name}"
        k = Kernel(
            name=kname, statement=stmt.name, loops=stmt.loops, domain=str(dom),
            order=self.sched.order_of(stmt.name),
            write=KAccess(stmt.write.ref, buffers[stmt.write.ref], stmt.write.index),
            reads=tuple(KAccess(a.ref, buffers[a.ref], a.index) for a in stmt.reads),
            expr=stmt.expr, classes=self.classes(kname, rect, self.tilings_of(stmt.loops, bufs)),
            flops_per_instance=expr_flops(stmt.expr))
        self.kernels.append(k)
        return k

    def box_kernel(self, kname: str, target: RegionTensor, rect: Region, expr, reads: tuple[RegionTensor, ...] = (),
                   domain: tuple[BoxDim, ...] | None = None) -> Kernel:
        """A kernel over a buffer's box (or the box ``domain``): ``target[a] = expr`` (reads index the same
        array elements)."""
        dbox = domain if domain is not None else target.box
        loops = tuple(f"a{i}" for i in range(len(dbox)))
        cons = " and ".join(d.isl(f"a{i}", prefix="__") for i, d in enumerate(dbox)) or "true"
        params = sorted({"__" + d.coord for d in dbox if d.coord} | {"__x", "__y"})
        dom = f"[{', '.join(params)}] -> {{ {kname}[{', '.join(loops)}] : {cons} }}"
        index = tuple(Aff.var(lp) for lp in loops)
        k = Kernel(kname, "", loops, str(iset(dom)), loops, KAccess("w", target.name, index),
                   tuple(KAccess(f"r{i}", r.name, index) for i, r in enumerate(reads)), expr,
                   self.classes(kname, rect, self.tilings_of((), [target, *reads])),
                   flops_per_instance=expr_flops(expr))
        self.kernels.append(k)
        return k


def build_mesh_program(prog: Program, sched: Schedule, target: Target, *,
                       resident: frozenset[str] = frozenset(),
                       ghost_widths: dict[str, tuple[tuple[int, int], ...]] | None = None) -> MeshProgram:
    """The MeshIR of ``prog`` under ``sched`` on ``target`` (see the module docstring).

    ``resident`` names the arrays an earlier operator left on the mesh: they are not loaded from the
    host, so reads of their neighbours' blocks are halo exchanges before the read. ``ghost_widths``
    gives homes ghost zones at least this wide (another operator of the program reads them with a halo,
    and the home is shared), per array dimension ``(low, high)``.

    Raises :class:`ScheduleError` when the schedule could violate a dependence
    (:func:`mica.tiling.legality.check_legal`)."""
    check_legal(prog, sched)
    if not sched.space and sched.step is None:
        return _one_core(prog, sched, target)
    b = _Builder(prog, sched, target)
    main = b.main
    red = b.reds.get(main.name)
    step = sched.step
    in_step = [s for s in prog.statements if step is not None and step.loop in s.loops]
    # Under a skewed step, arrays a step reads through the step loop live in ring buffers instead of homes.
    ring_arrays = set()
    if b.skew is not None:
        for s_ in in_step:
            red_s = b.reds.get(s_.name)
            for acc in s_.reads:
                if red_s is not None and acc.ref == red_s.read_ref:
                    continue
                if any(ix.coeff(step.loop) for ix in acc.index):
                    ring_arrays.add(acc.array)
    written = {s_.write.array for s_ in prog.statements}
    if ring_arrays & written:
        raise ScheduleError(f"a {sched.step.skew} plan would ring {sorted(ring_arrays & written)}, which the "
                            f"program also writes; only read-only panels move around rings")
    for arr in prog.arrays:
        if arr.name not in ring_arrays:
            b.ensure_home(arr.name)

    # Statements in textual order around the main one; those with the step loop run inside it.
    idx = prog.statements.index(main)
    pre = [s for s in prog.statements[:idx] if s not in in_step]
    post = [s for s in prog.statements[idx + 1:] if s not in in_step]
    body_main = in_step if step is not None else [main]

    # array -> ghost widths of its home
    ghosts: dict[str, tuple[tuple[int, int], ...]] = {a: w for a, w in (ghost_widths or {}).items()
                                                      if a in b.tensors and a not in ring_arrays}

    mirrors: dict[str, str] = {}        # array -> its mirror buffer
    mirror_loads: list[HostLoad] = []   # inputs' mirrors, loaded by the host
    mirror_moves: list = []             # resident arrays' mirrors, transposed on the mesh

    def mirror_plan(stmt: Statement, acc, need, what: str) -> CommPlan | None:
        """The plan reading ``acc`` through its array's *mirror* — a second home with the two mesh axes
        swapped (same tiles), for a statement that reads an array in both orientations (``T + Tᵀ``,
        ``Tᵀ T``) — or None when there is none (not a 2D block home, written here, outside the cores with
        work, not local or a row/column multicast either, or a produced array whose blocks cannot be
        transposed on the mesh). An input's mirror is loaded from the host in that layout; an array an
        earlier operator left on the mesh (``resident``) is transposed into it block by block
        (:func:`mica.lower.relayout.transpose`) before the operator's first statement. The array is not
        written by this operator, so the mirror stays equal to the home."""
        arr = prog.array(acc.array)
        swapped = swap_home(sched.home(acc.array))
        if swapped is None or acc.array in written:
            return None
        mbox = home_box(arr.shape, swapped)
        try:
            region = b.box_region(acc.array, mbox, {})
            own = ownership_map(arr, mbox, region, {})
            plan = classify(arr, acc.ref, need, own, mbox, what)
        except (CommError, ScheduleError):
            return None
        if acc.array not in mirrors:
            name = f"{acc.array}_mirror"
            while name in b.tensors or any(a.name == name for a in prog.arrays):
                name += "_"
            t = RegionTensor(name, acc.array, arr.dtype, arr.elem_bytes, b.region, mbox, "mirror", str(own))
            if acc.array in resident:
                try:
                    lanes, kers, ops = transpose(b.tensors[acc.array], t, f"{name}_", b.region, target)
                except ScheduleError:
                    return None
                for lane in lanes:
                    b.tensors[lane.name] = lane
                b.kernels.extend(kers)
                mirror_moves.extend(ops)
            else:
                mirror_loads.append(HostLoad(name, acc.array, region))
            b.tensors[name] = t
            mirrors[acc.array] = name
        return replace(plan, source=mirrors[acc.array])

    def plan_reads(stmt: Statement):
        """Buffers each access of ``stmt`` uses, the multicasts that fill receive buffers, and the ghost
        widths of the produced arrays it reads from neighbours (exchanged just before it)."""
        buffers = {stmt.write.ref: stmt.write.array}
        moves = []
        halos: dict[str, tuple[tuple[int, int], ...]] = {}
        red_s = b.reds.get(stmt.name)
        for acc in stmt.reads:
            if red_s is not None and acc.ref == red_s.read_ref:
                buffers[acc.ref] = acc.array            # the accumulator: the core's own partial
                continue
            if acc.array in ring_arrays:
                buffers[acc.ref] = ring_buffer(stmt, acc)
                continue
            box, pins = b.home_box(acc.array)
            region = b.home_region(acc.array)
            arr = prog.array(acc.array)
            own = ownership_map(arr, box, region, pins)
            need = need_map(stmt, acc, sched)
            what = f"statement {stmt.name}, read {acc.ref} of {acc.array}"
            plan = None
            if acc.array not in written:
                try:
                    plan = classify(arr, acc.ref, need, own, box, what)
                except CommError as exc:
                    plan_error = exc
                    plan = mirror_plan(stmt, acc, need, what)
            elif is_local(need, own):
                plan = CommPlan("local", acc.array, acc.ref)
            if plan is None:
                # Neighbours' data: a halo. Ghost zones of read-only arrays are filled by the host load;
                # produced arrays are exchanged just before the statement.
                try:
                    widths = halo_widths(arr, need, box, what)
                    check_covered(arr, need, held_map(arr, ghosted_box(box, widths), pins, region), what)
                except CommError:
                    if acc.array not in written:
                        raise plan_error from None
                    raise
                ghosts[acc.array] = merge_widths(ghosts.get(acc.array, widths), widths)
                buffers[acc.ref] = acc.array
                if acc.array in written or acc.array in resident:
                    # Not from the host: an array this operator writes, or one an earlier operator left
                    # on the mesh, gets its ghost zones from the neighbours just before the read.
                    halos[acc.array] = merge_widths(halos.get(acc.array, widths), widths)
                continue
            if plan.kind == "local":
                buffers[acc.ref] = plan.buffer
                continue
            name = f"{acc.array}_recv"
            n = 1
            while name in b.tensors and b.tensors[name].box != plan.recv_box:
                n += 1
                name = f"{acc.array}_recv{n}"
            if name not in b.tensors:
                b.add_tensor(name, acc.array, plan.recv_box, "recv",
                             str(box_map(prog.array(acc.array), plan.recv_box)))
            buffers[acc.ref] = name
            moves.append((plan, name))
        _check_writes(stmt, b, sched)
        return buffers, moves, halos

    rings: dict[str, tuple[str, int, str]] = {}      # ring buffer -> (axis, max hops, derived relation)

    def ring_buffer(stmt: Statement, acc) -> str:
        """The ring buffer holding ``acc``'s panels; derives and proves how they move (once per array)."""
        name = f"{acc.array}_ring"
        arr = prog.array(acc.array)
        hbox, _ = b.home_box(acc.array)
        box = tuple(BoxDim("kb", step.tile, d.extent, True) if ix.single_var() == step.loop
                    else BoxDim(d.coord, d.tile, d.extent, True) if d.coord
                    else BoxDim(None, d.tile, d.extent)
                    for d, ix in zip(hbox, acc.index))
        if name in b.tensors and b.tensors[name].box != box:
            raise ScheduleError(f"statement {stmt.name} reads {acc.array} through another panel shape")
        # Derive in logical ring coordinates (the interleaved layout is a permutation of each line).
        logical = Skew("cannon", b.skew.n)
        held = box_map(arr, box, logical)
        lsched = sched.copy(step=replace(sched.step, skew="cannon"))
        axis, hops, rel = classify_ring(arr, acc.ref, need_map(stmt, acc, lsched), held, b.skew.kind,
                                        b.skew.n, f"statement {stmt.name}, read {acc.ref} of {acc.array}")
        if name not in b.tensors:
            b.add_tensor(name, acc.array, box, "ring", str(held))
            rings[name] = (axis, hops, rel)
        return name

    def ring_exchange() -> Exchange:
        ops, next_colour = [], 0
        for name, (axis, hops, rel) in rings.items():
            t = b.tensors[name]
            need = len(ring_moves(b.skew.kind, b.skew.n))
            colours = tuple(range(next_colour, next_colour + need))
            next_colour += need
            across = (b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1)
            groups, routes = ring_routes(b.skew.kind, b.skew.n, axis, across, colours)
            ops.append(RingShift(f"{t.array} ring along {axis}", t.array, name, name, axis, b.skew.kind,
                                 b.skew.n, across, groups, routes, hops, rel))
        assign_colours(next_colour, target.colours, "ring shifts")
        return Exchange("ring_shift", tuple(ops), guard=Lin(0, (("t", 1),)))

    def exchange(name: str, moves: list[tuple[CommPlan, str]]) -> Exchange:
        colours = assign_colours(len(moves), target.colours, name)
        ops = []
        for (plan, dst), colour in zip(moves, colours):
            axis = "x" if plan.kind == "row" else "y"
            span = (b.region.x0, b.region.x1) if axis == "x" else (b.region.y0, b.region.y1)
            across = (b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1)
            r = plan.root
            senders = (Rect.of((r,), (r.shifted(1),), across[0], across[1]) if axis == "x"
                       else Rect.of(across[0], across[1], (r,), (r.shifted(1),)))
            # The routes reach every core of the line, also cores that hold data but need none of this
            # panel (the region covers every home): the longest path is to the line's far end.
            steps = step.steps if (step is not None and r.terms) else 1
            roots = (r.evaluate({"t": 0}), r.evaluate({"t": steps - 1}))
            reach = max(max(roots) - span[0], span[1] - 1 - min(roots))
            ops.append(Multicast(f"{plan.buffer}->{dst}", plan.array, plan.buffer, dst, axis, r, senders,
                                 b.region.rect, colour, multicast_routes(axis, r, span, across, colour),
                                 max(plan.max_hops, reach), plan.relation))
        return Exchange(name, tuple(ops))

    body: list = []
    # Host loads of every live-in array into its home (or its ring buffers, already skewed).
    for name in prog.inputs:
        if name in ring_arrays:
            continue
        body.append(HostLoad(name, name, b.home_region(name)))
    ring_loads = len(body)
    # Partial results start at the reduction's identity everywhere but the root.
    if b.reduced_array is not None:
        part = b.tensors[b.reduced_array]
        ident = Const(IDENTITY[red.op])
        rects = []
        if "x" in b.reduced_axes:
            rects.append(Region("nonroot_x", 1, b.region.x1, b.region.y0, b.region.y1))
        if "y" in b.reduced_axes:
            x1 = 1 if "x" in b.reduced_axes else b.region.x1
            rects.append(Region("nonroot_y", 0, x1, 1, b.region.y1))
        for i, rg in enumerate(rects):
            if rg.cores:
                k = b.box_kernel(f"k_fill{i}_{part.name}", part, rg, ident)
                body.append(Compute(k.name, rg.rect))

    double = step is not None and step.buffers == 2
    prefetched: list[str] = []          # exchanges marked as prefetched (double-buffered)

    def emit_statements(stmts: list[Statement], out: list, hoisted: list | None = None, prefetch: bool = False):
        for s in stmts:
            buffers, moves, halos = plan_reads(s)
            out.extend(halo_exchange(b, s, halos))
            in_loop = [(p, d) for p, d in moves if any(bd.coord == "t" for bd in p.recv_box)]
            outside = [(p, d) for p, d in moves if (p, d) not in in_loop]
            if outside:
                (hoisted if hoisted is not None else out).append(exchange(f"bring_{s.name}", outside))
            if in_loop:
                x = exchange(f"step_{s.name}", in_loop)
                if prefetch:
                    # Multicast panels of read-only arrays (classify only plans those): the exchange for
                    # step t+1 may travel while step t computes, into the second slot of each receive buffer.
                    x = replace(x, prefetch=True)
                    for _, dst in in_loop:
                        b.tensors[dst] = replace(b.tensors[dst], slots=2)
                    prefetched.append(x.name)
                out.append(x)
            k = b.statement_kernel(s, buffers)
            out.append(Compute(k.name, b.compute_rect(s).rect))

    emit_statements(pre, body)
    if step is not None:
        loop_body: list = []
        emit_statements(body_main, loop_body, hoisted=body, prefetch=double)
        if rings:
            # Before every step but the first, each ring buffer takes the panel its successor used.
            ring = ring_exchange()
            if double:
                # Ring arrays are read-only (checked above): a core forwards the panel it computes with
                # while it computes, and receives the next one into its ring buffer's second slot.
                ring = replace(ring, prefetch=True)
                for name in rings:
                    b.tensors[name] = replace(b.tensors[name], slots=2)
                prefetched.append(ring.name)
            loop_body.insert(0, ring)
        body.append(Loop("t", step.steps, tuple(loop_body)))
        if double and not prefetched:
            raise ScheduleError(f"schedule '{sched.name}' asks for double buffering, but step loop {step.loop} "
                                f"receives no read-only panels to prefetch (everything it reads is local)")
    else:
        emit_statements(body_main, body)

    # Combine partial results towards coordinate 0 on each reduced axis: a chain of one-hop shifts, or
    # (tree) chains inside groups of `group` cores in parallel, then a chain over the group roots.
    if b.reduced_array is not None:
        part = b.tensors[b.reduced_array]
        inbuf = b.add_tensor(f"{part.name}_in", part.array, part.box, "recv", part.ownership)
        for axis in b.reduced_axes:
            n = b.region.x1 if axis == "x" else b.region.y1
            if n <= 1:
                continue
            across = (0, 1) if (axis == "y" and "x" in b.reduced_axes) else \
                ((b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1))
            line_region = (Region(f"line_{axis}", 0, n, across[0], across[1]) if axis == "x"
                           else Region(f"line_{axis}", across[0], across[1], 0, n))
            acc = b.box_kernel(f"k_acc{axis}_{part.name}", part, line_region,
                               Bin(red.op, Read("w"), Read("r0")), (inbuf,))
            colour = assign_colours(1, target.colours, f"reduction of {part.array}")[0]
            g = min(sched.group, n) if sched.reduce == "tree" else 1
            for stage in _reduction_stages(axis, n, g, across):
                senders, receivers, distance, count, what = stage
                direction = "W" if axis == "x" else "N"
                shift = Shift(f"{part.array} partials {what}", part.array, part.name, inbuf.name,
                              direction, senders, receivers, colour,
                              shift_routes(direction, senders, receivers, colour, distance), distance,
                              f"{{ [core_src[{axis}'] -> core_dst[{axis}' - {distance}]] }} along {axis}",
                              distance)
                body.append(Loop("s", count, (Exchange(f"reduce_{part.array}_{axis}_{what}", (shift,)),
                                              Compute(acc.name, receivers))))
    # Mirrors: loaded from the host with the other loads, or transposed on the mesh right after them.
    body[ring_loads:ring_loads] = mirror_loads + mirror_moves
    for name in rings:
        body.insert(ring_loads, HostLoad(name, b.tensors[name].array, b.region))
    emit_statements(post, body)
    for name in prog.outputs:
        body.append(HostStore(name, name, b.home_region(name)))

    # Homes read across their blocks get ghost zones (every distributed dimension a window). A multicast
    # sends its root's whole home box, so an array cannot be both multicast and ghosted.
    both = sorted(set(ghosts) & {c.src for op, _ in _walk(body) if isinstance(op, Exchange)
                                 for c in op.ops if isinstance(c, Multicast)})
    if both:
        raise CommError(f"{', '.join(both)} would be read both by multicasts and through ghost zones; "
                        f"this plan supports one pattern per array")
    for name, widths in ghosts.items():
        t = b.tensors[name]
        b.tensors[name] = replace(t, box=ghosted_box(b.home_box(name)[0], widths))

    # Arena layout: every core of the region holds every buffer at the same offset.
    offset = 0
    laid = []
    for t in b.tensors.values():
        laid.append(replace(t, offset=offset))
        offset += t.alloc_bytes                         # a double buffer reserves both slots
    if offset > target.sram_bytes:
        parts = ", ".join(f"{t.name} {t.max_bytes} B" + (" x 2 slots" if t.slots == 2 else "") for t in laid)
        dbl = sum(t.alloc_bytes // 2 for t in laid if t.slots == 2)
        why = (f"; the second slots of the double buffers take {dbl} of them" +
               (f" (single-buffered it would fit: {offset - dbl} bytes)" if offset - dbl <= target.sram_bytes
                else "") if dbl else "")
        raise SramError(
            f"{prog.name} on a {sched.mesh[0]}x{sched.mesh[1]} mesh needs {offset} bytes per core on the "
            f"interior class of region {b.region} (full tiles: {parts}){why}; target {target.name} has "
            f"{target.sram_bytes} bytes of SRAM per core")
    colours = max([sum(len(getattr(c, "groups", ())) or 1 for c in op.ops)
                   for op, _ in _walk(body) if isinstance(op, Exchange)] or [0])
    return MeshProgram(prog.name, target.name, sched.mesh, b.region, tuple(laid), tuple(b.kernels),
                       tuple(body), offset, tuple(n for n, _ in prog.scalars), colours, b.skew)


def halo_exchange(b: _Builder, stmt: Statement, halos: dict[str, tuple[tuple[int, int], ...]]) -> list:
    """The ops that fill the ghost zones ``stmt`` reads, just before it: along x then along y, each
    phase packing strips of the senders' homes, one exchange of one-hop shifts (even and odd senders on
    separate colours) and unpacking into the receivers' ghost zones. The y strips span the x ghost zones,
    so diagonal neighbours' elements arrive in two hops."""
    ops: list = []
    made: set[str] = set()
    for axis in ("x", "y"):
        shifts, packs, unpacks = [], [], []
        for name, widths in sorted(halos.items()):
            arr = b.prog.array(name)
            home = b.tensors[name]
            box, _ = b.home_box(name)
            region = b.home_region(name)
            lo_c, hi_c = (region.x0, region.x1) if axis == "x" else (region.y0, region.y1)
            across = (region.y0, region.y1) if axis == "x" else (region.x0, region.x1)
            extended = (tuple(w if d.coord == "x" else (0, 0) for d, w in zip(box, widths))
                        if axis == "y" else None)
            for st in strips(box, widths, axis, hi_c - lo_c, extended):
                a, z = lo_c + st.senders[0], lo_c + st.senders[1]
                first = a + (st.parity - a) % 2
                if first >= z:
                    continue
                step = -1 if st.direction in ("W", "N") else 1
                send = _strip_tensor(b, name, st.send, "send")
                recv = _strip_tensor(b, name, st.recv, "halo")

                def line(lo, hi, stride=1, phase=0):
                    return (Rect.of(lo, hi, across[0], across[1], xs=stride, xp=phase) if axis == "x"
                            else Rect.of(across[0], across[1], lo, hi, ys=stride, yp=phase))
                senders = line(a, z, 2, st.parity)
                receivers = line(a + step, z + step, 2, (st.parity + 1) % 2)
                tag = f"{stmt.name}_{name}_{axis}{st.side}"
                if tag not in made:
                    # One pack and one unpack kernel per strip serve both parities.
                    made.add(tag)
                    pack_at = _region(f"pack_{tag}", axis, a, z, across)
                    unpack_at = _region(f"unpack_{tag}", axis, a + step, z + step, across)
                    pk = b.box_kernel(f"k_pack_{tag}", send, pack_at, Read("r0"), (home,))
                    uk = b.box_kernel(f"k_unpack_{tag}", home, unpack_at, Read("r0"), (recv,), domain=recv.box)
                    packs.append(Compute(pk.name, pack_at.rect))
                    unpacks.append(Compute(uk.name, unpack_at.rect))
                shifts.append(Shift(f"{name} halo {st.side} along {axis}, {'even' if st.parity == 0 else 'odd'} "
                                    f"senders", name, send.name, recv.name, st.direction, senders, receivers,
                                    0, (), 1, strip_relation(arr, st)))
        if not shifts:
            continue
        colours = assign_colours(len(shifts), b.target.colours, f"halo exchange before {stmt.name}")
        shifts = [replace(sh, colour=c, routes=shift_routes(sh.direction, sh.senders, sh.receivers, c, 1))
                  for sh, c in zip(shifts, colours)]
        ops += packs + [Exchange(f"halo_{stmt.name}_{axis}", tuple(shifts))] + unpacks
    return ops


def _region(name: str, axis: str, lo: int, hi: int, across: tuple[int, int]) -> Region:
    return Region(name, lo, hi, *across) if axis == "x" else Region(name, *across, lo, hi)


def _strip_tensor(b: _Builder, array: str, box: tuple[BoxDim, ...], role: str) -> RegionTensor:
    """The buffer of a halo strip (one per array, role and box: strips of the same shape share it)."""
    for t in b.tensors.values():
        if t.array == array and t.role == role and t.box == box:
            return t
    n = sum(1 for t in b.tensors.values() if t.array == array and t.role == role)
    return b.add_tensor(f"{array}_{role}{n}", array, box, role, str(box_map(b.prog.array(array), box)))


def _one_core(prog: Program, sched: Schedule, target: Target) -> MeshProgram:
    """Everything on core (0, 0), in the program's original order: one sequence kernel whose isl AST
    interleaves the statements exactly as the source does. Legal for every program, but only with
    every home whole on core (0, 0): a layout another operator fixed is refused."""
    for h in sched.homes:
        if any(a for a, _ in h.dims) or any(c for _, c in h.pin):
            raise ScheduleError(f"a one-core plan keeps {h.array} whole on core (0, 0); the schedule lays it "
                                f"out over the mesh ({', '.join(f'{a}/{t}' if a else 'whole' for a, t in h.dims)}), "
                                f"as another operator left it")
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
                        f"{target.sram_bytes} bytes of SRAM per core")
    parts = tuple(
        Kernel(f"k_{s.name}", s.name, s.loops, str(s.domain_set), (), KAccess(s.write.ref, s.write.array, s.write.index),
               tuple(KAccess(a.ref, a.array, a.index) for a in s.reads), s.expr, (), expr_flops(s.expr))
        for s in prog.statements)
    domain = prog.statements[0].domain_set
    udom = isl.UnionSet.from_set(domain)
    for s in prog.statements[1:]:
        udom = udom.union(isl.UnionSet.from_set(s.domain_set))
    cls = KernelClass("k_program_0", Region("k_program_0", 0, 1, 0, 1))
    seq = Kernel("k_program", "", (), str(udom), (), parts[-1].write, (), parts[-1].expr, (cls,), 0, parts,
                 str(prog.schedule_map()))
    body = [HostLoad(n, n, region) for n in prog.inputs]
    body.append(Compute(seq.name, region.rect))
    body += [HostStore(n, n, region) for n in prog.outputs]
    return MeshProgram(prog.name, target.name, sched.mesh, region, tuple(tensors), (seq,), tuple(body), offset,
                       tuple(n for n, _ in prog.scalars), 0, None)


def _reduction_stages(axis: str, n: int, g: int, across: tuple[int, int]):
    """(senders, receivers, distance, stages, label) of each phase of a reduction over ``n`` cores of
    ``axis`` towards 0, in groups of ``g`` (``g = 1``: a plain chain). Loop variable ``s`` is the stage."""
    def line(lo, hi, stride=1, phase=0):
        if axis == "x":
            return Rect.of(lo, hi, across[0], across[1], xs=stride, xp=phase)
        return Rect.of(across[0], across[1], lo, hi, ys=stride, yp=phase)
    out = []
    if g > 1:
        # Inside every group, position g-1-s sends to position g-2-s (all groups at once).
        out.append((line(0, n, g, Lin(g - 1, (("s", -1),))), line(0, n - 1, g, Lin(g - 2, (("s", -1),))),
                    1, g - 1, f"in groups of {g}"))
    m = -(-n // max(g, 1))
    if m > 1:
        src = Lin(g * (m - 1), (("s", -g),))
        dst = Lin(g * (m - 2), (("s", -g),))
        out.append((line((src,), (src.shifted(1),)), line((dst,), (dst.shifted(1),)), g, m - 1,
                    "along the chain" if g == 1 else "across group roots"))
    return out


def _walk(ops, scope=()):
    for op in ops:
        yield op, scope
        if isinstance(op, Loop):
            yield from _walk(op.body, scope + (op.var,))


def _check_writes(stmt: Statement, b: _Builder, sched: Schedule) -> None:
    """Every instance writes an element its own core owns — the home ``{ core -> A }`` (region and pins
    included) — so nothing written is lost; the partial sums of a reduction spread over cores are written
    where the chain that combines them ends at the element's owner."""
    arr = b.prog.array(stmt.write.array)
    t = b.tensors.get(stmt.write.array)
    if t is None:
        raise ScheduleError(f"statement {stmt.name} writes {arr.name}, which this plan keeps in ring buffers")
    writes = need_map(stmt, stmt.write, sched)
    box, pins = b.home_box(arr.name)
    own = ownership_map(arr, box, b.home_region(arr.name), pins)
    red = b.reds.get(stmt.name)
    if red is not None and stmt is b.main and arr.name == b.reduced_array:
        # Partial sums are combined along the reduced axes into the root (coordinate 0 there): the
        # element must belong to the core the chain ends at.
        xs = "0" if "x" in b.reduced_axes else "x"
        ys = "0" if "y" in b.reduced_axes else "y"
        region = f"{b.region.x0} <= x < {b.region.x1} and {b.region.y0} <= y < {b.region.y1}"
        held = imap(f"{{ M[t, x, y] -> core[{xs}, {ys}] : {region} }}").apply_range(own)
    else:
        held = imap("{ M[t, x, y] -> core[x, y] }").apply_range(own)
    if not writes.is_subset(held):
        raise ScheduleError(
            f"statement {stmt.name}: cores would write elements of {arr.name} that another core owns "
            f"(the writes would be lost)", detail=str(writes.subtract(held)))
