"""Exact dataflow and loop classification.

:func:`dependences` runs isl's ``compute_flow`` over the program's tagged accesses and original schedule and
returns a :class:`Dependences` record. :func:`reductions` finds associative updates ``X[f] = X[f] op e``.
:func:`loop_kinds` says, per statement and loop, whether the loop carries no dependence (``parallel``),
carries only the dependence of a reduction (``reduction``), or carries a real one (``sequential``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from functools import reduce as _fold

import islpy as isl

from .expr import Bin, Read
from .isl_names import out_of_budget
from .program import Program, Statement

PARALLEL, REDUCTION, SEQUENTIAL = "parallel", "reduction", "sequential"


@dataclass(frozen=True, eq=False)
class Dependences:
    """Dependences of a program under its original schedule.

    Every relation lives in ``{ S[loops] -> T[loops'] }`` (statement instance to statement instance):
    ``flow`` (write then read), ``anti`` (read then write), ``output`` (write then write).
    ``live_in`` is ``{ S[loops] -> A[a] }``: reads whose value comes from before the program.
    ``live_out`` is ``{ S[loops] -> A[a] }``: writes that no later write overwrites.
    """

    flow: isl.UnionMap
    anti: isl.UnionMap
    output: isl.UnionMap
    live_in: isl.UnionMap
    live_out: isl.UnionMap

    @property
    def all(self) -> isl.UnionMap:
        return self.flow.union(self.anti).union(self.output)


@dataclass(frozen=True)
class Reduction:
    """Statement ``stmt`` is ``array[...] = array[...] op e`` through accesses ``write_ref``/``read_ref``."""

    stmt: str
    op: str
    array: str
    write_ref: str
    read_ref: str


def _union(maps: list[isl.UnionMap], space_of: isl.UnionMap) -> isl.UnionMap:
    empty = isl.UnionMap.empty(space_of.get_space())
    return _fold(lambda a, b: a.union(b), maps, empty)


def _accesses(prog: Program, skip: frozenset[str]) -> tuple[isl.UnionMap, isl.UnionMap]:
    sched = prog.schedule_map()
    reads, writes = [], []
    for s in prog.statements:
        for a in s.reads:
            if a.ref not in skip:
                reads.append(isl.UnionMap.from_map(s.access_map(a)))
        if s.write.ref not in skip:
            writes.append(isl.UnionMap.from_map(s.access_map(s.write)))
    return _union(reads, sched), _union(writes, sched)


def _schedule_tree(prog: Program) -> isl.Schedule:
    """The original schedule as an isl schedule tree over the statements' (coalesced) domains."""
    domain = _union([isl.UnionMap.from_domain(s.domain_set.coalesce()) for s in prog.statements],
                    prog.schedule_map()).domain()
    band = isl.MultiUnionPwAff.from_union_map(prog.schedule_map().intersect_domain(domain))
    return isl.Schedule.from_domain(domain).insert_partial_schedule(band)


def dependences(prog: Program, *, skip_refs: frozenset[str] = frozenset()) -> Dependences:
    """Exact dependences of ``prog`` under its original schedule, ignoring the references ``skip_refs``.

    Uses isl's ``compute_flow`` on a schedule tree (the plain schedule-map form fails inside isl on some
    union domains with integer divisions). Should isl still fail, falls back to memory-based
    dependences — every earlier access to the same element — which contain the exact ones, so analyses
    built on them stay safe (they can only see more dependences than there are)."""
    reads, writes = _accesses(prog, skip_refs)
    try:
        return _exact(prog, reads, writes)
    except isl.Error as exc:
        if out_of_budget(exc):
            raise
        return _memory_based(prog, reads, writes)


def _exact(prog: Program, reads: isl.UnionMap, writes: isl.UnionMap) -> Dependences:
    sched = _schedule_tree(prog)
    # Flow: reads as sinks, writes as must-sources.
    flow_info = (isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
                 .set_schedule(sched).compute_flow())
    flow = flow_info.get_must_dependence()
    live_in = flow_info.get_must_no_source()
    # Output: writes as sinks and sources.
    out_info = (isl.UnionAccessInfo.from_sink(writes).set_must_source(writes)
                .set_schedule(sched).compute_flow())
    output = out_info.get_must_dependence()
    # Anti: writes as sinks, reads as may-sources (the read happens before the write).
    anti_info = (isl.UnionAccessInfo.from_sink(writes).set_may_source(reads)
                 .set_schedule(sched).compute_flow())
    anti = anti_info.get_may_dependence()
    live_out = writes.subtract_domain(output.domain())
    return Dependences(flow, anti, output, live_in, live_out)


def _memory_based(prog: Program, reads: isl.UnionMap, writes: isl.UnionMap) -> Dependences:
    """Every pair of accesses to one element, the first earlier in the original schedule."""
    sched = prog.schedule_map()
    before = sched.lex_lt_union_map(sched)            # { S[..] -> T[..] : S runs before T }
    flow = writes.apply_range(reads.reverse()).intersect(before)
    anti = reads.apply_range(writes.reverse()).intersect(before)
    output = writes.apply_range(writes.reverse()).intersect(before)
    written_before = before.reverse().apply_range(writes)   # { T -> e : some earlier instance writes e }
    live_in = reads.subtract(written_before)
    live_out = writes.subtract_domain(output.domain())
    return Dependences(flow, anti, output, live_in, live_out)


@lru_cache(maxsize=64)
def reductions(prog: Program) -> dict[str, Reduction]:
    """Statements of the form ``X[f] = X[f] op e`` with ``op`` in ``+``/``*`` and ``e`` not reading ``X``.

    Cached per program (programs are frozen values); do not modify the returned dict."""
    found = {}
    for s in prog.statements:
        r = _reduction_of(s)
        if r is not None:
            found[s.name] = r
    return found


def _reduction_of(s: Statement) -> Reduction | None:
    e = s.expr
    if not isinstance(e, Bin) or e.op not in ("+", "*"):
        return None
    for acc_side, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if not isinstance(acc_side, Read):
            continue
        acc = s.access(acc_side.ref)
        if acc.array != s.write.array or acc.index != s.write.index:
            continue
        if any(s.access(r).array == s.write.array for r in other.refs()):
            return None
        return Reduction(s.name, e.op, s.write.array, s.write.ref, acc.ref)
    return None


def carried_loops(rel: isl.UnionMap, stmt: Statement) -> set[str]:
    """Loops of ``stmt`` with a nonzero distance in some dependence of ``rel`` from ``stmt`` to itself."""
    carried: set[str] = set()
    for m in _maps(rel):
        if m.get_tuple_name(isl.dim_type.in_) != stmt.name or m.get_tuple_name(isl.dim_type.out) != stmt.name:
            continue
        d = m.deltas()
        if d.is_empty():
            continue
        for pos, name in enumerate(stmt.loops):
            lo, hi = d.dim_min_val(pos), d.dim_max_val(pos)
            if not (lo.is_zero() and hi.is_zero()):
                carried.add(name)
    return carried


@lru_cache(maxsize=64)
def loop_kinds(prog: Program) -> dict[str, dict[str, str]]:
    """Per statement, per loop: ``parallel``, ``reduction`` or ``sequential`` (see module docstring).

    Cached per program (programs are frozen values; the search asks once per candidate); do not modify
    the returned dicts."""
    reds = reductions(prog)
    skip = frozenset(r for red in reds.values() for r in (red.write_ref, red.read_ref))
    full = dependences(prog).all
    plain = dependences(prog, skip_refs=skip).all if skip else full
    kinds: dict[str, dict[str, str]] = {}
    for s in prog.statements:
        by_all = carried_loops(full, s)
        by_plain = carried_loops(plain, s)
        k = {}
        for lp in s.loops:
            if lp in by_plain:
                k[lp] = SEQUENTIAL
            elif lp in by_all:
                k[lp] = REDUCTION if s.name in reds else SEQUENTIAL
            else:
                k[lp] = PARALLEL
        kinds[s.name] = k
    return kinds


def _maps(rel: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    rel.foreach_map(out.append)
    return out
