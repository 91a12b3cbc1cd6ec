"""The compiler as one flat function of named passes, with a verifier at the seams.

    program  --derive_schedule-->  Schedule            (tiling/)
             --build_mesh_program-->  MeshProgram      (comm/ + meshir/)
             --verify-->                                (meshir/)
             --estimate-->  Cost                        (tiling/cost)
             --emit_kernel_module-->  C per class       (emit_c/)

:func:`compile_affine` is the user's entry point; it returns a :class:`CompiledProgram`.
"""

from __future__ import annotations

import time
from itertools import combinations
from dataclasses import dataclass, field, replace
from functools import cached_property

from .affine.deps import loop_kinds, reductions
from .affine.isl_names import count_points, isl_budget
from .affine.pieces import Pieces, cut_candidates, cut_program, piece_name
from .affine.program import Program
from .emit_c.kernels import KernelModule, emit_kernel_module
from .errors import MeshError, ScheduleError, SramError
from .errors import MicaError
from .meshir.build import build_mesh_program, work_blocks
from .meshir.phases import (build_phased, fixed_homes_after, operator_program, phase_operators,
                            split_operators)
from .meshir.ir import HostLoad, MeshProgram
from .meshir.homes import swap_home
from .meshir.relayout import relayout_cycles
from .meshir.printer import format_mesh_program
from .meshir.verify import verify
from .targets import Target, get_target
from .tiling.cost import Cost, estimate
from .tiling.mapping import derive_schedule
from .tiling.schedule import Schedule
from .tiling.search import SearchReport
from .tiling.search import search as run_search


def check_mesh(mesh, target: Target) -> tuple[int, int]:
    """``mesh`` as (width, height) after checking it is positive and fits the target's grid."""
    try:
        w, h = mesh
    except (TypeError, ValueError):
        raise MeshError(f"mesh must be (width, height), got {mesh!r}") from None
    for name, v in (("width", w), ("height", h)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise MeshError(f"mesh {name} must be an integer, got {v!r}")
        if v <= 0:
            raise MeshError(f"mesh {name} must be positive, got {v}")
    gw, gh = target.grid
    if w > gw or h > gh:
        raise MeshError(f"mesh {w}x{h} is larger than {target.name}'s usable grid {gw}x{gh}")
    return int(w), int(h)


@dataclass(frozen=True)
class CompiledProgram:
    """A program compiled for one mesh: its schedule, MeshIR, modelled cost and C kernels.

    ``run(inputs, mesh=None, threads=None)`` executes it in the native emulator; with another ``mesh``
    the same schedule shape is re-instantiated for that mesh first.
    """

    program: Program
    target: Target
    schedule: Schedule
    mesh_program: MeshProgram
    cost: Cost
    timings: dict = field(default_factory=dict, compare=False)
    search_report: SearchReport | None = field(default=None, compare=False)

    @property
    def mesh(self) -> tuple[int, int]:
        return self.schedule.mesh

    @cached_property
    def pieces(self) -> Pieces | None:
        """The program cut into the pieces the schedule maps (what the mesh runs), or None."""
        return program_pieces(self.program, self.schedule)

    @cached_property
    def meshir(self) -> str:
        """The MeshIR as readable text."""
        return format_mesh_program(self.mesh_program)

    @cached_property
    def kernel_module(self) -> KernelModule:
        with isl_budget("C kernel generation"):
            return emit_kernel_module(self.mesh_program)

    @property
    def kernels(self) -> dict[str, str]:
        """Generated C, one function per region class."""
        return dict(self.kernel_module.sources)

    def explain(self) -> str:
        """Why this plan: the mapping decisions and, when it was searched, every candidate considered
        with its modelled cycles or the reason it was rejected."""
        out = self.schedule.explain()
        mp = self.mesh_program
        loaded = {op.buffer for op in mp.body if isinstance(op, HostLoad)}
        for t in mp.tensors:
            if t.role == "mirror":
                how = ("loaded from the host in that layout" if t.name in loaded else
                       "transposed on the mesh block by block from the home an earlier operator left")
                out += (f"\n{t.array} is also read with its mesh axes swapped: a second home {t.name} "
                        f"[{', '.join(str(d) for d in t.box)}], {how}")
        if self.search_report is not None:
            out += "\n" + self.search_report.table()
        return out

    def retarget(self, mesh) -> "CompiledProgram":
        """The same schedule shape re-instantiated for ``mesh``."""
        mesh = check_mesh(mesh, self.target)
        if mesh == self.mesh:
            return self
        return compile_affine(self.program, mesh=mesh, target=self.target,
                              schedule=retarget_schedule(self.program, self.schedule, mesh))

    def emit(self, kind: str, out_dir) -> list:
        """Writes the program for a real machine into ``out_dir`` and returns the written paths.

        ``kind`` is ``"c"`` (the per-class C kernels the emulator runs), ``"csl"`` (Cerebras: layout, PE
        programs, host script) or ``"metalium"`` (Tenstorrent: host C++ and reader/compute/writer kernels).
        Every back end renders this program's MeshIR, so what it writes is the plan the emulator runs."""
        from .emit import emit
        return emit(self, kind, out_dir)

    def run(self, inputs, mesh=None, threads: int | None = None, progress: bool | None = None):
        """Runs in the emulator; returns a :class:`mica.native_sim.execute.RunResult`. ``progress``: a
        progress bar on stderr for long runs (default: only when stderr is a terminal)."""
        from .native_sim.execute import execute
        prog = self.retarget(mesh) if mesh is not None else self
        return execute(prog, inputs, threads=threads, progress=progress)

    def __str__(self) -> str:
        return f"{self.schedule}\n{self.cost}"


def compile_affine(op: Program, mesh=(750, 994), target: str | Target = "wse2", *,
                   schedule: Schedule | None = None, search: bool = True, params=None,
                   side_by_side: bool = True) -> CompiledProgram:
    """Compiles ``op`` for ``mesh = (width, height)`` cores of ``target``.

    By default the plan is searched (:func:`mica.tiling.search.search`); ``search=False`` takes the
    derived default plan; ``schedule`` forces a plan (e.g. ``mica.plans.cannon(op, mesh)`` or one read
    back with :meth:`Schedule.from_json`) whose mesh must be ``mesh``. ``op`` may also be the text of a C
    function (see :func:`mica.affine.from_c.from_c`), whose ``int`` size parameters ``params`` binds.
    With ``side_by_side=False`` the search runs the operators of a program one after another only, never
    on disjoint rectangles at the same time (the CSL and Metalium back ends lay out blocks from core (0, 0)).
    """
    if isinstance(op, str):
        from .affine.from_c import from_c
        op = from_c(op, params=params)
    if not isinstance(op, Program):
        raise ScheduleError(f"compile_affine expects a mica Program (mica.ops.matmul(...), "
                            f"mica.affine.from_c(...)) or C source text, got {type(op).__name__}")
    tgt = get_target(target)
    mesh = check_mesh(mesh, tgt)
    timings = {}
    t0 = time.perf_counter()
    with isl_budget("dependence analysis"):
        loop_kinds(op)
        reductions(op)
    report = None
    if schedule is None and search:
        try:
            with isl_budget("schedule search"):
                sched, report = search_program(op, mesh, tgt, side_by_side)
        except SramError as exc:
            _explain_sram(exc, op, mesh, tgt)
            raise
    elif schedule is None:
        sched = derive_schedule(op, mesh)
    else:
        if tuple(schedule.mesh) != mesh:
            raise ScheduleError(f"the forced schedule is for mesh {schedule.mesh}, not {mesh}; "
                                f"use mica.tiling.mapping.derive_schedule(program, mesh, like=schedule)")
        sched = schedule
    timings["schedule"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        with isl_budget("MeshIR build"):
            mp = build(op, sched, tgt)
    except SramError as exc:
        _explain_sram(exc, op, mesh, tgt)
        raise
    timings["meshir"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with isl_budget("MeshIR verification"):
        verify(mp, tgt)
    timings["verify"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with isl_budget("cost model"):
        cost = estimate(mp, tgt)
    timings["cost"] = time.perf_counter() - t0
    return CompiledProgram(op, tgt, sched, mp, cost, timings, report)


def search_program(op: Program, mesh, tgt: Target, side_by_side: bool = True
                   ) -> tuple[Schedule, SearchReport | None]:
    """The searched plan of ``op``: one operator searched directly; several (or one nest that only a
    fission lets spread over the mesh) through :func:`search_operators`."""
    if len(split_operators(op)) > 1:
        return search_operators(op, mesh, tgt, side_by_side=side_by_side)
    splits = operator_splits(op)
    try:
        sched, report = run_search(op, mesh, tgt)
    except MicaError:
        if not splits:
            raise
        try:
            return search_operators(op, mesh, tgt, splits, side_by_side=side_by_side)
        except MicaError:
            pass
        raise
    if sched.space or sched.step is not None or not splits:
        return sched, report
    try:
        phased, phased_report = search_operators(op, mesh, tgt, splits, side_by_side=side_by_side)
    except MicaError:
        return sched, report
    if not phased.phases:
        return sched, report
    return phased, phased_report


def retarget_schedule(op: Program, sched: Schedule, mesh) -> Schedule:
    """``sched``'s decisions re-instantiated for ``mesh`` (operator by operator for a phased schedule)."""
    if not sched.phases:
        return derive_schedule(op, mesh, like=sched)
    prog = mapped_program(op, sched)
    mapped, _ = map_operators(prog, phase_operators(prog, sched), mesh, None, like=sched)
    return sched.copy(mesh=mesh, phases=mapped.phases)


def program_pieces(op: Program, sched: Schedule) -> Pieces | None:
    """``op`` cut into the pieces ``sched`` maps (:attr:`Schedule.pieces`), or None when it maps ``op``."""
    if not sched.pieces:
        return None
    array, dim, count = sched.pieces
    return cut_program(op, array, int(dim), int(count))


def mapped_program(op: Program, sched: Schedule) -> Program:
    """The program whose statements ``sched`` maps: ``op``, or its pieces."""
    pieces = program_pieces(op, sched)
    return op if pieces is None else pieces.program


def build(op: Program, sched: Schedule, tgt: Target) -> MeshProgram:
    """The MeshIR of ``op`` under ``sched`` (a phased schedule maps its operators one after another)."""
    if sched.phases:
        return build_phased(mapped_program(op, sched), sched, tgt)
    return build_mesh_program(op, sched, tgt)


def search_operators(op: Program, mesh, tgt: Target, splits: list[tuple[str, list]] | None = None, *,
                     side_by_side: bool = True) -> tuple[Schedule, SearchReport | None]:
    """A program of several operators, mapped one after another (each searched by
    :func:`mica.tiling.search.search`), compared with the whole program on one core; the cheapest wins.

    ``splits`` are the ways to cut ``op`` into operators, ``(name, [statements per operator])``; by
    default the top-level loop nests and, when distributing the nests splits them further, the finest
    legal fission. Each split is mapped in two orders:

    * program order: every operator takes the layout of the arrays earlier operators left on the mesh
      (inputs included, so each is loaded once);
    * heaviest first: operators in decreasing order of work, each taking the layout chosen by the
      heavier ones for the arrays the program writes (an intermediate is produced where its heaviest
      consumer wants it); inputs are loaded once per layout.

    With ``side_by_side``, every run of operators that do not depend on each other is also tried on
    disjoint slabs of the mesh at the same time (:func:`slabs`), the others on the whole mesh; and a
    program that can be cut into independent pieces is tried streamed, each operator on a slab of its own
    working on one piece after another (:func:`stream_schedules`).
    """
    if splits is None:
        splits = operator_splits(op)
    one = derive_schedule(op, mesh, assignment=[], name="one-core")
    one_line = "one core"
    try:
        one_cost = estimate(build(op, one, tgt), tgt).total_cycles
    except MicaError as exc:
        one_cost = float("inf")
        one_line = f"one core: {str(exc).splitlines()[0][:200]}"
    tried: list[tuple[float, str, Schedule | None, SearchReport | None]] = []

    def reject(how: str, exc: MicaError) -> None:
        tried.append((float("inf"), f"{how}: {str(exc).splitlines()[0][:200]}", None, None))

    def consider(how: str, make, reason: str) -> tuple[Schedule, SearchReport | None] | None:
        """Builds and costs the plan ``make()`` returns (with its search report), records it in ``tried``
        with ``reason`` as its account, or why it failed; returns both (None when it failed)."""
        try:
            phased, report = make()
            phased = phased.copy(reasons=(reason,))
            cost = estimate(build(op, phased, tgt), tgt).total_cycles
        except MicaError as exc:
            reject(how, exc)
            return None
        tried.append((cost, how, phased, report))
        return phased, report
    memo: dict = {}                      # one search per (operator, fixed layouts, resident arrays)
    side = min(mesh)
    # On a rectangular mesh, when no way works on the whole of it (an operator's grid of blocks is not
    # square, so a later one cannot transpose its result), the largest square of cores is tried too.
    for grid in ((mesh, (side, side)) if mesh[0] != mesh[1] else (mesh,)):
        if grid != mesh and any(t[2] is not None for t in tried):
            break
        on = "" if grid == mesh else f" on the {side}x{side} square of the mesh"
        for split_name, ops in splits:
            for heaviest in (False, True):
                how = (f"{len(ops)} operators ({split_name}), " + ("heaviest first" if heaviest else "in program order")
                       + on)

                def whole(ops=ops, heaviest=heaviest, grid=grid):
                    phased, report = map_operators(op, ops, grid, tgt, heaviest_first=heaviest,
                                                   memo=memo if grid == mesh else {})
                    if grid != mesh:
                        phased = phased.copy(mesh=mesh, phases=tuple(p.copy(mesh=mesh) for p in phased.phases))
                    return phased, report
                consider(how, whole, f"{how}, one after another")
                if len(ops) == 1:
                    break                    # one operator: the order does not matter
            if grid != mesh or not side_by_side:
                continue
            for group, places in slabs(op, ops, mesh):
                how = (f"{len(ops)} operators ({split_name}), operators {group[0]}-{group[-1]} side by side on "
                       + ", ".join(f"[{o[0]}:{o[0] + w}, {o[1]}:{o[1] + h}]" for o, (w, h) in
                                   (places[k] for k in group)))
                done = consider(how, lambda ops=ops, places=places: map_operators(
                    op, ops, grid, tgt, memo=memo, places=places), f"{how}, the others one after another on the whole mesh")
                packed = done and packed_slabs(op, ops, done[0], group, 0 if mesh[0] >= mesh[1] else 1)
                if packed:
                    how = (f"{len(ops)} operators ({split_name}), operators {group[0]}-{group[-1]} side by side on "
                           + ", ".join(packed.phases[k].cores().split(" ", 1)[1] for k in group)
                           + " (slabs trimmed to their operators' cores)")
                    consider(how, lambda packed=packed, report=done[1]: (packed, report),
                             f"{how}, the others one after another on the whole mesh")
    if side_by_side:
        for how, phased in stream_schedules(op, mesh, tgt):
            if isinstance(phased, MicaError):
                reject(how, phased)
            else:
                consider(how, lambda phased=phased: (phased, None), how)
    lines = [f"  {c:>14,.0f} cycles  {how}" if s is not None else f"  {'rejected':>21}  {how}"
             for c, how, s, _ in tried]
    lines.append(f"  {one_cost:>14,.0f} cycles  one core" if one_cost < float("inf")
                 else f"  {'rejected':>21}  {one_line}")
    best = min((t for t in tried if t[2] is not None), key=lambda t: t[0], default=None)
    if best is not None and best[0] < one_cost:
        cost, how, phased, report = best
        return phased.copy(reasons=phased.reasons + (
            f"chosen: {cost:,.0f} modelled cycles, the cheapest of:",) + tuple(lines)), report
    if one_cost == float("inf"):
        try:
            build(op, one, tgt)
        except MicaError as exc:     # the plain reason (e.g. SRAM), with every way tried as detail
            exc.detail = "\n".join(["ways tried:"] + lines + ([exc.detail] if exc.detail else []))
            exc.args = (f"{exc.args[0]}; mapped operator by operator over the {mesh[0]}x{mesh[1]} mesh it "
                        f"does not work either (the detail lists the ways tried)",)
            raise
    return one.copy(reasons=one.reasons + (
        f"{op.name} has {len(split_operators(op))} top-level loop nest(s); chosen: one core "
        f"({one_cost:,.0f} modelled cycles), the cheapest of:",) + tuple(lines)), None


def independent_runs(op: Program, ops: list) -> list[list[int]]:
    """Maximal runs (two or more) of consecutive operators no two of which depend on each other: none
    writes an array another reads or writes. They may run at the same time on disjoint cores."""
    def arrays(g):
        reads = {a.array for s in g for a in s.reads}
        writes = {s.write.array for s in g}
        return reads, writes
    rw = [arrays(g) for g in ops]

    def independent(i, j):
        (ri, wi), (rj, wj) = rw[i], rw[j]
        return not (wi & (rj | wj) or wj & ri)
    runs, run = [], [0] if ops else []
    for k in range(1, len(ops)):
        if all(independent(j, k) for j in run):
            run.append(k)
        else:
            runs.append(run)
            run = [k]
    runs.append(run)
    return [r for r in runs if len(r) > 1]


def slabs(op: Program, ops: list, mesh) -> list[tuple[list[int], list]]:
    """Placements :func:`search_operators` tries: each run of :func:`independent_runs` on slabs of the mesh
    cut along its longer axis, one slab per operator with a share of the cores proportional to its work
    (at least one line); every other operator on the whole mesh. Returns ``(run, places)`` pairs, places as
    :func:`map_operators` takes them."""
    out = []
    for run in independent_runs(op, ops):
        cut = slab_places([ops[k] for k in run], mesh)
        if cut is None:
            continue
        places = [((0, 0), tuple(mesh))] * len(ops)
        for k, place in zip(run, cut):
            places[k] = place
        out.append((run, places))
    return out


def slab_places(ops: list, mesh, axis: int | None = None) -> list | None:
    """One slab of the mesh per operator of ``ops``, cut along mesh axis ``axis`` (0: x; default the
    longer one) with a share of the cores proportional to the operator's work (at least one line each),
    as ``(origin, size)``; None when there are more operators than lines."""
    if axis is None:
        axis = 0 if mesh[0] >= mesh[1] else 1
    length = mesh[axis]
    if len(ops) > length:
        return None
    work = [max(1, sum(count_points(s.domain_set, {}) for s in g)) for g in ops]
    cuts = [0]
    for i in range(1, len(ops)):
        cut = round(length * sum(work[:i]) / sum(work))
        cuts.append(min(max(cut, cuts[-1] + 1), length - (len(ops) - i)))
    cuts.append(length)
    return [((a, 0), (b - a, mesh[1])) if axis == 0 else ((0, a), (mesh[0], b - a))
            for a, b in zip(cuts, cuts[1:])]


STREAM_PIECES = (2, 4)      # piece counts the search tries when it streams a program's operators


def stream_schedules(op: Program, mesh, tgt: Target):
    """The streamed plans :func:`search_operators` tries: for every dimension class the program can be cut
    along (:func:`mica.affine.pieces.cut_candidates`) and every count of :data:`STREAM_PIECES` that divides
    it, the pieces' operators on one slab each, cut along either mesh axis (:func:`_stream_first_piece`).
    Piece 0 is searched operator by operator at the first count, every later piece and every larger count
    take its decisions (pieces of equal size), so the producer's slab works on piece ``k + 1`` while the
    consumer's works on piece ``k``. Yields ``(description, schedule or MicaError)``."""
    if len(split_operators(op)) < 2:
        return
    for array, dim in cut_candidates(op):
        n = op.array(array).shape[dim]
        firsts: dict[int, Schedule] = {}     # axis -> piece 0's plan at the first count
        for count in STREAM_PIECES:
            if n % count:
                continue
            pieces = cut_program(op, array, dim, count)
            ops = split_operators(pieces.program)
            per = len(ops) // count
            for axis in ((0, 1) if mesh[0] >= mesh[1] else (1, 0)):
                how = f"cut into {count} pieces along dimension {dim} of {array}, streamed"
                try:
                    if axis in firsts:
                        # Smaller pieces take the decisions and slabs of the first count's (not searched
                        # again: the piece statements are named alike, so ``like`` matches them).
                        first = map_operators(pieces.program, ops[:per], mesh, None, like=firsts[axis])[0]
                    else:
                        first = _stream_first_piece(pieces.program, ops[:per], mesh, tgt, axis)
                        if first is None:
                            continue
                        firsts[axis] = first
                    how += " from slab to slab: " + ", ".join(p.cores().split(" ", 1)[1] for p in first.phases)
                    phases = tuple(piece_phase(pieces, p, k) for k in range(count) for p in first.phases)
                    yield how, first.copy(phases=phases, pieces=(array, dim, count))
                except MicaError as exc:
                    yield how, exc


def _stream_first_piece(prog: Program, ops: list, mesh, tgt: Target, axis: int) -> Schedule | None:
    """Piece 0's operators searched on slabs along ``axis`` (:func:`slab_places`), then each slab trimmed to
    the lines its operator works on and the slabs packed from the mesh's edge (a block crosses fewer cores
    to the next slab; the decisions are kept, not searched again); None when there are more operators
    than lines."""
    places = slab_places(ops, mesh, axis)
    if places is None:
        return None
    first, _ = map_operators(prog, ops, mesh, tgt, places=places)
    return packed_slabs(prog, ops, first, range(len(ops)), axis) or first


def packed_slabs(prog: Program, ops: list, sched: Schedule, group, axis: int) -> Schedule | None:
    """``sched`` (a phased schedule whose operators ``group`` sit on consecutive slabs along mesh axis
    ``axis``) with each of those slabs trimmed to the lines its operator works on and the slabs packed
    from the mesh's edge: a block produced on one slab crosses fewer cores to the next. Every decision,
    tiles included, is kept, so each operator builds the same MeshIR, moved. None when no slab has lines
    to spare."""
    mesh = sched.mesh
    used = {k: work_blocks(operator_program(prog, ops[k], k), sched.phases[k])["xy"[axis]] for k in group}
    if all(used[k] == sched.phases[k].mesh[axis] for k in group):
        return None
    phases, at = list(sched.phases), 0
    for k in group:
        u = used[k]
        phases[k] = phases[k].copy(origin=(at, 0) if axis == 0 else (0, at),
                                   mesh=(u, mesh[1]) if axis == 0 else (mesh[0], u))
        at += u
    return sched.copy(phases=tuple(phases))


def piece_phase(pieces: Pieces, phase: Schedule, k: int) -> Schedule:
    """``phase`` (a schedule of piece 0's statements) for the same statements of piece ``k``: statement
    and cut array names renamed, every decision kept (pieces of equal size)."""
    arrays = {piece_name(a, 0): piece_name(a, k) for a, _ in pieces.cut}
    stmts = {piece_name(s.name, 0): piece_name(s.name, k) for s in pieces.source.statements}
    return phase.copy(local_order=tuple((stmts[n], o) for n, o in phase.local_order),
                      homes=tuple(replace(h, array=arrays.get(h.array, h.array)) for h in phase.homes))


def operator_splits(op: Program) -> list[tuple[str, list]]:
    """The ways :func:`search_operators` cuts ``op``: its top-level loop nests, and the finest legal
    fission of them when that differs."""
    nests = split_operators(op)
    fine = split_operators(op, fine=True)
    splits = [("loop nests", nests)] if len(nests) > 1 else []
    if [tuple(s.name for s in g) for g in fine] != [tuple(s.name for s in g) for g in nests]:
        splits.append(("loop nests distributed", fine))
    return splits


HEAVIEST_FIRST = "operators-heaviest-first"
RELAYOUT_SUBSETS = 3      # arrays whose transposed layouts are tried in every combination


def map_operators(op: Program, ops: list, mesh, tgt: Target | None, *, heaviest_first: bool = False,
                  like: Schedule | None = None, memo: dict | None = None,
                  relayout: bool = True, places: list | None = None) -> tuple[Schedule, SearchReport | None]:
    """The phased schedule of ``op`` cut into ``ops``, each operator searched with the layouts already
    chosen fixed (see :func:`search_operators` for the two orders); returns it with the report of the
    heaviest operator's search. With ``relayout``, an operator that touches a 2D array already laid out
    over both mesh axes is also searched with that array transposed (:func:`mica.meshir.homes.swap_home`);
    it takes that layout when its modelled cycles plus those of changing the layout of the arrays earlier
    operators produced (:func:`mica.meshir.relayout.relayout_cycles`) are lower, or when only that layout
    works. With ``like`` (a phased schedule), nothing is searched: every operator keeps the decisions of
    its phase in ``like`` (layout changes included), re-derived for ``mesh`` in ``like``'s order.

    ``places[k] = ((ox, oy), (w, h))`` runs operator ``k`` on the ``w x h`` cores from ``(ox, oy)`` (default:
    the whole mesh); ``like`` places its operators on its rectangles scaled to ``mesh``."""
    if like is not None:
        heaviest_first = like.name == HEAVIEST_FIRST
    memo = {} if memo is None else memo
    n = len(ops)
    order = list(range(n))
    written = frozenset(s.write.array for s in op.statements)
    work = [sum(count_points(s.domain_set, {}) for s in g) for g in ops]
    heaviest = min(order, key=lambda k: (-work[k], k))
    if heaviest_first:
        order.sort(key=lambda k: (-work[k], k))
    phases: list[Schedule | None] = [None] * n
    reports: dict[int, SearchReport] = {}
    if like is not None and like.placed:
        places = [scaled_place(p.origin, p.mesh, like.mesh, mesh) for p in like.phases]
    for k in order:
        origin, size = places[k] if places else ((0, 0), mesh)
        done = [j for j in range(n) if phases[j] is not None and (heaviest_first or j < k)]
        here = [j for j in done if not places or places[j] == places[k]]
        fixed = fixed_homes_after(op, [ops[j] for j in here], [phases[j] for j in here],
                                  arrays=written if heaviest_first else None)
        # Operators on other rectangles fix only the arrays they produce (inputs are loaded per layout).
        away = [j for j in done if j not in here]
        for a, h in fixed_homes_after(op, [ops[j] for j in away], [phases[j] for j in away], arrays=written).items():
            fixed.setdefault(a, h)
        resident = frozenset(s.write.array for g in ops[:k] for s in g)
        sub = operator_program(op, ops[k], k)
        touched = {a.array for s in ops[k] for a in s.accesses}
        swapped = {a: h for a, h in ((a, swap_home(fixed[a])) for a in sorted(touched & set(fixed)))
                   if h is not None}
        if like is not None:
            for a, h in swapped.items():      # the layouts ``like`` changed on the mesh change again
                mine = next((m for m in like.phases[k].homes if m.array == a), None)
                if mine is not None and [ax for ax, _ in mine.dims] == [ax for ax, _ in h.dims]:
                    fixed[a] = h
            phases[k], reports[k] = derive_schedule(sub, size, like=like.phases[k], fixed_homes=fixed), None
            phases[k] = phases[k].copy(origin=origin)
            continue

        def searched(homes):
            key = (tuple(s.name for s in ops[k]), frozenset(homes.items()), resident, size, origin == (0, 0))
            if key not in memo:
                try:
                    memo[key] = run_search(sub, size, tgt, fixed_homes=homes, resident=resident,
                                           rings=origin == (0, 0))
                except MicaError as exc:
                    memo[key] = exc
            return memo[key]
        def transposition(a):
            key = ("relayout", fixed[a], swapped[a], size)
            if key not in memo:
                memo[key] = relayout_cycles(op, fixed[a], swapped[a], size, tgt)
            return memo[key]
        kept = searched(fixed)
        best, best_cycles = kept, (kept[1].best.cycles if not isinstance(kept, MicaError) else float("inf"))
        if relayout and swapped:
            # The other choices: some arrays taken in their transposed layout, changed on the mesh first
            # (every subset of up to RELAYOUT_SUBSETS arrays, else all of them at once).
            names = sorted(swapped)
            subsets = ([c for r in range(1, len(names) + 1) for c in combinations(names, r)]
                       if len(names) <= RELAYOUT_SUBSETS else [tuple(names)])
            for chosen in subsets:
                alt = searched({**fixed, **{a: swapped[a] for a in chosen}})
                if isinstance(alt, MicaError):
                    continue
                moved = sum(transposition(a) for a in chosen if a in written)
                if alt[1].best.cycles + moved < best_cycles:
                    why = (f"takes {', '.join(chosen)} with the mesh axes swapped ({moved:,.0f} modelled cycles "
                           f"to transpose the blocks on the mesh first, {alt[1].best.cycles:,.0f} to run)"
                           if moved else f"takes {', '.join(chosen)} with the mesh axes swapped (loaded so)")
                    best = (alt[0].copy(reasons=alt[0].reasons + (why,)), alt[1])
                    best_cycles = alt[1].best.cycles + moved
        if isinstance(best, MicaError):
            raise best
        phases[k], reports[k] = best[0].copy(origin=origin), best[1]
    name = HEAVIEST_FIRST if heaviest_first else "operators"
    return Schedule(mesh, (), None, (), (), name=name, phases=tuple(phases)), reports[heaviest]


def scaled_place(origin, size, mesh_from, mesh_to) -> tuple[tuple[int, int], tuple[int, int]]:
    """The rectangle ``origin``/``size`` of ``mesh_from`` scaled to ``mesh_to`` (its edges scaled and rounded
    down, so rectangles disjoint before stay disjoint), at least one core wide."""
    lo = [o * t // f for o, t, f in zip(origin, mesh_to, mesh_from)]
    hi = [max(a + 1, (o + n) * t // f) for a, o, n, t, f in zip(lo, origin, size, mesh_to, mesh_from)]
    return tuple(lo), tuple(b - a for a, b in zip(lo, hi))


def _explain_sram(exc: SramError, op: Program, mesh, tgt: Target) -> None:
    """Adds to an SRAM error whether the program would fit on the target's full grid."""
    fits_full = False
    if mesh != tgt.grid:
        try:
            build(op, derive_schedule(op, tgt.grid), tgt)
            fits_full = True
        except SramError:
            pass
        except MicaError:
            return                   # the default plan does not apply (several operators): no claim
    where = f"the full {tgt.grid[0]}x{tgt.grid[1]} grid"
    exc.args = (f"{exc.args[0]}; " + (f"it fits on {where}" if fits_full
                                      else f"it does not fit even on {where}"),)
