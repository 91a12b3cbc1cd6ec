"""Legality of a mesh mapping: the mapped program may not violate any dependence.

:func:`check_legal` fails closed: it raises :class:`~mica.errors.ScheduleError` unless it can prove, with
isl, that executing the program under the schedule respects every flow, anti and output dependence:

* **produced data crosses cores only by halo exchange.** Written elements live on their owner; a
  statement that reads a neighbour's elements gets them copied into a ghost zone just before it starts
  (at ``[phase, t, position]``). So a dependence between instances on two cores (placement
  ``{ S[loops] -> core[x, y] }``) must be a flow from an earlier statement start or an anti dependence
  whose overwrite does not come before the read's statement starts; never an output dependence, and
  never through the accumulator of a reduction spread over cores;
* **each core runs its instances in an order that respects the dependences between them.** The time of an
  instance on its core is ``[phase, t, position, local loops...]`` (statements before the step loop, then
  the step loop, then after it; inside, textual position and the schedule's local loop order);
  every dependence must go forward in that order (``D ∩ (T_S x T_T)^-1(lex_ge) = ∅``).

Exempt, because they are re-associated on purpose: the self-dependences of a reduction statement through
its accumulator (the order of its updates may change, and partial sums may live on several cores), the
dependences between the two halves of a (value, index) pair (one kernel runs them interleaved, in their
original order), and — for a reduction combined across cores — dependences through the accumulators
between the reduction (or its pair) and a statement that runs at the reduction's root (its
initialisation before, its use after). A pair is legal only when each core's partial is a block of
consecutive iterations combined lower block first (:func:`_check_pair_order`).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from functools import lru_cache
from math import ceil

import islpy as isl

from ..affine.deps import dependences, reductions
from ..affine.isl_names import imap, iset
from ..affine.program import Program, Statement
from ..errors import CommError, ScheduleError
from .spacetime import T, X, Y, owner_rows, placement_constraints
from .mapping import fused_body, loop_extent, main_statement
from .schedule import Schedule


@lru_cache(maxsize=64)
def _deps(prog: Program, skip: frozenset[str]) -> tuple[tuple[str, isl.UnionMap], ...]:
    d = dependences(prog, skip_refs=skip)
    return (("flow", d.flow), ("anti", d.anti), ("output", d.output))


def _maps(u: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    u.foreach_map(out.append)
    return out


def _groups(prog: Program, sched: Schedule) -> dict[str, tuple[int, int]]:
    """(phase, position) of every statement: 0 before the step loop, 1 inside it (or the main
    statement and the other half of its (value, index) pair without one; the statements fused with the
    main one all at its position), 2 after."""
    main = main_statement(prog)
    red = reductions(prog).get(main.name)
    partner = red.partner if red is not None else None
    step = sched.step
    idx = prog.statements.index(main)
    fused = {s.name for s in fused_body(prog, sched)}
    out = {}
    for pos, s in enumerate(prog.statements):
        if (step is None or step.wavefront) and len(fused) > 1 and s.name in fused:
            out[s.name] = (1, idx)
        elif (step is not None and step.encloses(s.loops)) or (step is None and (s is main or s.name == partner)):
            out[s.name] = (1, pos)
        else:
            out[s.name] = (0 if pos < idx else 2, pos)
    return out


def _local_time(stmt: Statement, sched: Schedule, fused: bool) -> list[str]:
    """The time of an instance inside its core and step: the schedule's local loop order, or for a
    statement fused with the main one (:func:`~mica.tiling.mapping.fused_body`) its original 2d+1
    textual-order vector (the fused kernel interleaves the statements as the source does)."""
    if fused:
        return [str(v) for v in stmt.order]
    return list(sched.order_of(stmt.name))


#: Verdicts of :func:`check_legal` kept (the search proves the same mapping again for every layout other
#: operators may leave the arrays it only reads in; those layouts do not enter the proof).
VERDICTS = 8192
_verdicts: OrderedDict[tuple, ScheduleError | None] = OrderedDict()


def check_legal(prog: Program, sched: Schedule) -> None:
    """Raises :class:`ScheduleError` naming the first dependence the mapping could violate.

    The proof reads only the schedule's spatial and step maps, local loop orders and the homes of the arrays
    the program writes (where owner-computes statements run); its verdict is kept per program and those
    parts (:data:`VERDICTS` of them), so a mapping tried again under other layouts of read-only arrays is
    not proved twice."""
    if not sched.space and sched.step is None:
        return              # one core, the original order: nothing can be violated
    written = sorted({s.write.array for s in prog.statements})
    key = (prog, sched.space, sched.step, sched.local_order, tuple(sched.home(a) for a in written))
    _kept_verdict(_verdicts, key, lambda: _prove(prog, sched))


def _kept_verdict(store: OrderedDict, key: tuple, prove) -> None:
    """Raises (a copy of) the error kept in ``store`` under ``key``, or returns when none was; without a verdict
    there, runs ``prove()`` and keeps what it raised (or None), the last :data:`VERDICTS` of them."""
    if key in store:
        store.move_to_end(key)
        exc = store[key]
        if exc is not None:
            raise copy.copy(exc).with_traceback(None)
        return
    try:
        prove()
    except ScheduleError as exc:
        _keep(store, key, copy.copy(exc).with_traceback(None))
        raise
    _keep(store, key, None)


def _keep(store: OrderedDict, key: tuple, verdict: ScheduleError | None) -> None:
    store[key] = verdict
    while len(store) > VERDICTS:
        store.popitem(last=False)


def _prove(prog: Program, sched: Schedule) -> None:
    """:func:`check_legal` without the kept verdicts."""
    _check_coverage(prog, sched)
    reds = reductions(prog)
    main = main_statement(prog)
    red = reds.get(main.name)
    written = {v for ix in main.write.index for v in ix.names}
    cross = red is not None and any(sm.loop not in written for sm in sched.space)
    # The statements combined across cores: the main reduction and the other half of its pair.
    combined = {main.name} | ({red.partner} if red is not None and red.partner else set())
    if red is not None and red.partner and reds[red.partner].op != "softmax":
        _check_pair_order(prog, sched, main, red)     # (an online softmax's pair combines in any order)
    groups = _groups(prog, sched)
    body = fused_body(prog, sched)
    fused = {s.name for s in body} if len(body) > 1 else set()
    depth = max((len(_local_time(s, sched, s.name in fused)) for s in prog.statements), default=0)
    stmts = {s.name: s for s in prog.statements}
    # What places and times each statement's instances: a statement placed and ordered alike under two
    # schedules gives the same { S[loops] -> [x, y, phase, t, position, local time...] } (_placed_time).
    down = sched.step is not None and sched.step.down
    keys = {s.name: (tuple(placement_constraints(s, sched)), groups[s.name], depth,
                     tuple(_local_time(s, sched, s.name in fused)), down) for s in prog.statements}

    # Self-dependences of reductions through their accumulators are re-associable.
    exempt_refs = frozenset(r for rd in reds.values() for r in rd.refs)
    plain_of = dict(_deps(prog, exempt_refs)) if exempt_refs else None
    for kind, rel in _deps(prog, frozenset()):
        plain = plain_of[kind] if plain_of is not None else rel
        for m in _maps(rel):
            src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
            variant = "all"
            if src == dst and src in reds:
                variant = "plain"                       # drop the accumulator's own chain
            elif src in combined and dst in combined:
                # The two halves of a (value, index) pair: one kernel runs them interleaved in their
                # original order on each core (mica.lower.build), the partials combine as pairs.
                variant = "plain"
            elif cross and (src in combined or dst in combined):
                other = src if dst in combined else dst
                # An initialisation that runs wholly before the reduction (or a use wholly after it), at
                # the root, composes with partial sums; anything interleaved with the reduction does not.
                before = groups[other][0] == 0 and dst in combined
                after = groups[other][0] == 2 and src in combined
                if _at_root(stmts[other], sched, main) and (before or after):
                    variant = "plain"
            if variant == "plain":
                m = _restrict(plain, src, dst, m)
            if m.is_empty():
                continue
            # Partial sums of a reduction spread over cores live in accumulators no halo refreshes.
            halo_ok = not (cross and (src in combined or dst in combined))
            key = (prog, kind, src, dst, variant, keys[src], keys[dst], halo_ok)
            _kept_verdict(_dependence_verdicts, key, lambda: _check_one(
                m, kind, src, dst, _placed_time(stmts[src], *keys[src]), _placed_time(stmts[dst], *keys[dst]),
                halo_ok))


#: Verdicts of single dependences (:func:`_check_one`) kept, keyed by the placement and time of both ends:
#: candidates that differ in one statement's mapping share the checks of every other dependence.
_dependence_verdicts: OrderedDict[tuple, ScheduleError | None] = OrderedDict()


@lru_cache(maxsize=VERDICTS)
def _placed_time(stmt: Statement, constraints: tuple[str, ...], phase: tuple[int, int], depth: int,
                 local_time: tuple[str, ...], down: bool = False) -> isl.Map:
    """``{ S[loops] -> [x, y, phase, t, position, local time..., 0...] }``: the core and the time of each
    instance of ``stmt`` placed by ``constraints`` (:func:`~.spacetime.placement_constraints`), in group
    ``phase`` (:func:`_groups`), with ``local_time`` padded to ``depth`` entries; with ``down`` (a sweep
    counting down: :attr:`~.schedule.StepMap.down`) the steps run from the last, so the time holds ``-t``."""
    placement = imap(f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> M[{T}, {X}, {Y}] : "
                     f"{' and '.join(constraints)} }}", CommError).intersect_domain(stmt.domain_set)
    order = list(local_time) + ["0"] * (depth - len(local_time))
    local = imap(f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> [{', '.join(order) or '0'}] }}")
    g, pos = phase
    head = placement.apply_range(imap(f"{{ M[t, x, y] -> [{g}, {'-t' if down else 't'}, {pos}] }}"))
    time = head.flat_range_product(local.intersect_domain(stmt.domain_set))
    return placement.apply_range(imap("{ M[t, x, y] -> core[x, y] }")).flat_range_product(time)


def _check_pair_order(prog: Program, sched: Schedule, main: Statement, red) -> None:
    """A (value, index) pair keeps the sequential tie rule only when every core's partial covers a block of
    consecutive iterations of the sequential order, and the partials combine lower block first: at most
    one reduced loop is spatial, it is the outermost loop the written element does not depend on, and no
    skewed step reorders the blocks of a reduced loop. Raises :class:`ScheduleError` otherwise."""
    written = {v for ix in main.write.index for v in ix.names}
    reduced = [lp for lp in main.loops if lp not in written]
    spatial = [sm.loop for sm in sched.space if sm.loop in reduced]
    what = f"the ({red.op}, arg{red.op}) pair of {main.name} and {red.partner}"
    if len(spatial) > 1 or (spatial and spatial[0] != reduced[0]):
        raise ScheduleError(f"{what} spreads loop(s) {spatial} over cores: only its outermost reduced loop "
                            f"{reduced[0]} may be spatial (each core's partial must be a block of consecutive "
                            f"iterations for the sequential tie rule)")
    step = sched.step
    if step is not None and step.skew != "none" and step.loop in reduced:
        raise ScheduleError(f"{what}: a {step.skew} step over reduced loop {step.loop} visits its blocks out of "
                            f"order, which breaks the sequential tie rule")


def _check_coverage(prog: Program, sched: Schedule) -> None:
    """Every instance of every statement gets exactly one core, inside the cores that run, and one step
    inside the step loop — tiles come from the main statement, so another statement with larger extents
    would otherwise lose instances silently."""
    main = main_statement(prog)
    blocks = {"x": 1, "y": 1}
    for sm in sched.space:
        blocks[sm.axis] = ceil(loop_extent(main, sm.loop) / sm.tile)
    steps = sched.step.steps if sched.step else 1
    if sched.step is not None and sched.step.skew != "none":
        blocks = {"x": steps, "y": steps}
    for s in prog.statements:
        fault = _coverage_fault(s, tuple(placement_constraints(s, sched)), steps, blocks["x"], blocks["y"])
        if fault == "several":
            raise ScheduleError(f"statement {s.name}: an instance would run on several cores or steps")
        if fault is not None:
            raise ScheduleError(
                f"statement {s.name}: some instances fall outside the cores and steps the schedule runs "
                f"(its tiles come from {main.name}, whose loops are shorter)", detail=fault)


@lru_cache(maxsize=VERDICTS)
def _coverage_fault(stmt: Statement, constraints: tuple[str, ...], steps: int, bx: int, by: int) -> str | None:
    """Why the placement ``constraints`` of ``stmt`` does not give each instance exactly one core of the
    ``bx x by`` blocks and one of ``steps`` steps: ``"several"`` (not single-valued), the instances lost
    (text), or None."""
    p = imap(f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> M[{T}, {X}, {Y}] : {' and '.join(constraints)} }}",
             CommError).intersect_domain(stmt.domain_set)
    if not p.is_single_valued():
        return "several"
    inside = iset(f"{{ M[t, x, y] : 0 <= t < {steps} and 0 <= x < {bx} and 0 <= y < {by} }}")
    lost = stmt.domain_set.subtract(p.intersect_range(inside).domain())
    return None if lost.is_empty() else str(lost)


def _restrict(plain: isl.UnionMap, src: str, dst: str, like: isl.Map) -> isl.Map:
    """The part of ``plain`` from ``src`` to ``dst`` (empty in ``like``'s space when there is none)."""
    for m in _maps(plain):
        if m.get_tuple_name(isl.dim_type.in_) == src and m.get_tuple_name(isl.dim_type.out) == dst:
            return m
    return isl.Map.empty(like.get_space())


def _at_root(stmt: Statement, sched: Schedule, main: Statement) -> bool:
    """The statement runs at coordinate 0 of every axis the reduction is spread over (it has no loop
    there, and no element it writes lies beyond that coordinate's block: :func:`~.spacetime.owner_rows`)."""
    written = {v for ix in main.write.index for v in ix.names}
    for sm in sched.space:
        if sm.loop not in written and (sm.loop in stmt.loops or owner_rows(stmt, sched, sm.axis) is not None):
            return False
    return True


def _lex(a: list[str], b: list[str], strict: bool) -> str:
    """isl text for ``a >=lex b`` (``a >lex b`` when ``strict``)."""
    if not a:
        return "false" if strict else "true"
    rest = _lex(a[1:], b[1:], strict)
    return f"({a[0]} > {b[0]} or ({a[0]} = {b[0]} and {rest}))"


@lru_cache(maxsize=32)
def _relations(n: int) -> tuple[isl.Map, isl.Map, isl.Map, isl.Map]:
    """On ``{ [x, y, time...] -> [x', y', time'...] }`` (``n`` time entries, the first three
    ``[phase, t, position]``): same core and time going backwards; other cores; and the statement
    starts in the wrong order for a flow (``>=``) and for an anti dependence (``>``)."""
    a = [f"a{i}" for i in range(n)]
    b = [f"b{i}" for i in range(n)]
    head = f"{{ [xs, ys, {', '.join(a)}] -> [xd, yd, {', '.join(b)}] : "
    back = imap(head + f"xs = xd and ys = yd and {_lex(a, b, False)} }}")
    across = imap(head + "xs != xd or ys != yd }")
    flow_bad = imap(head + f"{_lex(a[:3], b[:3], False)} }}")
    anti_bad = imap(head + f"{_lex(a[:3], b[:3], True)} }}")
    return back, across, flow_bad, anti_bad


def _check_one(m: isl.Map, kind: str, src: str, dst: str, src_placed: isl.Map, dst_placed: isl.Map,
               halo_ok: bool) -> None:
    """Checks the ``kind`` dependences ``m`` (``{ S[loops] -> T[loops'] }``) under the mapping.

    Pairs on one core must keep their order on it. A pair on two cores is a halo: the builder copies
    the owner's value into the reader's ghost zone just before the reading statement starts (at its
    ``[phase, t, position]``). So a flow must come from an earlier statement start (an earlier step, or an
    earlier statement of the same step), and the overwrite of an anti dependence must not come before
    the read's statement starts; written elements never move between cores (no output pairs).
    Everything is decided on ``{ [core, time] -> [core', time'] }``, the dependence with the instances
    projected out."""
    full = m.apply_domain(src_placed).apply_range(dst_placed)
    if full.is_empty():
        return
    n = full.dim(isl.dim_type.in_) - 2
    back, across_rel, flow_bad, anti_bad = _relations(n)
    wrong = full.intersect(back)
    if not wrong.is_empty():
        raise ScheduleError(
            f"the mapping runs statement {dst} before the instance of {src} it depends on (on the same core)",
            detail=str(wrong))
    across = full.intersect(across_rel)
    if across.is_empty():
        return
    if not halo_ok:
        raise ScheduleError(
            f"statement {dst} needs data statement {src} produces on another core; partial sums of a "
            f"reduction spread over cores move only along its combining chain", detail=str(across))
    if kind == "output":
        raise ScheduleError(f"statements {src} and {dst} would write the same elements of an array on "
                            f"different cores", detail=str(across))
    bad = across.intersect(flow_bad if kind == "flow" else anti_bad)
    if bad.is_empty():
        return
    if kind == "flow":
        raise ScheduleError(
            f"statement {dst} needs data statement {src} produces on another core in the same step; "
            f"a halo exchange can only bring data produced before the statement starts", detail=str(bad))
    raise ScheduleError(
        f"statement {dst} would overwrite, on its core, data statement {src} reads from it on another "
        f"core before {src} has started", detail=str(bad))
