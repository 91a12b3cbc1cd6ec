"""The operator-level search: a program of several operators (top-level loop nests, or a legal fission of
one) mapped one after another in program order or heaviest first, runs of independent operators side by
side on slabs of the mesh, and programs cut into pieces streamed from slab to slab; every way is compared
with the whole program on one core and the cheapest wins.

Each operator is searched by :func:`mica.tiling.search.search`; every candidate plan, single- or
multi-operator, is built into MeshIR through the pipeline's :class:`~mica.tiling.search.Lowering`, checked
by :func:`mica.meshir.verify.verify` and costed by :func:`mica.tiling.cost.estimate` before it can win."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, fields
from itertools import chain, combinations
from math import prod

from ..affine.isl_names import count_points
from ..affine.pieces import cut_candidates, cut_program
from ..affine.program import Program
from ..affine.repeat import repeat_candidates, repeated_program
from ..errors import MicaError, ScheduleError, SramError
from ..meshir.on_mesh import on_mesh_caps
from ..meshir.verify import verify
from ..targets import Target
from .cost import estimate, one_core_cycles
from .forked import MIN_FORKED_OPERATORS, run_tasks
from .homes import relaid_home
from .mapping import derive_schedule
from .placement import packed_slabs, piece_phase, scaled_place, slab_places, slabs
from .schedule import Home, Schedule, transposed
from .search import Lowering, SearchReport, rejection, search
from .split import (fixed_homes_after, loop_carried, mapped_program, operator_program, phase_operators,
                    split_operators)


def search_program(op: Program, mesh, tgt: Target, lowering: Lowering, side_by_side: bool = True, *, progress=None,
                   memo: dict | None = None, incumbent: float = float("inf")) -> tuple[Schedule, SearchReport | None]:
    """The searched plan of ``op``: one operator searched directly; several (or one nest that only a
    fission, or a phase loop around its body's nests, lets spread over the mesh) through
    :func:`search_operators`. ``memo``: operator searches kept across calls for the same mesh, target and
    lowering (rewrites of one program share most operators); ``incumbent``: see :func:`search_operators`."""
    if len(split_operators(op)) > 1:
        return search_operators(op, mesh, tgt, lowering, side_by_side=side_by_side, progress=progress, memo=memo,
                                incumbent=incumbent)
    splits = operator_splits(op)
    looped = side_by_side and bool(repeat_candidates(op))
    try:
        sched, report = search(op, mesh, tgt, lowering, progress=progress)
    except MicaError:
        if not splits and not looped:
            raise
        try:
            return search_operators(op, mesh, tgt, lowering, splits, side_by_side=side_by_side, progress=progress,
                                    memo=memo, incumbent=incumbent)
        except MicaError:
            pass
        raise
    if not splits and not looped:
        return sched, report
    spread = sched.space or sched.step is not None
    best = report.best if report is not None else None
    owned = report is not None and any(c.cause == "ownership" for c in report.candidates)
    if spread and (best is None or best.cost is None or best.cost.cores > max(mesh) or min(mesh) == 1
                   or not owned):
        return sched, report
    # Nothing spreads, or only along one line of the mesh while plans over more cores would write elements
    # another core owns (gesummv's two reductions in one nest): the nest distributed into operators may
    # spread further; the cheaper plan wins.
    try:
        phased, phased_report = search_operators(op, mesh, tgt, lowering, splits, side_by_side=side_by_side,
                                                 progress=progress, memo=memo, incumbent=incumbent)
    except MicaError:
        return sched, report
    if not phased.phases:
        return sched, report
    if spread and _checked_cycles(op, phased, tgt, lowering) >= best.cycles:
        return sched, report
    return phased, phased_report


def retarget_schedule(op: Program, sched: Schedule, mesh) -> Schedule:
    """``sched``'s decisions re-instantiated for ``mesh`` (operator by operator for a phased schedule)."""
    if not sched.phases:
        return derive_schedule(op, mesh, like=sched)
    prog = mapped_program(op, sched)
    if sched.grid:
        # Mapped on a square of the mesh: on a square of the new mesh as large (as large as it has).
        side = min(mesh)
        grid = (min(sched.grid[0], side), min(sched.grid[1], side))
        mapped, _ = map_operators(prog, phase_operators(prog, sched), grid, None, None, like=sched)
        return on_grid(sched.copy(phases=mapped.phases), mesh, grid)
    mapped, _ = map_operators(prog, phase_operators(prog, sched), mesh, None, None, like=sched)
    return sched.copy(mesh=mesh, phases=mapped.phases)


def _axes(home: Home) -> tuple:
    """The mesh axes ``home`` lays its dimensions along and pins, in order: what a layout keeps when its
    operator is re-derived for another mesh (the tiles scale)."""
    return tuple(ax for ax, _ in home.dims), tuple(ax for ax, _ in home.pin)


def on_grid(phased: Schedule, mesh, grid) -> Schedule:
    """``phased``, whose operators were mapped on the ``grid`` of cores from (0, 0), as a plan of ``mesh``:
    the same decisions, the grid recorded (:attr:`Schedule.grid`, none when it is the whole mesh)."""
    grid = tuple(grid)
    return phased.copy(mesh=tuple(mesh), phases=tuple(p.copy(mesh=tuple(mesh)) for p in phased.phases),
                       grid=() if grid == tuple(mesh) else grid)


def search_operators(op: Program, mesh, tgt: Target, lowering: Lowering, splits: list[tuple[str, list]] | None = None, *,
                     side_by_side: bool = True, progress=None, memo: dict | None = None,
                     incumbent: float = float("inf")) -> tuple[Schedule, SearchReport | None]:
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

    With ``side_by_side``, every sequential loop around several nests is also tried as a phase loop
    (:func:`_phase_loops`), and every run of operators that do not depend on each other is also tried on
    disjoint slabs of the mesh at the same time (:func:`slabs`), the others on the whole mesh; and a
    program that can be cut into independent pieces is tried streamed, each operator on a slab of its own
    working on one piece after another (:func:`stream_schedules`). Every way is recorded as a :class:`Way`.

    ``incumbent``: the modelled cycles of a plan the caller already has for another form of the same
    computation (:func:`mica.tiling.expanded.search_expanded`: the program before its temporaries were
    expanded). The ladder of smaller grids that is walked while every way is slower than one core stops when
    the incumbent is not: it only serves to beat the one-core plan, and the incumbent already does (deriche on
    8x8: its expanded form's ladder, 4x4 then 2x2, took about 15 s of a 34 s compile for plans the original's
    beat; 16.5 s with the incumbent, the same plan).
    """
    if splits is None:
        splits = operator_splits(op)
    one = derive_schedule(op, mesh, assignment=[], family="one-core")
    ways = _Ways(op, tgt, lowering, progress)
    # One search per (operator, fixed layouts, resident arrays), shared with the caller's other programs.
    memo = {} if memo is None else memo
    # When no way works on the whole mesh, smaller grids from core (0, 0) are tried until one does (a plan
    # that works on a smaller mesh stays a candidate on a larger one): on a rectangular mesh first the
    # largest square (an operator's grid of blocks is not square, so a later one cannot transpose its
    # result), then half of it. When the ways that work are all slower than the whole program on one core,
    # the squares keep halving until one is not: each operator's greedy choice on a large mesh can leave a
    # later one a pipeline through every core (deriche's vertical pass over rows laid out one per core), which
    # fewer, larger blocks avoid (the one-core plan is the last rung of that ladder).
    alone, shallow = one_core_cycles(op, tgt), len(fallback_grids(mesh))
    for k, grid in enumerate(fallback_grids(mesh, deep=True)):
        if grid != mesh and not _another_grid(ways, alone, deeper=k >= shallow, incumbent=incumbent):
            break
        _each_split(ways, splits, mesh, grid, memo, side_by_side)
        if side_by_side:
            _phase_loops(ways, mesh, grid, memo)
        if grid == mesh and mesh[0] != mesh[1] and not _settled(ways):
            # Each operator's choices depend on the mesh's orientation (which axis is longer), and a later
            # operator may find no plan with the layouts the earlier ones chose: the same greedy mapping on
            # the transposed mesh, its axes swapped back, is another candidate.
            for split_name, ops in splits:
                _one_after_another(ways, ops, split_name, mesh, grid, memo, flipped=True)
    if side_by_side:
        for how, phased in stream_schedules(op, mesh, tgt, lowering, progress=progress):
            if isinstance(phased, MicaError):
                ways.reject(how, phased)
            else:
                ways.consider(how, lambda phased=phased: (phased, None), how)
    return _cheapest(ways, one, mesh)


def _each_split(ways: "_Ways", splits: list[tuple[str, list]], mesh, grid, memo: dict, side_by_side: bool) -> None:
    """Maps every split of ``splits`` on ``grid`` one after another (:func:`_one_after_another`) and, on the
    whole mesh with ``side_by_side``, with runs of its operators side by side (:func:`_side_by_side`); adds the
    ways tried to ``ways`` in split order. The splits are independent, so when the later ones map enough
    operators they run in a forked worker (:mod:`mica.tiling.forked`) while this process maps the first: the
    ways and the plan chosen are the same, in about half the time on two cores."""
    def mapped(split_name, ops):
        def task():
            own = _Ways(ways.op, ways.tgt, ways.lowering, ways.progress)
            _one_after_another(own, ops, split_name, mesh, grid, memo)
            if grid == mesh and side_by_side:
                _side_by_side(own, ops, split_name, mesh, memo)
            return own.tried
        return task
    later = sum(len(ops) for _, ops in splits[1:])
    for tried in run_tasks([mapped(name, ops) for name, ops in splits], cache=memo,
                           fork=later >= MIN_FORKED_OPERATORS):
        ways.tried.extend(tried)


#: The largest share of a core's SRAM the buffers of a gather-and-broadcast layout change may take
#: (:mod:`mica.lower.regather`: two whole-array buffers, or four line shares for a larger array).
REGATHER_FRACTION = 0.5


def _gatherable(arr, tgt: Target | None, mesh, whole: bool = True) -> bool:
    """Whether array ``arr`` is small enough for :func:`mica.lower.regather.regather` to change its layout on
    ``mesh``: every core holds it twice, or (not ``whole``) four shares of it by one line of the mesh's
    shorter side, as layouts that spread it over both axes give (an estimate; the change itself checks the
    layouts it is given)."""
    if tgt is None:
        return False
    nbytes = arr.elem_bytes * prod(arr.shape)
    if not whole:
        nbytes = min(nbytes, 2 * nbytes / max(1, min(mesh)))
    return 2 * nbytes <= REGATHER_FRACTION * tgt.sram_bytes


#: How an operator's reasons say it took a layout a later operator asked for (:func:`map_operators`).
AS_LATER_NEEDS = "as a later operator needs it (too large to change on the mesh)"

#: How an operator's reasons say it was searched with its layouts free (:func:`map_operators`).
FREE_LAYOUT = "in the layout it works best with"

#: The share of a way's modelled cycles its free layout changes may take for the way to count as settled
#: (:func:`_settled`): the smaller grids and the transposed mesh are tried to avoid costly layout changes, and
#: each costs a whole operator-level search.
SETTLED_SHARE = 0.25


def _free_layout_reason(changed: list[str], moved: float, run: float) -> str:
    """The reason an operator gives for taking ``changed`` in the layout it works best with (``moved`` modelled
    cycles of layout changes, ``run`` to run); :func:`_free_layout_cycles` reads ``moved`` back."""
    return (f"takes {', '.join(changed)} {FREE_LAYOUT} ({moved:,.0f} modelled cycles to change the layout the "
            f"earlier operators left, {run:,.0f} to run): no plan works with the earlier layout")


_FREE_MOVED = re.compile(re.escape(FREE_LAYOUT) + r" \(([0-9,]+) modelled cycles to change")


def _free_layout_cycles(sched: Schedule) -> float:
    """Modelled cycles of the layout changes the operators of ``sched`` made by taking their layouts freely
    (as their reasons, :func:`_free_layout_reason`, state them); 0 when none did."""
    return sum(float(m.group(1).replace(",", "")) for p in sched.phases for r in p.reasons
               for m in [_FREE_MOVED.search(r)] if m)


def _relaid_freely(way: "Way") -> bool:
    """Whether some operator of ``way`` took its layouts freely, changing what earlier operators left (gathered
    and broadcast: costly), for more than :data:`SETTLED_SHARE` of the way's cycles: the smaller grids and the
    transposed mesh are then still tried."""
    return _free_layout_cycles(way.schedule) > SETTLED_SHARE * way.cycles


def _settled(ways: "_Ways") -> bool:
    """Whether some way tried so far works without changing layouts freely for more than :data:`SETTLED_SHARE`
    of its cycles (:func:`_relaid_freely`): the smaller grids and the transposed mesh are then not tried."""
    return any(w.schedule is not None and not _relaid_freely(w) for w in ways.tried)


def _another_grid(ways: "_Ways", alone: float, deeper: bool, incumbent: float = float("inf")) -> bool:
    """Whether :func:`search_operators` maps the program onto the next of its fallback grids: while no way has
    worked (:func:`_settled`), the first halving only; while every way that works is slower than the whole
    program on one core (``alone`` cycles) and so is the caller's ``incumbent``, every rung (``deeper``: one
    past the first halving)."""
    if not _settled(ways):
        return not deeper
    return min(min(w.cycles for w in ways.tried if w.schedule is not None), incumbent) > alone


def fallback_grids(mesh, deep: bool = False) -> list[tuple[int, int]]:
    """The grids :func:`search_operators` maps a program onto, in order, while no way has worked (or only
    ways that changed layouts freely, :func:`_relaid_freely`): the mesh,
    its largest square, then that square halved (rounding up; one halving only: each grid costs a whole
    operator-level search). With ``deep``, the square keeps halving down to 2x2 (the ladder tried while every
    way that works is slower than one core)."""
    side = min(mesh)
    grids = [tuple(mesh)] + ([(side, side)] if mesh[0] != mesh[1] else [])
    while side > 2:
        side = -(-side // 2)
        grids.append((side, side))
        if not deep:
            break
    return grids


@dataclass(frozen=True)
class Way:
    """One way of mapping a program's operators that :func:`search_operators` tried: ``how`` it was mapped,
    its modelled ``cycles``, schedule and the report of its heaviest operator's search, or (``schedule`` None)
    the first line of the error that rejected it and that error's cause (:func:`mica.tiling.search.rejection`:
    ``sram``, ``colours``, ... or the error's class in lower case)."""

    how: str
    cycles: float = float("inf")
    schedule: Schedule | None = None
    report: SearchReport | None = None
    rejected: str = ""
    cause: str = ""

    def line(self) -> str:
        """The way as one line of the account :func:`search_operators` gives."""
        if self.schedule is None:
            return f"  {'rejected':>21}  {self.how}: {self.rejected}"
        return f"  {self.cycles:>14,.0f} cycles  {self.how}"


class _Ways:
    """The ways tried so far (an explicitly mutable accumulator of frozen :class:`Way` records)."""

    def __init__(self, op: Program, tgt: Target, lowering: Lowering, progress=None):
        self.op, self.tgt, self.lowering, self.progress = op, tgt, lowering, progress
        self.tried: list[Way] = []

    def reject(self, how: str, exc: MicaError) -> None:
        self.tried.append(Way(how, rejected=str(exc).splitlines()[0][:200], cause=rejection(exc)[0]))

    def consider(self, how: str, make, reason: str) -> tuple[Schedule, SearchReport | None] | None:
        """Builds, verifies and costs the plan ``make()`` returns (with its search report), records it with
        ``reason`` as its account, or why it failed; returns both (None when it failed)."""
        try:
            phased, report = make()
            phased = phased.copy(reasons=(reason,))
            cost = _checked_cycles(self.op, phased, self.tgt, self.lowering)
        except MicaError as exc:
            self.reject(how, exc)
            return None
        self.tried.append(Way(how, cost, phased, report))
        return phased, report


def _phase_loops(ways: _Ways, mesh, grid, memo: dict) -> None:
    """Tries every sequential loop around several nests (:func:`mica.affine.repeat.repeat_candidates`) as a
    phase loop: the program with that loop taken off, cut into operators like any program
    (:func:`operator_splits`), mapped one after another on ``grid`` with the body's operators run ``count``
    times in a loop around them (:attr:`Schedule.repeat`). A split that mixes the body's statements with
    others in one operator is not tried."""
    for rep in repeat_candidates(ways.op):
        body = repeated_program(ways.op, rep)
        inside = set(rep.statements)
        for split_name, ops in operator_splits(body):
            ks = [k for k, g in enumerate(ops) if any(s.name in inside for s in g)]
            first, end = ks[0], ks[-1] + 1
            if any(any(s.name not in inside for s in g) for g in ops[first:end]):
                continue
            name = f"{split_name}, loop {rep.loop} ({rep.count} iterations) around operators {first}-{end - 1}"
            _one_after_another(ways, ops, name, mesh, grid, memo, prog=body,
                               repeat=(rep.nest, rep.loop, rep.count, first, end))


def phase_loop_plan(op: Program, mesh, tgt: Target, lowering: Lowering) -> Schedule:
    """The cheapest plan of ``op`` on ``mesh`` that runs one of its sequential loops around the operators of its
    body (:func:`_phase_loops`; the search weighs it against every other way, this takes it alone: a
    hand-specified plan to compare with, or to run where the search prefers another). Raises the first way's
    error when none works, :class:`ScheduleError` when ``op`` has no such loop."""
    ways = _Ways(op, tgt, lowering)
    _phase_loops(ways, tuple(mesh), tuple(mesh), {})
    done = [w for w in ways.tried if w.schedule is not None]
    if not done:
        raise ScheduleError(f"{op.name} has no phase-loop plan on {mesh[0]}x{mesh[1]}: " + (
            "; ".join(f"{w.how}: {w.rejected}" for w in ways.tried) or "no sequential loop runs around several "
            "nests whose bounds and statements do not read it"))
    best = min(done, key=lambda w: w.cycles)
    return best.schedule


def _one_after_another(ways: _Ways, ops: list, split_name: str, mesh, grid, memo: dict, flipped: bool = False,
                       prog: Program | None = None, repeat: tuple = ()) -> None:
    """Tries the operators ``ops`` one after another on ``grid`` (the mesh, or a square of it from (0, 0)), in
    program order and heaviest first; with ``flipped``, mapped on the transposed ``grid`` and the plan's
    axes swapped back (:func:`mica.tiling.schedule.transposed`). ``prog`` (default: the program searched) is
    the program ``ops`` cut, ``repeat`` the plan's phase loop (:attr:`Schedule.repeat`) when ``prog`` is the
    program with that loop taken off."""
    tgt, lowering = ways.tgt, ways.lowering
    op = ways.op if prog is None else prog
    on = "" if grid == mesh else f" on the {grid[0]}x{grid[1]} square of the mesh"
    if flipped:
        on += f", mapped on the {grid[1]}x{grid[0]} mesh and its axes swapped"
    for heaviest in (False, True):
        how = (f"{len(ops)} operators ({split_name}), " + ("heaviest first" if heaviest else "in program order")
               + on)

        def whole(heaviest=heaviest, capped=False):
            phased, report = map_operators(op, ops, (grid[1], grid[0]) if flipped else grid, tgt, lowering,
                                           heaviest_first=heaviest, progress=ways.progress,
                                           memo=memo, capped=capped, repeat=repeat)
            if flipped:
                phased = transposed(phased)
            if grid != mesh:
                phased = on_grid(phased, mesh, grid)
            return phased.copy(repeat=repeat), report
        if ways.consider(how, whole, f"{how}, one after another") is None and op.on_mesh and grid == mesh:
            # Each operator laid out its on-mesh arrays as it liked, and together they do not fit (or the
            # layouts they took leave a later operator without a plan): with shares of SRAM for them, they
            # may spread further (on the whole mesh: a square of it holds less).
            how += ", the arrays kept on the mesh within their shares of SRAM"
            ways.consider(how, lambda heaviest=heaviest: whole(heaviest, capped=True), f"{how}, one after another")
        if len(ops) == 1:
            break                    # one operator: the order does not matter


def _side_by_side(ways: _Ways, ops: list, split_name: str, mesh, memo: dict) -> None:
    """Tries every run of independent operators of ``ops`` on slabs of the mesh (:func:`slabs`), and the
    same slabs trimmed to their operators' cores and packed (:func:`packed_slabs`)."""
    op, tgt, lowering = ways.op, ways.tgt, ways.lowering
    for group, places in slabs(op, ops, mesh):
        how = (f"{len(ops)} operators ({split_name}), operators {group[0]}-{group[-1]} side by side on "
               + ", ".join(f"[{o[0]}:{o[0] + w}, {o[1]}:{o[1] + h}]" for o, (w, h) in
                           (places[k] for k in group)))
        done = ways.consider(how, lambda places=places: map_operators(
            op, ops, mesh, tgt, lowering, memo=memo, places=places, progress=ways.progress),
            f"{how}, the others one after another on the whole mesh")
        packed = done and packed_slabs(op, ops, done[0], group, 0 if mesh[0] >= mesh[1] else 1)
        if packed:
            how = (f"{len(ops)} operators ({split_name}), operators {group[0]}-{group[-1]} side by side on "
                   + ", ".join(packed.phases[k].cores().split(" ", 1)[1] for k in group)
                   + " (slabs trimmed to their operators' cores)")
            ways.consider(how, lambda packed=packed, report=done[1]: (packed, report),
                          f"{how}, the others one after another on the whole mesh")


def _cheapest(ways: _Ways, one: Schedule, mesh) -> tuple[Schedule, SearchReport | None]:
    """The cheapest way tried, or the whole program on one core (``one``) when that is cheaper or nothing
    else works, with the account of every way in its reasons. Raises the one-core plan's own error, every
    way tried as its detail, when nothing works at all."""
    op, tgt, lowering = ways.op, ways.tgt, ways.lowering
    one_line = "one core"
    try:
        one_cost = _checked_cycles(op, one, tgt, lowering)
    except MicaError as exc:
        one_cost = float("inf")
        one_line = f"one core: {str(exc).splitlines()[0][:200]}"
    lines = [w.line() for w in ways.tried]
    lines.append(f"  {one_cost:>14,.0f} cycles  one core" if one_cost < float("inf")
                 else f"  {'rejected':>21}  {one_line}")
    best = min((w for w in ways.tried if w.schedule is not None), key=lambda w: w.cycles, default=None)
    if best is not None and best.cycles < one_cost:
        return best.schedule.copy(reasons=best.schedule.reasons + (
            f"chosen: {best.cycles:,.0f} modelled cycles, the cheapest of:",) + tuple(lines)), best.report
    if one_cost == float("inf"):
        try:
            lowering.program(op, one, tgt)
        except MicaError as exc:     # the plain reason (e.g. SRAM), with every way tried as detail
            exc.detail = "\n".join(["ways tried:"] + lines + ([exc.detail] if exc.detail else []))
            exc.args = (f"{exc.args[0]}; mapped operator by operator over the {mesh[0]}x{mesh[1]} mesh it "
                        f"does not work either: {_rejections(ways.tried)} (the detail lists every way)",)
            raise
    return one.copy(reasons=one.reasons + (
        f"{op.name} has {len(split_operators(op))} top-level loop nest(s); chosen: one core "
        f"({one_cost:,.0f} modelled cycles), the cheapest of:",) + tuple(lines)), None


def _rejections(tried: list[Way]) -> str:
    """Why the ways ``tried`` (all rejected) failed, in a sentence: how many, by cause (most frequent first),
    and the first way's own reason (the operators in program order on the whole mesh, the way a reader
    expects first)."""
    if not tried:
        return "no way was tried"
    counts = Counter(w.cause or "unknown" for w in tried)
    tally = ", ".join(f"{n} for {cause}" for cause, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    first = tried[0]
    return (f"{len(tried)} way(s) rejected ({tally}); the first, {first.how}: "
            f"{first.rejected[:160]}")


STREAM_PIECES = (2, 4)      # piece counts the search tries when it streams a program's operators


def stream_schedules(op: Program, mesh, tgt: Target, lowering: Lowering, *, progress=None):
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
            cut = f"cut into {count} pieces along dimension {dim} of {array}, streamed"
            try:
                pieces = cut_program(op, array, dim, count)
            except MicaError as exc:       # e.g. the cut would split an array kept on the mesh
                yield cut, exc
                break
            ops = split_operators(pieces.program)
            per = len(ops) // count
            for axis in ((0, 1) if mesh[0] >= mesh[1] else (1, 0)):
                how = cut
                try:
                    if axis in firsts:
                        # Smaller pieces take the decisions and slabs of the first count's (not searched
                        # again: the piece statements are named alike, so ``like`` matches them).
                        first = map_operators(pieces.program, ops[:per], mesh, None, None, like=firsts[axis])[0]
                    else:
                        first = _stream_first_piece(pieces.program, ops[:per], mesh, tgt, lowering, axis, progress)
                        if first is None:
                            continue
                        firsts[axis] = first
                    how += " from slab to slab: " + ", ".join(p.cores().split(" ", 1)[1] for p in first.phases)
                    phases = tuple(piece_phase(pieces, p, k) for k in range(count) for p in first.phases)
                    yield how, first.copy(phases=phases, pieces=(array, dim, count))
                except MicaError as exc:
                    yield how, exc


def _stream_first_piece(prog: Program, ops: list, mesh, tgt: Target, lowering: Lowering, axis: int,
                        progress=None) -> Schedule | None:
    """Piece 0's operators searched on slabs along ``axis`` (:func:`slab_places`), then each slab trimmed to
    the lines its operator works on and the slabs packed from the mesh's edge (a block crosses fewer cores
    to the next slab; the decisions are kept, not searched again); None when there are more operators
    than lines."""
    places = slab_places(ops, mesh, axis)
    if places is None:
        return None
    first, _ = map_operators(prog, ops, mesh, tgt, lowering, places=places, progress=progress)
    return packed_slabs(prog, ops, first, range(len(ops)), axis) or first


def operator_splits(op: Program) -> list[tuple[str, list]]:
    """The ways :func:`search_operators` cuts ``op``: its top-level loop nests, and the finest legal
    fission of them when that differs."""
    nests = split_operators(op)
    fine = split_operators(op, fine=True)
    splits = [("loop nests", nests)] if len(nests) > 1 else []
    if [tuple(s.name for s in g) for g in fine] != [tuple(s.name for s in g) for g in nests]:
        splits.append(("loop nests distributed", fine))
    return splits


HEAVIEST_FIRST = "heaviest-first"      # an operator order of mica.tiling.schedule.OPERATOR_ORDERS


RELAYOUT_SUBSETS = 3      # arrays whose transposed layouts are tried in every combination


HINT_ROUNDS = 3      # times map_operators starts again with layouts a later operator asked of an earlier one


FREED_SUBSETS = 6    # large produced arrays whose layouts are freed one or two at a time (map_operators)


class _Hint(Exception):
    """Internal: operator ``k`` works only with ``homes`` for arrays an earlier operator laid out otherwise
    and whose layout cannot be changed on the mesh (too large to gather)."""

    def __init__(self, homes: dict, error: MicaError):
        super().__init__()
        self.homes, self.error = homes, error


def map_operators(op: Program, ops: list, mesh, tgt: Target | None, lowering: Lowering | None, *, heaviest_first: bool = False,
                  like: Schedule | None = None, memo: dict | None = None,
                  relayout: bool = True, places: list | None = None, progress=None, capped: bool = False,
                  repeat: tuple = ()) -> tuple[Schedule, SearchReport | None]:
    """The phased schedule of ``op`` cut into ``ops``, each operator searched with the layouts already
    chosen fixed (see :func:`search_operators` for the two orders); returns it with the report of the
    heaviest operator's search. With ``relayout``, an operator that touches a 2D array already laid out
    over both mesh axes, or a vector laid out along one, is also searched with that array transposed (turned to
    the other axis: :func:`mica.tiling.homes.relaid_home`);
    it takes that layout when its modelled cycles plus those of changing the layout of the arrays earlier
    operators produced (:func:`mica.lower.relayout.relayout_cycles`) are lower, or when only that layout
    works. With ``like`` (a phased schedule), nothing is searched: every operator keeps the decisions of
    its phase in ``like`` (layout changes included), re-derived for ``mesh`` in ``like``'s order.

    ``places[k] = ((ox, oy), (w, h))`` runs operator ``k`` on the ``w x h`` cores from ``(ox, oy)`` (default:
    the whole mesh); ``like`` places its operators on its rectangles scaled to ``mesh``.

    When an operator works only with a layout of an array an earlier operator produced otherwise, and that
    layout cannot be changed on the mesh (the array is too large to gather: a KV cache), the mapping starts
    again with the layout as a *hint*: the first operator that lays the array out tries it first (up to
    :data:`HINT_ROUNDS` times; the operators' searches are memoised, so a new round searches only what the
    hint changes).

    With ``capped``, an operator that lays out an array kept on the mesh (:attr:`Program.on_mesh`) first looks
    for plans that keep its block within the array's share of SRAM (:func:`mica.meshir.on_mesh.on_mesh_caps`:
    the operators' searches each see only their own arrays, and would otherwise pile every weight matrix onto
    the same cores)."""
    hints: dict = {}
    error = None
    for _ in range(HINT_ROUNDS + 1):
        try:
            return _map_once(op, ops, mesh, tgt, lowering, heaviest_first, like, memo, relayout, places, progress,
                             hints, capped, repeat or (like.repeat if like is not None else ()))
        except _Hint as hint:
            error = hint.error
            if all(hints.get(a) == h for a, h in hint.homes.items()):
                break
            hints = {**hints, **hint.homes}
    raise error


def _map_once(op: Program, ops: list, mesh, tgt, lowering, heaviest_first, like, memo, relayout, places, progress,
              hints: dict, capped: bool, repeat: tuple = ()) -> tuple[Schedule, SearchReport | None]:
    """One pass of :func:`map_operators` with layout ``hints`` (array -> Home); raises :class:`_Hint` when an
    operator asks for layouts the earlier ones could have taken. Inside a phase loop (``repeat``,
    :attr:`Schedule.repeat`) an operator finds every array the loop's operators write produced on the mesh."""
    if like is not None:
        heaviest_first = like.order == HEAVIEST_FIRST
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
    caps = on_mesh_caps({a: op.array(a).elem_bytes * prod(op.array(a).shape) for a in op.on_mesh},
                        tgt.sram_bytes) if tgt is not None and like is None and capped else {}
    if like is not None and like.placed:
        places = [scaled_place(p.origin, p.mesh, like.mesh, mesh) for p in like.phases]
    if tgt is not None and like is None:
        _check_rectangles_hold(op, ops, places or [((0, 0), tuple(mesh))] * n, tgt)
    for k in order:
        origin, size = places[k] if places else ((0, 0), mesh)
        done = [j for j in range(n) if phases[j] is not None and (heaviest_first or j < k)]
        here = [j for j in done if not places or places[j] == places[k]]
        # In program order a produced array is where the last operator left it (re-laid out, perhaps).
        fixed = fixed_homes_after(op, [ops[j] for j in here], [phases[j] for j in here],
                                  arrays=written if heaviest_first else None,
                                  latest=frozenset() if heaviest_first else written)
        # Operators on other rectangles fix only the arrays they produce (inputs are loaded per layout).
        away = [j for j in done if j not in here]
        for a, h in fixed_homes_after(op, [ops[j] for j in away], [phases[j] for j in away], arrays=written).items():
            fixed.setdefault(a, h)
        resident = frozenset(s.write.array for g in ops[:k] for s in g) | loop_carried(ops, repeat, k)
        sub = operator_program(op, ops[k], k)
        # The memo's key for the operator: its sub-program's compared fields but its name (which numbers it in
        # this split): the same statements are one operator of every split and rewrite that keeps them.
        unnamed = tuple(getattr(sub, f.name) for f in fields(sub) if f.compare and f.name != "name")
        touched = {a.array for s in ops[k] for a in s.accesses}
        swapped = {a: h for a, h in ((a, relaid_home(fixed[a])) for a in sorted(touched & set(fixed)))
                   if h is not None}
        if like is not None:
            # The layouts ``like`` changed on the mesh change again: a produced array transposed to the
            # transposed layout; any other change (a block grid gathered onto a line or a point, an input
            # loaded in a second layout) by leaving the array to the operator's decisions, re-derived below.
            for a in sorted(touched & set(fixed)):
                mine = next((m for m in like.phases[k].homes if m.array == a), None)
                if mine is None or _axes(mine) == _axes(fixed[a]):
                    continue
                if a in swapped and a in written and _axes(mine) == _axes(swapped[a]):
                    fixed[a] = swapped[a]
                else:
                    del fixed[a]
            phases[k], reports[k] = derive_schedule(sub, size, like=like.phases[k], fixed_homes=fixed), None
            phases[k] = phases[k].copy(origin=origin)
            continue

        def searched(homes, capped=False):
            # The operator's search sees only the arrays it touches: homes and residence of the others do
            # not change its result, so they are left out of the key. ``capped``: the on-mesh arrays it lays
            # out keep within their share of SRAM (mica.meshir.on_mesh.on_mesh_caps).
            mine = {a: c for a, c in caps.items() if a in touched and a not in homes} if capped else {}
            mine.update({a: c for a, c in _loop_caps(op, ops, repeat, k, tgt, size).items()
                         if a in touched and a not in homes})
            key = (unnamed, frozenset((a, h) for a, h in homes.items() if a in touched),
                   resident & touched, size, origin == (0, 0), frozenset(mine.items()))
            if key not in memo:
                try:
                    memo[key] = search(sub, size, tgt, lowering, fixed_homes=homes, resident=resident,
                                       progress=progress, rings=origin == (0, 0), caps=mine)
                except MicaError as exc:
                    memo[key] = exc
            return memo[key]
        def relaid(a, home):
            """Modelled cycles of changing produced array ``a`` from the layout the earlier operators left to
            ``home`` on the mesh (inf when it cannot be changed there), memoised."""
            key = ("relayout", fixed[a], home, size)
            if key not in memo:
                memo[key] = lowering.relayout_cycles(op, fixed[a], home, size, tgt)
            return memo[key]

        def changes(sched):
            """The produced arrays ``sched`` lays out otherwise than the earlier operators left them, the
            modelled cycles of changing all of them on the mesh, and those that cannot be changed there (to
            the layout ``sched`` wants)."""
            changed = [a for a in sorted(touched & written & set(fixed)) if sched.home(a) != fixed[a]]
            moved, blocked = 0.0, {}
            for a in changed:
                cycles = relaid(a, sched.home(a))
                moved += cycles
                if cycles == float("inf"):
                    blocked[a] = sched.home(a)
            return changed, moved, blocked

        def cheaper_with_changes(found, moved):
            """``found`` (a plan searched with layouts free and its report, whose layout changes take
            ``moved`` cycles), or a costlier-to-run plan of its report whose runtime plus layout changes is
            lower (gathering a blocked matrix onto the one core that runs fastest may take longer than the
            run saves), verified, with the report's winner moved to it."""
            report = found[1]
            total, pick, its = report.best.cycles + moved, None, moved
            for i in sorted((i for i, c in enumerate(report.candidates) if c.cycles is not None),
                            key=lambda i: report.candidates[i].cycles):
                c = report.candidates[i]
                if c.cycles >= total:
                    break
                if i == report.winner or c.schedule is None:
                    continue
                _, more, _ = changes(c.schedule)
                if c.cycles + more >= total:
                    continue
                try:
                    verify(lowering.operator(sub, c.schedule, tgt, resident=resident), tgt)
                except MicaError:
                    continue
                total, pick, its = c.cycles + more, i, more
            if pick is None:
                return found
            chosen = report.candidates[pick]
            why = (f"runs in {chosen.cycles:,.0f} modelled cycles, not the fastest plan's {report.best.cycles:,.0f}: "
                   f"the layout changes it needs take {its:,.0f} cycles, the fastest plan's {moved:,.0f}")
            return (chosen.schedule.copy(reasons=chosen.schedule.reasons + (why,)),
                    SearchReport(report.candidates, pick, report.seconds))

        def decide(capped):
            """The operator's plan (or why none works), its on-mesh arrays within their shares when
            ``capped``."""
            def searched_(homes):
                return searched(homes, capped)
            hinted = {a: h for a, h in hints.items() if a in touched and a not in fixed and not places}
            kept = searched_({**fixed, **hinted}) if hinted else searched_(fixed)
            if hinted and isinstance(kept, MicaError):
                kept = searched_(fixed)
            elif hinted:
                kept = (kept[0].copy(reasons=kept[0].reasons + (
                    f"lays out {', '.join(sorted(hinted))} {AS_LATER_NEEDS}",)), kept[1])
            best, best_cycles = kept, (kept[1].best.cycles if not isinstance(kept, MicaError) else float("inf"))
            if relayout and swapped:
                # The other choices: some arrays taken in their transposed layout, changed on the mesh first
                # (every subset of up to RELAYOUT_SUBSETS arrays, else all of them at once).
                names = sorted(swapped)
                subsets = ([c for r in range(1, len(names) + 1) for c in combinations(names, r)]
                           if len(names) <= RELAYOUT_SUBSETS else [tuple(names)])
                for chosen in subsets:
                    moved = sum(relaid(a, swapped[a]) for a in chosen if a in written)
                    if moved >= best_cycles:
                        continue        # changing the layouts alone takes longer than the best plan runs
                    alt = searched_({**fixed, **{a: swapped[a] for a in chosen}})
                    if isinstance(alt, MicaError):
                        continue
                    if alt[1].best.cycles + moved < best_cycles:
                        how = ("with the mesh axes swapped" if all(len(swapped[a].dims) == 2 for a in chosen)
                               else "turned to the other mesh axis" if all(len(swapped[a].dims) == 1 for a in chosen)
                               else "with the mesh axes swapped (vectors: turned to the other mesh axis)")
                        why = (f"takes {', '.join(chosen)} {how} ({moved:,.0f} modelled cycles "
                               f"to transpose the blocks on the mesh first, {alt[1].best.cycles:,.0f} to run)"
                               if moved else f"takes {', '.join(chosen)} {how} (loaded so)")
                        best = (alt[0].copy(reasons=alt[0].reasons + (why,)), alt[1])
                        best_cycles = alt[1].best.cycles + moved
            if relayout and isinstance(best, MicaError) and not places:
                # No plan takes the layouts the earlier operators left: search the operator with the arrays it
                # touches free, and change the layout of each produced array it lays out otherwise on the mesh
                # (transposed, or gathered and broadcast: mica.lower.regather). First keep the layouts of the
                # produced arrays too large for every core to hold (a KV cache another operator updates), then
                # of those too large to gather line by line, then free everything; the first whose layout
                # changes can all be made on the mesh wins. An array whose layout cannot be changed is first
                # hinted to the operator that lays it out (see map_operators).
                levels = [{a for a in touched if a not in written or _gatherable(op.array(a), tgt, size, whole)}
                          for whole in (True, False)] + [set(touched)]
                # After the small arrays, each large produced array alone or with one other (with the small ones):
                # an operator that needs some arrays in other layouts (ADI's row sweep, reading v and writing u by
                # rows) keeps the others' (p and q, which both sweeps lay out alike).
                large = sorted(a for a in touched & written & set(fixed) if a not in levels[0])
                singles = [levels[0] | set(c) for r in (1, 2) for c in combinations(large, r)] \
                    if len(large) <= FREED_SUBSETS else []
                stuck: dict = {}        # arrays whose layout cannot be changed on the mesh (the first level's)
                # The singles are searched only when the first level finds nothing (the first that works wins).
                tries = chain([lv for i, lv in enumerate(levels) if lv not in levels[:i]][:1],
                              _lazy(lambda: _cheapest_single(singles, searched_, changes, fixed)), levels[1:])
                for small in tries:
                    free = searched_({a: h for a, h in fixed.items() if a not in small})
                    if isinstance(free, MicaError):
                        continue
                    changed, moved, blocked = changes(free[0])
                    if blocked:
                        if not capped and any(hints.get(a) != h for a, h in blocked.items()):
                            # First ask the earlier operators to lay the arrays out so (a hint: the mapping
                            # starts again); only when that was asked already, change other arrays instead.
                            raise _Hint(blocked, best)
                        stuck = stuck or blocked
                        continue
                    free = cheaper_with_changes(free, moved)
                    changed, moved, _ = changes(free[0])
                    why = (_free_layout_reason(changed, moved, free[1].best.cycles) if changed else
                           "searched with its arrays' layouts free")
                    best = (free[0].copy(reasons=free[0].reasons + (why,)), free[1])
                    break
                if stuck and isinstance(best, MicaError) and not capped:
                    raise _Hint(stuck, best)
            return best

        # First with the on-mesh arrays the operator lays out within their shares of SRAM, then without.
        capping = any(a in touched and a not in fixed for a in caps)
        for capped in ((True, False) if capping else (False,)):
            best = decide(capped)
            if not isinstance(best, MicaError):
                break
        if isinstance(best, MicaError):
            raise best
        phases[k], reports[k] = best[0].copy(origin=origin), best[1]
    order = HEAVIEST_FIRST if heaviest_first else "program"
    return Schedule(mesh, (), None, (), (), family="operators", order=order, phases=tuple(phases)), reports[heaviest]


def _check_rectangles_hold(op: Program, ops: list, places: list, tgt: Target) -> None:
    """Raises :class:`SramError` when some operator of ``ops`` touches more bytes than the SRAM of all the cores
    of its rectangle (``places[k] = (origin, (w, h))``) together: every array an operator touches lives on
    its rectangle (an array produced on another one rides there), each element on at least one core, so no
    plan of it can fit, and none is searched (a slab that streaming or side-by-side mapping gives a light
    operator may be a few lines of the mesh). On a target with device DRAM the operator's read-only inputs
    are left out (a plan may stream them from DRAM). Changes nothing."""
    for k, g in enumerate(ops):
        held = {s.write.array for s in g} if tgt.has_dram else {a.array for s in g for a in s.accesses}
        need = {a: op.array(a).elem_bytes * prod(op.array(a).shape) for a in sorted(held)}
        total, (w, h) = sum(need.values()), places[k][1]
        if total > w * h * tgt.sram_bytes:
            raise SramError(
                f"operator {k} of {op.name} touches {total:,} bytes of arrays "
                f"({', '.join(f'{a} {b:,} B' for a, b in need.items())}), more than the {w}x{h} cores of its "
                f"rectangle hold ({w * h * tgt.sram_bytes:,} B of SRAM in all)",
                needed=-(-total // (w * h)))


def _loop_caps(op: Program, ops: list, repeat: tuple, k: int, tgt: Target | None, size) -> dict[str, int]:
    """The most bytes per core operator ``k`` may keep of each array a phase loop around it carries from one
    iteration to the next (:func:`mica.tiling.split.loop_carried`) that is too large for a layout change to
    gather (:func:`_gatherable`): three quarters of it, so that its layout spreads it (ghost zones included).
    Such an array laid out whole on every core would have to be gathered whole again at the end of every
    iteration; empty outside a loop."""
    if tgt is None:
        return {}
    out = {}
    for a in sorted(loop_carried(ops, repeat, k)):
        arr = op.array(a)
        if not _gatherable(arr, tgt, size):
            out[a] = 3 * arr.elem_bytes * prod(arr.shape) // 4
    return out


def _lazy(make):
    """The items of the list ``make()`` returns, made only when the first is asked for."""
    yield from make()


def _cheapest_single(singles: list[set], searched, changes, fixed: dict) -> list[set]:
    """Of ``singles`` (sets of arrays whose layouts an operator's search may choose), the one whose plan runs
    plus changes layouts in the fewest modelled cycles, as a list of at most one (none when no plan works
    with every change feasible). ``searched(homes)``: the operator's search with ``homes`` fixed;
    ``changes(sched)``: the layout changes ``sched`` needs (:func:`_map_once`)."""
    best = None
    for small in singles:
        free = searched({a: h for a, h in fixed.items() if a not in small})
        if isinstance(free, MicaError):
            continue
        _, moved, blocked = changes(free[0])
        if blocked:
            continue
        total = free[1].best.cycles + moved
        if best is None or total < best[0]:
            best = (total, small)
    return [best[1]] if best else []


def _checked_cycles(op: Program, sched: Schedule, tgt: Target, lowering: Lowering) -> float:
    """Modelled cycles of ``op`` under ``sched``, built and verified first: a plan the verifier refuses
    raises (and is rejected) rather than winning."""
    mp = lowering.program(op, sched, tgt)
    verify(mp, tgt)
    return estimate(mp, tgt).total_cycles
