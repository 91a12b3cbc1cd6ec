"""Deriving a space-time mapping from the program's dependences.

:func:`derive_schedule` picks, for the program's main statement (the deepest nest), the loops that carry
no dependence (or only a reduction's) as spatial mesh axes, makes a remaining reduction loop temporal in
lock-step panels, orders each core's local loops for unit stride, and places every array so the panels a
step needs live on one core row or column. Nothing here is specific to an operator: the decisions follow
from the loop kinds (:func:`mica.affine.deps.loop_kinds`) and the access subscripts.

A sequential loop (one carrying a real dependence) is never made spatial.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from math import ceil

import islpy as isl

from ..affine.deps import (PARALLEL, REDUCTION, SEQUENTIAL, dependences, loop_kinds, loop_kinds_within,
                           nest_carried, reductions)
from ..affine.fission import statement_graph
from ..affine.isl_names import imap, int_bounds, iset
from ..affine.program import Access, Array, Program, Statement, main_statement
from ..errors import ScheduleError
from .schedule import Home, Schedule, SpaceMap, StepMap, loop_name, with_buffers
from .wavefront import tileable, wave_weights


def fused_body(prog: Program, sched: Schedule) -> tuple[Statement, ...]:
    """The statements each core runs interleaved with the main statement, in their original order: when
    there is no step loop and the main statement is not a reduction combined across cores, the statements
    of the main statement's innermost loop body (same loops, same textual-order prefix) if that body holds
    a dependence cycle between two of its statements — a recurrence through scalars such as deriche's
    ``y1[i][j] = ... ym1; ym2 = ym1; ym1 = y1[i][j]`` cannot run one statement after another; else the
    statements of the main statement's top-level nest that run inside every spatial loop, if they hold
    such a cycle. Otherwise just the main statement (the others run wholly before or after it). Legality
    (:func:`mica.tiling.legality.check_legal`) still proves that no dependence crosses cores unsatisfied.
    Changes nothing."""
    main = main_statement(prog)
    if sched.step is not None and sched.step.wavefront:
        # A wavefront's block of the main statement's body runs whole at its step: a recurrence through
        # temporaries (deriche's rows, pipelined over the cores of a row) runs interleaved there.
        body = tuple(s for s in prog.statements
                     if s.loops == main.loops and tuple(s.order[:-1]) == tuple(main.order[:-1]))
        return body if _has_cycle(prog, body) else (main,)
    if sched.step is not None:
        return (main,)
    red = reductions(prog).get(main.name)
    written = {v for ix in main.write.index for v in ix.names}
    if red is not None and any(sm.loop not in written for sm in sched.space):
        return (main,)
    body = tuple(s for s in prog.statements
                 if s.loops == main.loops and tuple(s.order[:-1]) == tuple(main.order[:-1]))
    if _has_cycle(prog, body):
        return body
    # The whole nest around the main statement, every statement of it that runs inside the mapped loops
    # (symm's ``C[k][j] += ...`` feeding the later ``C[i][j] = ...`` that the next iteration of i reads
    # back): each core runs its slice of the spatial loops in the original order.
    nest = sliced_nest(prog, {sm.loop for sm in sched.space})
    return nest or (main,)


def sliced_nest(prog: Program, spatial: set[str]) -> tuple[Statement, ...]:
    """The statements of the main statement's top-level nest that run inside every loop of ``spatial``, when
    they must run interleaved, in the original order, on each core: they hold a dependence cycle, or a
    statement after the main one feeds one before it (symm: ``C[i][j] = ...`` at the end of iteration i is
    read by ``C[k][j] += ...`` in later iterations), which running each group wholly before or after the main
    statement would break. Else empty."""
    main = main_statement(prog)
    nest = tuple(s for s in prog.statements
                 if s.order[:1] == main.order[:1] and spatial and spatial <= set(s.loops))
    if len(nest) < 2:
        return ()
    if _has_cycle(prog, nest):
        return nest
    idx = prog.statements.index(main)
    side = {s.name: (prog.statements.index(s) > idx) - (prog.statements.index(s) < idx) for s in nest}
    graph = statement_graph(prog)
    backward = any(side[t] < side[n] for n in side for t in graph[n] if t in side)
    return nest if backward else ()


def _has_cycle(prog: Program, stmts: tuple[Statement, ...]) -> bool:
    """True when two of ``stmts`` (at least two) depend on each other, directly or through others of them."""
    if len(stmts) < 2:
        return False
    names = {s.name for s in stmts}
    graph = statement_graph(prog)
    reach = {n: {m for m in graph[n] if m in names} for n in names}
    for n in names:                 # transitive closure inside the body (a few statements)
        todo = list(reach[n])
        while todo:
            m = todo.pop()
            for k in reach[m] - reach[n]:
                reach[n].add(k)
                todo.append(k)
    return any(m != n and n in reach[m] for n in names for m in reach[n])


def loop_extent(stmt: Statement, loop: str) -> int:
    """Number of values ``loop`` takes from 0 to its maximum over the statement's domain."""
    b = _bounds(stmt.domain, loop)
    if b is None:
        return 1                # an empty loop: one (empty) block keeps every mapping well formed
    lo, hi = b
    if lo < 0:
        raise ScheduleError(f"statement {stmt.name}: loop {loop} starts at {lo} < 0; tiling needs lower bounds >= 0")
    return hi + 1


@lru_cache(maxsize=4096)
def _bounds(domain: str, loop: str) -> tuple[int, int] | None:
    """:func:`int_bounds` of ``loop`` over the domain written ``domain`` (keyed on the text, whose hash Python
    keeps: the search asks for the same extents hundreds of thousands of times)."""
    return int_bounds(iset(domain), loop)


def _stride_score(stmt: Statement, prog: Program, loop: str) -> int:
    """How well ``loop`` suits the innermost position: +1 per access it leaves invariant or walks with unit
    stride (it indexes only the last dimension), -1 per access it walks with a larger stride."""
    score = 0
    for acc in stmt.accesses:
        uses = [d for d, ix in enumerate(acc.index) if ix.coeff(loop)]
        if not uses:
            score += 1
        elif uses == [len(acc.index) - 1] and abs(acc.index[-1].coeff(loop)) == 1:
            score += 1
        else:
            score -= 1
    return score


def local_order(stmt: Statement, prog: Program, kinds: dict[str, str]) -> tuple[str, ...]:
    """The loop order inside a core: the best unit-stride loop innermost, reduction loops inside the others.

    A loop the source runs downwards (``for (j = n - 2; j >= 1; j--)``, ``-j`` in the statement's
    :attr:`~mica.affine.program.Statement.order`) keeps its direction, written ``-j``, unless it carries no
    dependence (a parallel loop runs upwards): a back substitution's sweep then still reads the element it
    wrote one iteration before. :func:`~.schedule.loop_name` strips the sign."""
    if not stmt.loops:
        return ()
    inner = max(reversed(stmt.loops), key=lambda lp: _stride_score(stmt, prog, lp))
    rest = [lp for lp in stmt.loops if lp != inner]
    rest.sort(key=lambda lp: (kinds.get(lp) == REDUCTION, stmt.loops.index(lp)))
    down = {o[1:] for o in stmt.order if isinstance(o, str) and o.startswith("-")}
    return tuple(f"-{lp}" if lp in down and kinds.get(lp) != PARALLEL else lp for lp in (*rest, inner))


def spatial_candidates(prog: Program) -> list[list[tuple[str, str]]]:
    """Every legal assignment of loops of the main statement to mesh axes, best guess first: two loops
    (outer -> y, inner -> x, and swapped), then one loop on x or on y, then none (one core). Only loops
    that carry no dependence or only a reduction's may be spatial."""
    kinds = loop_kinds(prog)
    main = main_statement(prog)
    mk = kinds[main.name]
    ok = [lp for lp in main.loops if mk[lp] in (PARALLEL, REDUCTION)]
    ranked = [lp for lp in ok if mk[lp] == PARALLEL] + [lp for lp in ok if mk[lp] == REDUCTION]
    ranked += [lp for lp in main.loops if lp in sweep_parallel(prog)]
    out: list[list[tuple[str, str]]] = []
    pairs = [(a, b) for i, a in enumerate(ranked) for b in ranked[i + 1:]]
    for a, b in pairs:
        outer, inner = sorted((a, b), key=main.loops.index)
        out.append([(outer, "y"), (inner, "x")])
        out.append([(inner, "y"), (outer, "x")])
    for lp in ranked:
        out.append([(lp, "x")])
        out.append([(lp, "y")])
    out.append([])          # everything on one core: legal whenever the textual order is
    return out


@lru_cache(maxsize=256)
def sweep_parallel(prog: Program) -> frozenset[str]:
    """Loops of the main statement that carry a dependence, but only from one iteration of the program's
    sweep loop to a later one (:func:`sweep_step`: the first loop of every statement, carrying a
    dependence): inside one sweep step their iterations are independent (:func:`loop_kinds_within`), so
    they may be spatial under a sweep — right-looking LU's ``i`` and ``j`` at step ``k``. Legality
    (:mod:`.legality`) still proves every plan. Empty when there is no sweep loop."""
    step = sweep_step(prog, loop_kinds(prog))
    if step is None:
        return frozenset()
    main = main_statement(prog)
    overall = loop_kinds(prog)[main.name]
    within = loop_kinds_within(prog, step.loop)[main.name]
    return frozenset(lp for lp in main.loops
                     if lp != step.loop and overall[lp] == SEQUENTIAL and within[lp] == PARALLEL)


def wave_sweep_loop(prog: Program, spatial: set[str]) -> str:
    """The sweep loop of a wavefront whose spatial loops are ``spatial``: the loop enclosing every statement
    (the first loop of each) when it is not spatial, else ``""`` (the wavefront runs over the mesh only)."""
    first = {s.loops[0] if s.loops else None for s in prog.statements}
    if len(first) == 1 and None not in first:
        lp = next(iter(first))
        if lp not in spatial:
            return lp
    return ""


def wavefront_candidates(prog: Program) -> list[list[tuple[str, str]]]:
    """Assignments of loops of the main statement to mesh axes for a wavefront (:mod:`.wavefront`): pairs
    (outer -> y, inner -> x, and swapped) and single loops, each with at least one loop that carries a
    dependence (the others are :func:`spatial_candidates`). A time loop enclosing a deeper nest (seidel-2d's
    ``t``) stays the sweep loop. Empty when no loop of the main statement carries a dependence, or the
    program has a reduction (its partials are combined, not pipelined); only loops whose blocks can be
    pipelined (:func:`mica.tiling.wavefront.tileable`) are offered."""
    kinds = loop_kinds(prog)
    main = main_statement(prog)
    mk = kinds[main.name]
    carried = {lp for lp in main.loops if mk[lp] == SEQUENTIAL} | nest_carried(prog, main.name)
    if reductions(prog) or not carried:
        return []
    sweep = wave_sweep_loop(prog, set())
    loops = [lp for lp in main.loops if not (lp == sweep and len(main.loops) >= 3)]
    out: list[list[tuple[str, str]]] = []
    for i, a in enumerate(loops):
        for b in loops[i + 1:]:
            if (a in carried or b in carried) and tileable(prog, wave_sweep_loop(prog, {a, b}), (a, b)):
                out.append([(a, "y"), (b, "x")])
                out.append([(b, "y"), (a, "x")])
    for lp in loops:
        if lp in carried and tileable(prog, wave_sweep_loop(prog, {lp}), (lp,)):
            out.append([(lp, "x")])
            out.append([(lp, "y")])
    return out


def sweep_step(prog: Program, kinds: dict, like: Schedule | None = None) -> StepMap | None:
    """The sweep step of a stencil-like program: its outermost loop, when every statement sits inside it
    (the first loop of each) and it carries a dependence. None otherwise (or when ``like`` has none)."""
    if like is not None and (like.step is None or not like.step.sweep):
        return None
    first = {s.loops[0] if s.loops else None for s in prog.statements}
    if len(first) != 1 or None in first:
        return None
    lp = first.pop()
    if all(kinds[s.name][lp] != SEQUENTIAL for s in prog.statements):
        return None
    n = max(loop_extent(s, lp) for s in prog.statements)
    # The direction the program runs the loop in (``-lp`` in a statement's order: counting down).
    down = {f"-{lp}" in s.order for s in prog.statements}
    if len(down) != 1:
        return None
    return StepMap(lp, 1, n, sweep=True, down=down.pop())


def derive_schedule(prog: Program, mesh: tuple[int, int], *, like: Schedule | None = None,
                    assignment: list[tuple[str, str]] | None = None, blocks: dict[str, int] | None = None,
                    skew: str = "none", reduce: str = "chain", group: int = 0,
                    family: str = "derived", searched: bool = False, fixed_homes: dict[str, Home] | None = None,
                    buffers: int = 1, steps: bool = True, wave: bool = False, dram: tuple[str, ...] = (),
                    step_tile: int | None = None, dram_roots: bool = False) -> Schedule:
    """A legal mapping of ``prog`` onto ``mesh = (width, height)`` derived from its dependences.

    The decisions default to the first of :func:`spatial_candidates`, the whole mesh, SUMMA-style steps
    and chain reductions; each can be given: ``assignment`` (loop -> axis pairs), ``blocks`` (how many
    cores to use along ``x``/``y``: a sub-rectangle), ``skew`` of the step loop (``cannon`` or
    ``interleaved`` ring shifts on a square of cores), ``reduce``/``group`` for reductions across cores.
    With ``like``, every decision of that schedule is kept and only the tiles are recomputed for ``mesh``:
    the same plan on another mesh. ``fixed_homes`` pins the layout of arrays an earlier operator left on
    the mesh (a stepped loop then takes its tile from them, so their panels can be multicast in place).
    ``buffers=2`` double-buffers the step loop's received panels (:func:`~mica.tiling.schedule.with_buffers`;
    a :class:`ScheduleError` when there is no step loop to overlap); ``steps=False`` makes no step loop at all
    (every core runs its slice of the spatial loops in the original order: :func:`fused_body`). ``wave=True``
    makes a wavefront (:func:`_wave_step`): the assignment may spread loops that carry dependences of bounded
    distance. ``dram`` names read-only inputs streamed from device DRAM (:attr:`Schedule.dram`): they get no home,
    and an unskewed step loop takes ``step_tile`` (the panel each step reads) instead of the homes' tile;
    ``dram_roots`` has the first core of each line read a panel the line shares and multicast it.
    ``family`` and ``searched`` label the
    plan (:attr:`Schedule.family`); a SUMMA plan whose step turns out to be a sweep is of the halo family.

    The steps: the checked assignment (:func:`_checked_assignment`), 1. spatial loops block-tiled over the
    cores used (:func:`_space_maps`), 2. a step loop (:func:`_step_map`), 3. homes (:func:`_homes`).
    """
    fixed_homes = fixed_homes or {}
    kinds = loop_kinds(prog)
    main = main_statement(prog)
    if like is not None:
        assignment = [(s.loop, s.axis) for s in like.space]
        skew = like.step.skew if like.step else "none"
        reduce, group, family, searched = like.reduce, like.group, like.family, like.searched
        buffers = like.buffers
        wave = like.step is not None and like.step.wavefront
        dram = like.dram
        step_tile = like.step.tile if like.dram else None
        dram_roots = like.dram_roots
    if assignment is None:
        assignment = spatial_candidates(prog)[0]
    reasons = _checked_assignment(main, kinds[main.name], assignment, wave, sweep_parallel(prog))
    cores = _cores_used(mesh, blocks, skew, len(assignment))
    # A plan streaming from DRAM reads whole 32x32-tile pages (Tenstorrent): its blocks start on tile boundaries.
    space = _space_maps(prog, main, kinds[main.name], assignment, cores, reasons, DRAM_TILE if dram else 1)
    if like is not None and fixed_homes and not dram:
        space = _tiles_of_fixed_homes(main, space, cores, fixed_homes, reasons)
    step = None
    if wave:
        step = _wave_step(prog, space, reasons)
        family = "wavefront" if family == "derived" else family
    elif steps:
        step = _step_map(prog, main, kinds[main.name], space, cores, skew, like, fixed_homes, reasons,
                         step_tile if dram else None)
    elif space:
        reasons.append("no step loop: each core runs its slice of the spatial loops in the original order")
    if steps and step is None and space and skew == "none":
        step = sweep_step(prog, kinds, like)
        if step is not None:
            if family == "summa":
                family = "halo"         # SUMMA's multicast steps, on a stencil: lock-step sweeps
            reasons.append(
                f"loop {step.loop} ({step.steps} iterations) carries a dependence from one iteration to the "
                f"next and encloses every statement -> time: {step.steps} lock-step sweeps"
                f"{' counting down, as the program runs it' if step.down else ''}; data a statement "
                f"reads from a neighbouring core arrives by a halo exchange just before it")
    if skew != "none" and (step is None or step.skew == "none"):
        raise ScheduleError(f"a {skew} schedule needs a reduction loop to step; {main.name} has none left")
    if skew != "none":
        for acc in main.reads:
            if acc.array in fixed_homes and any(ix.coeff(step.loop) for ix in acc.index):
                raise ScheduleError(f"a {skew} schedule would ring panels of {acc.array}, which an earlier "
                                    f"operator left unskewed on the mesh")
    if reduce == "tree":
        reasons.append(f"reductions across cores: chains in groups of {group}, then a chain over the groups")
    elif reduce == "levels":
        reasons.append(f"reductions across cores: a {group}-ary tree (chains in groups of {group}, then in groups "
                       f"of {group} of their roots, level by level)")
    dram = tuple(dram)
    if dram:
        _check_streamed(prog, main, step, dram, fixed_homes)
        who = ("the first core of each row / column reads the panel its line shares and multicasts it along the line"
               if dram_roots else "every core reads the panels of each step into its receive buffer")
        reasons.append(f"{', '.join(dram)} stream{'s' if len(dram) == 1 else ''} from device DRAM: no home on the "
                       f"cores; {who}")
    homes = _homes(prog, main, space, step, fixed_homes, dram)
    order = like.local_order if like is not None else _local_orders(prog)
    sched = Schedule(mesh=tuple(mesh), space=tuple(space), step=step, local_order=order,
                     homes=tuple(homes), reduce=reduce, group=group, family=family, searched=searched,
                     reasons=tuple(reasons), dram=dram, dram_roots=bool(dram_roots))
    if like is None and step is not None and step.tile == 1 and step.loop:
        sched = longest_run_inside(prog, sched)
    return with_buffers(sched, buffers) if buffers != 1 else sched


def _check_streamed(prog: Program, main: Statement, step: StepMap | None, dram: tuple[str, ...],
                    fixed_homes: dict[str, Home]) -> None:
    """Raises :class:`ScheduleError` unless every array of ``dram`` can stream from DRAM: a read-only input of
    the program that the main statement reads with the (unskewed, not sweeping) step loop in its subscripts, and
    that no earlier operator left on the mesh. Changes nothing."""
    if step is None or step.skew != "none" or step.sweep or step.wavefront:
        raise ScheduleError(f"streaming {', '.join(dram)} from DRAM needs an unskewed step loop; "
                            f"{main.name} has none here")
    written = {s.write.array for s in prog.statements}
    for a in dram:
        reads = [acc for acc in main.reads if acc.array == a]
        if a not in prog.inputs or a in written or a in fixed_homes or a in prog.on_mesh or not reads or \
                not all(any(ix.single_var() == step.loop for ix in acc.index) for acc in reads):
            raise ScheduleError(f"{a} cannot stream from DRAM: only a read-only input that {main.name} reads "
                                f"by step loop {step.loop} (and nothing keeps on the mesh) can")


def _checked_assignment(main: Statement, mk: dict[str, str], assignment: list[tuple[str, str]],
                        wave: bool = False, swept: frozenset[str] = frozenset()) -> list[str]:
    """The reasons that follow from the loop kinds ``mk`` of the main statement alone (which loops stay
    temporal and why). Raises :class:`ScheduleError` when ``assignment`` maps a loop that is not a loop of
    the main statement, or (unless ``wave``: a wavefront, whose legality isl proves later) one that carries
    a dependence, to the mesh — unless it is one of ``swept`` (:func:`sweep_parallel`: independent inside a
    sweep step)."""
    reasons: list[str] = []
    if not assignment:
        reasons.append(f"no loop of {main.name} is mapped to the mesh: the program runs on core (0, 0)")
    mapped = {lp for lp, _ in assignment}
    for lp in main.loops:
        if mk[lp] not in (PARALLEL, REDUCTION) and not (lp in swept and lp in mapped):
            reasons.append(f"loop {lp} of {main.name} carries a dependence: kept temporal")
    if len(main.loops) > 1 and all(mk[lp] not in (PARALLEL, REDUCTION) for lp in main.loops):
        reasons.append(f"every loop of {main.name} carries a dependence: it spreads over cores only as a "
                       f"wavefront (blocks run at steps skewed by their cores, which needs dependence "
                       f"distances that stay within a neighbour's block), else in its original order")
    for lp, _ in assignment:
        if lp not in main.loops or (mk[lp] not in (PARALLEL, REDUCTION) and not wave and lp not in swept):
            raise ScheduleError(f"schedule maps loop {lp} of {main.name} to the mesh, which is illegal: "
                                f"it carries a dependence")
    return reasons


def _cores_used(mesh: tuple[int, int], blocks: dict[str, int] | None, skew: str, mapped: int) -> dict[str, int]:
    """Cores used along ``x`` and ``y``: the whole mesh, or the ``blocks`` asked for; a skewed plan (which
    must map ``mapped == 2`` loops) uses a square of the smaller side."""
    width, height = mesh
    cores = {"x": width, "y": height}
    if blocks:
        for axis, n in blocks.items():
            if not 1 <= n <= cores[axis]:
                raise ScheduleError(f"cannot use {n} cores along {axis} of a {width}x{height} mesh")
            cores[axis] = n
    if skew != "none":
        if mapped != 2:
            raise ScheduleError(f"a {skew} schedule maps two loops to the mesh")
        side = min(cores["x"], cores["y"])
        cores = {"x": side, "y": side}
    return cores


#: The tile granularity of a plan streaming from device DRAM: Tenstorrent's 32x32 tiles, one DRAM page each.
DRAM_TILE = 32


def _reduction_words(reds: dict, name: str) -> str:
    """What a schedule's account calls statement ``name``'s reduction: ``max-reduction of S3``, or for a pair
    ``(max, argmax) pair of S3 and S2`` / ``online softmax's (running max, rescaled sum) pair of S3 and S2``."""
    red = reds[name]
    if not red.partner:
        return f"{red.op}-reduction of {name}"
    other = reds[red.partner].op
    if other == "softmax":
        return f"online softmax's (running max, rescaled sum) pair of {name} and {red.partner}"
    return f"({red.op}, {other}) pair of {name} and {red.partner}"


def _space_maps(prog: Program, main: Statement, mk: dict[str, str], assignment: list[tuple[str, str]],
                cores: dict[str, int], reasons: list[str], align: int = 1) -> list[SpaceMap]:
    """Step 1: each assigned loop block-tiled over the cores used along its axis,
    ``{ S[.., l, ..] -> core[x] : x = floor(l / tile) }``, the tile rounded up to a multiple of ``align`` (a plan
    streaming from DRAM: :data:`DRAM_TILE`); appends the reason for each to ``reasons``."""
    reds = reductions(prog)
    space = []
    for lp, axis in assignment:
        # Tiles cover the loop and every array dimension it indexes (a stencil's arrays are wider than
        # its loops), so homes fit on the cores used.
        n = max([loop_extent(main, lp)] + [prog.array(a.array).shape[d] for a in main.accesses
                                            for d, ix in enumerate(a.index) if ix.single_var() == lp])
        tile = max(1, ceil(n / cores[axis]))
        tile = ceil(tile / align) * align if align > 1 else tile
        space.append(SpaceMap(lp, axis, tile))
        why = "carries no dependence" if mk[lp] == PARALLEL else \
            f"carries only the {_reduction_words(reds, main.name)} (combined across cores)" \
            if mk[lp] == REDUCTION else "carries a dependence: its blocks run as a wavefront" \
            if lp not in sweep_parallel(prog) else "carries dependences only from one sweep step to a later one"
        reasons.append(f"loop {lp} ({n} iterations) -> mesh {axis} in tiles of {tile}: {why}")
    return space


def _tiles_of_fixed_homes(main: Statement, space: list[SpaceMap], cores: dict[str, int],
                          fixed_homes: dict[str, Home], reasons: list[str]) -> list[SpaceMap]:
    """``space`` with each loop that indexes a dimension of an array an earlier operator left on the mesh,
    along the same axis, tiled as that array is (when one tile is asked for and its blocks fit the cores
    used): a plan re-derived for another mesh (``like``) then reads that array where it lies, as the plan
    it copies did when it was searched with that layout fixed. Preserves every other decision; appends the
    reason to ``reasons``."""
    out = []
    for sm in space:
        tiles = fixed_tiles(main.accesses, fixed_homes, sm.loop, sm.axis)
        n = loop_extent(main, sm.loop)
        if len(tiles) == 1 and (tile := tiles.pop()) != sm.tile and ceil(n / tile) <= cores[sm.axis]:
            reasons.append(f"loop {sm.loop} in tiles of {tile}, as the arrays it indexes are laid out along mesh "
                           f"{sm.axis} by an earlier operator")
            sm = replace(sm, tile=tile)
        out.append(sm)
    return out


def fixed_tiles(accesses, fixed_homes: dict[str, Home], loop: str, axis: str | None = None) -> set[int]:
    """The tiles of the dimensions that ``loop`` alone indexes in ``accesses``, of the arrays ``fixed_homes``
    lays out, where those dimensions lie along a mesh axis (along ``axis`` when given)."""
    return {home.dims[d][1] for acc in accesses if acc.array in fixed_homes for home in [fixed_homes[acc.array]]
            for d, ix in enumerate(acc.index)
            if ix.single_var() == loop and home.dims[d][0] and (axis is None or home.dims[d][0] == axis)}


def _wave_step(prog: Program, space: list[SpaceMap], reasons: list[str]) -> StepMap:
    """The step of a wavefront over the spatial loops ``space``: the sweep loop (:func:`wave_sweep_loop`)
    and the weights of :func:`mica.tiling.wavefront.wave_weights`, with every step of the pipeline's fill
    and drain; appends the reason to ``reasons``. Raises :class:`ScheduleError` when no weights put every
    dependence between cores at a later step."""
    spatial = {sm.loop for sm in space}
    loop = wave_sweep_loop(prog, spatial)
    n = max((loop_extent(s, loop) for s in prog.statements if loop in s.loops), default=1) if loop else 1
    blocks = {sm.axis: max(ceil(loop_extent(s, sm.loop) / sm.tile) for s in prog.statements if sm.loop in s.loops)
              for sm in space}
    w = wave_weights(prog, loop, tuple(space), n, blocks) if space else None
    if w is None:
        raise ScheduleError(f"no wavefront over loops {sorted(spatial)}: some dependence between their blocks "
                            f"reaches arbitrarily far (or backwards along every skew), so no step offset per "
                            f"core orders it; they stay temporal", cause="no-wavefront")
    period, wx, wy = w
    bx, by = blocks.get("x", 1) - 1, blocks.get("y", 1) - 1
    steps = period * (n - 1) + abs(wx) * bx + abs(wy) * by + 1
    start = max(0, -wx) * bx + max(0, -wy) * by
    over = f"iteration l of loop {loop} at step {period}*l + " if loop else "its block at step "
    plus = f" + {start}" if start else ""
    reasons.append(f"wavefront: core (x, y) runs {over}{wx}*x + {wy}*y{plus}, so every dependence between blocks "
                   f"on two cores goes to a later step and its data arrives by a halo exchange; {steps} steps with "
                   f"the pipeline's fill and drain")
    return StepMap(loop, 1, steps, sweep=True, wave=(wx, wy), period=period, start=start)


def _step_map(prog: Program, main: Statement, mk: dict[str, str], space: list[SpaceMap], cores: dict[str, int],
              skew: str, like: Schedule | None, fixed_homes: dict[str, Home], reasons: list[str],
              step_tile: int | None = None) -> StepMap | None:
    """Step 2: a reduction loop left over becomes the step loop, ``t = floor(l / tile)``, when arrays it
    indexes are spread over the mesh by another loop. Unskewed, each step's panels come from one core
    row/column (multicast); skewed, every core starts on its own block and panels move around rings.
    None when no loop qualifies (or ``like`` has no step on it); appends the reason to ``reasons``.
    ``step_tile`` (a plan streaming its panels from DRAM) sets the tile of an unskewed step."""
    used_blocks = {s.axis: ceil(loop_extent(main, s.loop) / s.tile) for s in space}
    used_blocks.setdefault("x", 1)
    used_blocks.setdefault("y", 1)
    spatial_loops = {s.loop for s in space}
    for lp in main.loops:
        if lp in spatial_loops or mk[lp] != REDUCTION:
            continue
        if like is not None and (like.step is None or like.step.loop != lp):
            continue
        free_counts = []
        for acc in main.reads:
            dims_loops = [ix.single_var() for ix in acc.index]
            if lp not in dims_loops:
                continue
            used = {next(s.axis for s in space if s.loop == v) for v in dims_loops if v in spatial_loops}
            free = [a for a in ("y", "x") if a not in used]
            if used and free:
                free_counts.append(used_blocks[free[0]])
        if not free_counts:
            continue
        n = loop_extent(main, lp)
        pinned = fixed_tiles(main.reads, fixed_homes, lp)
        if skew == "none" and step_tile is not None:
            tile = min(step_tile, n)
            step = StepMap(lp, tile, ceil(n / tile))
            reasons.append(f"loop {lp} ({n} iterations) -> time: {step.steps} steps of {tile}; each step's "
                           f"panels are read from device DRAM")
        elif skew == "none" and len(pinned) == 1:
            tile = pinned.pop()
            step = StepMap(lp, tile, ceil(n / tile))
            reasons.append(f"loop {lp} ({n} iterations) -> time: {step.steps} steps of {tile}, the tile in "
                           f"which an earlier operator left the arrays it indexes")
        elif skew != "none":
            side = cores["x"]
            tile = max(1, ceil(n / side))
            step = StepMap(lp, tile, side, skew)
            reasons.append(
                f"loop {lp} ({n} iterations) -> time: {side} steps of {tile}, skewed: core (x, y) starts "
                f"on block l(x) + l(y) and passes its panels around {skew} rings after every step")
        else:
            tile = max(ceil(n / c) for c in free_counts)
            step = StepMap(lp, tile, ceil(n / tile))
            reasons.append(
                f"loop {lp} ({n} iterations) -> time: {step.steps} steps of {tile}; each step's panels "
                f"of the arrays it indexes come from one core column/row")
        return step
    return None


def _homes(prog: Program, main: Statement, space: list[SpaceMap], step: StepMap | None,
           fixed_homes: dict[str, Home], dram: tuple[str, ...] = ()) -> list[Home]:
    """Step 3: where each array lives, ``{ core[x, y] -> A[a, ..] }`` block by block: each array dimension
    follows the loop that indexes it in the main statement (a step loop's dimension goes to a free axis in
    tiles of the step); arrays an earlier operator left keep their ``fixed_homes``. An array streamed from
    ``dram`` has no home on the cores: its record says whole, never built (:attr:`Schedule.dram`). A mesh
    axis no dimension uses pins the array to line 0 of it, except where every core of the plan reads it:
    an input read whole, and an array kept on the mesh (:attr:`Program.on_mesh`) that is only read, block by
    block along the spatial loops, have a copy on every line (loaded once rather than multicast each run)."""
    homes = []
    step_loop = step.loop if (step and not step.sweep) else None
    written = {s.write.array for s in prog.statements}
    spread = {sm.axis for sm in space}
    swept = _swept_dimensions(prog, main, space, step)
    for arr, acc in _placing_accesses(prog, main):
        if arr.name in dram:
            homes.append(Home(arr.name, tuple((None, n) for n in arr.shape), (("x", 0), ("y", 0))))
            continue
        dims: list[tuple[str | None, int]] = [(None, n) for n in arr.shape]
        used: set[str] = set()
        if acc is not None:
            for d, ix in enumerate(acc.index):
                v = ix.offset_var() if step is not None and step.sweep else ix.single_var()
                sm = next((s for s in space if s.loop == v), None)
                if sm is not None and sm.axis not in used:
                    dims[d] = (sm.axis, sm.tile)
                    used.add(sm.axis)
            for d, ix in enumerate(acc.index):
                lay = swept.get((d, arr.shape[d])) if step is not None and step.sweep else None
                if lay is not None and dims[d][0] is None and ix.single_var() == step.loop and lay[0] not in used:
                    dims[d] = lay
                    used.add(lay[0])
            for d, ix in enumerate(acc.index):
                if step_loop is not None and ix.single_var() == step_loop:
                    free = [a for a in ("y", "x") if a not in used]
                    if free:
                        dims[d] = (free[0], step.tile)
                        used.add(free[0])
        pin = tuple((a, 0) for a in ("x", "y") if a not in used)
        if not used and arr.name not in written and (spread == {"x", "y"} or spread and arr.shape):
            # Read whole by every core: a copy on each core of the plan, not a home on core (0, 0) whose box
            # every core of the plan would hold besides a receive buffer of the same size. (Under a 1D plan a
            # scalar stays on core (0, 0) and is multicast along the line: copying a value another operator
            # computes would take a gather and a broadcast.)
            pin = tuple((a, 0) for a in ("x", "y") if a not in spread)
        elif arr.name in prog.on_mesh and arr.name not in written and _read_by_blocks(prog, arr.name, space):
            # Kept on the mesh and only read, block by block along the spatial loops: a copy of its block on
            # every line of cores, loaded once, where a home on line 0 would be multicast along the lines at
            # every run into receive buffers of the same size (MeshGEMV's resident input vector).
            pin = tuple((a, 0) for a in ("x", "y") if a not in used and a not in spread)
        homes.append(fixed_homes.get(arr.name) or Home(arr.name, tuple(dims), pin))
    return homes


def _read_by_blocks(prog: Program, array: str, space: list[SpaceMap]) -> bool:
    """Whether every subscript of every access of ``prog`` to ``array`` is exactly a loop of ``space``: each
    core reads the block its spatial loops give, at every step (no panel of a step loop, no row a runtime
    parameter selects), so the cores of a line all read the same whole block."""
    spatial = {sm.loop for sm in space}
    accs = [acc for s in prog.statements for acc in s.accesses if acc.array == array]
    return bool(accs) and all(ix.single_var() in spatial for acc in accs for ix in acc.index)


def _swept_dimensions(prog: Program, main: Statement, space: list[SpaceMap], step: StepMap | None
                      ) -> dict[tuple[int, int], tuple[str, int]]:
    """In a sweep, ``(dimension, extent) -> (axis, tile)`` of the main statement's written array where a spatial
    loop lays that dimension out: an array indexed by the sweep loop in the same dimension, of the same extent,
    is laid out so too (gramschmidt's ``Q[i][k]``, produced at step ``k``, lives with column ``k`` of ``A[i][j]``,
    on the core that produces it). Empty when ``step`` is not a sweep."""
    if step is None or not step.sweep or not step.loop:
        return {}
    shape = prog.array(main.write.array).shape
    out = {}
    for d, ix in enumerate(main.write.index):
        sm = next((s for s in space if s.loop == ix.offset_var()), None)
        if sm is not None:
            out[(d, shape[d])] = (sm.axis, sm.tile)
    return out


@lru_cache(maxsize=256)
def _placing_accesses(prog: Program, main: Statement) -> tuple[tuple[Array, Access | None], ...]:
    """Per array of ``prog``, the access that places it (:func:`_homes`): the main statement's first, unless
    another of its accesses (or, without any, another statement's) follows the loops more closely (a stencil
    reads ``A[i - 1][j]`` before ``A[i][j]``); an offset subscript ``i + c`` follows loop ``i``."""
    out = []
    for arr in prog.arrays:
        cands = [a for a in main.accesses if a.array == arr.name] or \
            [a for s in prog.statements for a in s.accesses if a.array == arr.name]
        acc = max(cands, key=lambda a: (sum(ix.single_var() is not None for ix in a.index),
                                        -cands.index(a))) if cands else None
        out.append((arr, acc))
    return tuple(out)


def pinned_outermost(orders: tuple[tuple[str, tuple[str, ...]], ...], step: StepMap
                     ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``orders`` (statement -> local loop order) with the loop of ``step`` moved outermost; for a step that
    pins it to one value per call (tile 1: a sweep, a wavefront's sweep loop, an aligned step-owner sweep's
    pivot loop). A loop of one iteration per call commutes with every other, so the instances a call runs and
    their order are unchanged; the call's innermost loop is then one that runs several iterations (one vector
    operation over a core's rows instead of one per element: Cholesky's ``A[i][j] -= A[i][k] * A[j][k]`` at
    step ``k``)."""
    out = []
    for stmt, order in orders:
        pinned = [o for o in order if loop_name(o) == step.loop]
        out.append((stmt, tuple(pinned + [o for o in order if loop_name(o) != step.loop])))
    return tuple(out)


def longest_run_inside(prog: Program, sched: Schedule) -> Schedule:
    """``sched`` (a sweep: its step pins its loop) with its step loop outermost (:func:`pinned_outermost`) and,
    per statement, the loop a call runs longest made innermost where the loop :func:`local_order` chose (the best stride) runs less than
    half as many iterations per call: a spatial loop runs its tile, any other its extent. One vector
    operation then covers a core's rows of gramschmidt's update at step ``k`` instead of one per column of
    its block. Kept per statement only where isl proves the new order keeps the statement's own dependences
    (:func:`keeps_self_dependences`); the search's legality proof then checks the whole plan as before.
    Preserves every decision but the local orders. (Only in sweeps: in SUMMA-like steps of several
    iterations the stride-chosen loop stays innermost.)"""
    per_call = {sm.loop: sm.tile for sm in sched.space}
    per_call[sched.step.loop] = 1
    kept = []
    for name, order in pinned_outermost(sched.local_order, sched.step):
        stmt = prog.statement(name)
        new = order
        if len(order) >= 2:
            runs = {lp: min(per_call.get(lp, loop_extent(stmt, lp)), loop_extent(stmt, lp)) for lp in stmt.loops}
            best = max(order[:-1], key=lambda o: (runs[loop_name(o)], _stride_score(stmt, prog, loop_name(o))))
            if runs[loop_name(best)] >= 2 * runs[loop_name(order[-1])]:
                new = tuple(o for o in order if o != best) + (best,)
        kept.append((name, new if new == order or keeps_self_dependences(prog, name, new) else order))
    return sched.copy(local_order=tuple(kept))


@lru_cache(maxsize=1024)
def keeps_self_dependences(prog: Program, name: str, order: tuple[str, ...]) -> bool:
    """Whether running the instances of statement ``name`` in the local loop ``order`` (``-j``: counting down)
    keeps every dependence between two of its instances in source order: the dependence relation
    ``{ S[src] -> S[dst] }`` (flow, anti and output, :func:`~mica.affine.deps.dependences`) mapped to the
    order's time vectors ``{ [src time] -> [dst time] }`` lies in ``<lex``. Checked over every pair of
    instances, also those that run in different calls (where the local order does not matter): a sufficient
    test that needs no schedule. Dependences with other statements do not depend on a statement's own
    local order (each kernel runs its instances in one call, after or before the others')."""
    stmt = prog.statement(name)
    time = imap(f"{{ {name}[{', '.join(stmt.loops)}] -> [{', '.join(order)}] }}")
    for m in _self_dependences(prog).get(name, ()):
        on_time = m.apply_domain(time).apply_range(time)
        if not on_time.is_subset(isl.Map.lex_lt(on_time.get_space().domain())):
            return False
    return True


@lru_cache(maxsize=64)
def _self_dependences(prog: Program) -> dict[str, tuple[isl.Map, ...]]:
    """Per statement of ``prog``, its dependences (flow, anti, output) between two of its own instances,
    ``{ S[src] -> S[dst] }`` (one exact analysis per program: :func:`~mica.affine.deps.dependences`)."""
    deps = dependences(prog)
    maps: list[isl.Map] = []
    deps.flow.union(deps.anti).union(deps.output).foreach_map(maps.append)
    out: dict[str, list[isl.Map]] = {}
    for m in maps:
        name = m.get_tuple_name(isl.dim_type.in_)
        if name == m.get_tuple_name(isl.dim_type.out):
            out.setdefault(name, []).append(m)
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=256)
def _local_orders(prog: Program) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """:func:`local_order` of every statement of ``prog``, in program order."""
    kinds = loop_kinds(prog)
    return tuple((s.name, local_order(s, prog, kinds[s.name])) for s in prog.statements)


def work_blocks(prog: Program, sched: Schedule) -> dict[str, int]:
    """Cores along ``x`` and ``y`` the plan ``sched`` of ``prog`` works on (from core (0, 0)): the blocks of
    its spatial loops and of every home spread along an axis (also one the operator maps no loop to: an
    array an earlier operator laid out there, whose cores then hold data without computing); a skewed plan rings its panels around a
    square of ``steps x steps`` cores. Raises :class:`ScheduleError` when a skewed plan's blocks do not fit
    its square."""
    main = main_statement(prog)
    blocks = {"x": 1, "y": 1}
    for sm in sched.space:
        blocks[sm.axis] = ceil(loop_extent(main, sm.loop) / sm.tile)
    for home in sched.homes:
        for (axis, tile), n in zip(home.dims, prog.array(home.array).shape):
            if axis is not None:
                blocks[axis] = max(blocks[axis], ceil(n / tile))
    if sched.step is not None and sched.step.skew != "none":
        n = sched.step.steps
        if blocks["x"] > n or blocks["y"] > n or len(sched.space) != 2:
            raise ScheduleError(f"a {sched.step.skew} schedule needs both mesh axes mapped with at most "
                                f"{n} blocks each (one per step); got {blocks['x']}x{blocks['y']}")
        blocks = {"x": n, "y": n}
    return blocks
