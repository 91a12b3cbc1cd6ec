"""Legality of a mesh mapping: the mapped program may not violate any dependence.

:func:`check_legal` fails closed: it raises :class:`~mica.errors.ScheduleError` unless it can prove, with
isl, that executing the program under the schedule respects every flow, anti and output dependence:

* **no produced data crosses cores.** MICA moves only data nobody writes (inputs, multicast or ringed)
  and partial results of reductions; so every dependence must join two instances on the same core —
  ``P_S^-1 ∘ D ∘ P_T ⊆ identity`` with ``P`` the placement ``{ S[loops] -> core[x, y] }``;
* **each core runs its instances in an order that respects the dependences between them.** The time of an
  instance on its core is ``[phase, t, position, local loops...]`` (statements before the step loop, then
  the step loop, then after it; inside, textual position and the schedule's local loop order);
  every dependence must go forward in that order (``D ∩ (T_S x T_T)^-1(lex_ge) = ∅``).

Exempt, because they are re-associated on purpose: the self-dependences of a reduction statement through
its accumulator (the order of its updates may change, and partial sums may live on several cores), and —
for a reduction combined across cores — dependences through the accumulator between the reduction and a
statement that runs at the reduction's root (its initialisation before, its use after).
"""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from ..affine.deps import dependences, reductions
from ..affine.isl_names import imap, iset, umap
from ..affine.program import Program, Statement
from ..errors import ScheduleError
from ..comm.sets import placement_map
from .mapping import main_statement
from .schedule import Schedule


@lru_cache(maxsize=64)
def _deps(prog: Program, skip: frozenset[str]) -> isl.UnionMap:
    return dependences(prog, skip_refs=skip).all


def _maps(u: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    u.foreach_map(out.append)
    return out


def _groups(prog: Program, sched: Schedule) -> dict[str, tuple[int, int]]:
    """(phase, position) of every statement: 0 before the step loop, 1 inside it (or the main
    statement without one), 2 after."""
    main = main_statement(prog)
    step = sched.step
    idx = prog.statements.index(main)
    out = {}
    for pos, s in enumerate(prog.statements):
        if (step is not None and step.loop in s.loops) or (step is None and s is main):
            out[s.name] = (1, pos)
        else:
            out[s.name] = (0 if pos < idx else 2, pos)
    return out


def _time_map(stmt: Statement, sched: Schedule, phase: tuple[int, int], depth: int) -> isl.Map:
    """``{ S[loops] -> [phase, t, position, local loops..., 0...] }`` of ``depth + 3`` entries."""
    order = list(sched.order_of(stmt.name)) + ["0"] * (depth - len(sched.order_of(stmt.name)))
    local = imap(f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> [{', '.join(order) or '0'}] }}")
    g, pos = phase
    head = placement_map(stmt, sched).apply_range(imap(f"{{ M[t, x, y] -> [{g}, t, {pos}] }}"))
    return head.flat_range_product(local.intersect_domain(stmt.domain_set))


def check_legal(prog: Program, sched: Schedule) -> None:
    """Raises :class:`ScheduleError` naming the first dependence the mapping could violate."""
    if not sched.space and sched.step is None:
        return              # one core, the original order: nothing can be violated
    _check_coverage(prog, sched)
    reds = reductions(prog)
    main = main_statement(prog)
    red = reds.get(main.name)
    written = {v for ix in main.write.index for v in ix.names}
    cross = red is not None and any(sm.loop not in written for sm in sched.space)
    groups = _groups(prog, sched)
    depth = max((len(sched.order_of(s.name)) for s in prog.statements), default=0)
    stmts = {s.name: s for s in prog.statements}
    places = {s.name: placement_map(s, sched).apply_range(imap("{ M[t, x, y] -> core[x, y] }"))
              for s in prog.statements}
    times = {s.name: _time_map(s, sched, groups[s.name], depth) for s in prog.statements}
    same_core = imap("{ core[x, y] -> core[x, y] }")

    # Self-dependences of reductions through their accumulators are re-associable.
    exempt_refs = frozenset(r for rd in reds.values() for r in (rd.write_ref, rd.read_ref))
    rel = _deps(prog, frozenset())
    plain = _deps(prog, exempt_refs) if exempt_refs else rel
    for m in _maps(rel):
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        if src == dst and src in reds:
            m = _restrict(plain, src, dst, m)        # drop the accumulator's own chain
        elif cross and main.name in (src, dst):
            other = dst if src == main.name else src
            # An initialisation that runs wholly before the reduction (or a use wholly after it), at the
            # root, composes with partial sums; anything interleaved with the reduction does not.
            before = groups[other][0] == 0 and dst == main.name
            after = groups[other][0] == 2 and src == main.name
            if _at_root(stmts[other], sched, main) and (before or after):
                m = _restrict(plain, src, dst, m)
        if m.is_empty():
            continue
        _check_one(m, src, dst, places, times, same_core, prog)


def _check_coverage(prog: Program, sched: Schedule) -> None:
    """Every instance of every statement gets exactly one core, inside the cores that run, and one step
    inside the step loop — tiles come from the main statement, so another statement with larger extents
    would otherwise lose instances silently."""
    from math import ceil
    from .mapping import loop_extent
    main = main_statement(prog)
    blocks = {"x": 1, "y": 1}
    for sm in sched.space:
        blocks[sm.axis] = ceil(loop_extent(main, sm.loop) / sm.tile)
    steps = sched.step.steps if sched.step else 1
    if sched.step is not None and sched.step.skew != "none":
        blocks = {"x": steps, "y": steps}
    inside = iset(f"{{ M[t, x, y] : 0 <= t < {steps} and 0 <= x < {blocks['x']} and 0 <= y < {blocks['y']} }}")
    for s in prog.statements:
        p = placement_map(s, sched)
        if not p.is_single_valued():
            raise ScheduleError(f"statement {s.name}: an instance would run on several cores or steps")
        lost = s.domain_set.subtract(p.intersect_range(inside).domain())
        if not lost.is_empty():
            raise ScheduleError(
                f"statement {s.name}: some instances fall outside the cores and steps the schedule runs "
                f"(its tiles come from {main.name}, whose loops are shorter)", detail=str(lost))


def _restrict(plain: isl.UnionMap, src: str, dst: str, like: isl.Map) -> isl.Map:
    """The part of ``plain`` from ``src`` to ``dst`` (empty in ``like``'s space when there is none)."""
    for m in _maps(plain):
        if m.get_tuple_name(isl.dim_type.in_) == src and m.get_tuple_name(isl.dim_type.out) == dst:
            return m
    return isl.Map.empty(like.get_space())


def _at_root(stmt: Statement, sched: Schedule, main: Statement) -> bool:
    """The statement runs at coordinate 0 of every axis the reduction is spread over."""
    written = {v for ix in main.write.index for v in ix.names}
    for sm in sched.space:
        if sm.loop not in written and sm.loop in stmt.loops:
            return False
    return True


def _check_one(m: isl.Map, src: str, dst: str, places, times, same_core, prog: Program) -> None:
    u = isl.UnionMap.from_map(m)
    cores = u.apply_domain(isl.UnionMap.from_map(places[src])).apply_range(isl.UnionMap.from_map(places[dst]))
    if not cores.is_subset(isl.UnionMap.from_map(same_core)):
        bad = cores.subtract(isl.UnionMap.from_map(same_core))
        raise ScheduleError(
            f"statement {dst} needs data statement {src} produces on another core; MICA moves only "
            f"input data and partial sums between cores", detail=str(bad))
    t = u.apply_domain(isl.UnionMap.from_map(times[src])).apply_range(isl.UnionMap.from_map(times[dst]))
    if t.is_empty():
        return
    n = times[src].dim(isl.dim_type.out)
    back = isl.UnionMap.from_map(isl.Map.lex_ge(isl.Space.set_alloc(m.get_ctx(), 0, n)))
    wrong = t.intersect(back)
    if not wrong.is_empty():
        raise ScheduleError(
            f"the mapping runs statement {dst} before the instance of {src} it depends on (on the same core)",
            detail=str(wrong))
