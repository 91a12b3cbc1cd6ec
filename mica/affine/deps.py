"""Exact dataflow and loop classification.

:func:`dependences` runs isl's ``compute_flow`` over the program's tagged accesses and original schedule and
returns a :class:`Dependences` record. :func:`reductions` finds associative updates ``X[f] = X[f] op e``
(sums, products, max/min in their call and ternary spellings, and (value, index) arg-min/arg-max pairs).
:func:`loop_kinds` says, per statement and loop, whether the loop carries no dependence (``parallel``),
carries only the dependence of a reduction (``reduction``), or carries a real one (``sequential``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from functools import reduce as _fold

import islpy as isl

from .expr import INT_DTYPES, Bin, Call, Cmp, Const, Expr, Index, Read, Scalar, Select, int_typed
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
    """Statement ``stmt`` updates ``array[f]`` associatively through accesses ``write_ref`` / ``read_refs``.

    ``op`` is ``+``, ``*`` (``X = X op e``), ``max`` or ``min`` (``X = fmax(X, e)``, ``fmin``, or a
    comparison and a ternary choosing between ``X`` and ``e``: ``X = e > X ? e : X``), ``argmax`` /
    ``argmin`` for the index half of a (value, index) pair, or ``softmax`` for the rescaled sum of an online
    softmax, the partner of its running max (see :func:`reductions`). ``read_refs`` are the
    statement's reads of the accumulator ``array[f]`` (one for ``+``, two or three for a ternary).

    A pair is two statements of one loop nest, the index first (``I = e < X ? v : I; X = e < X ? e : X``):
    each names the other in ``partner``; ``strict`` says the comparison keeps the accumulator on ties
    (``<`` / ``>``: the first index among equal values wins in the sequential order; ``<=`` / ``>=``: the
    last)."""

    stmt: str
    op: str
    array: str
    write_ref: str
    read_refs: tuple[str, ...]
    partner: str | None = None
    strict: bool = True

    @property
    def refs(self) -> tuple[str, ...]:
        """Every reference of the accumulator: the write and the reads."""
        return (self.write_ref, *self.read_refs)


#: Reduction operators whose combine is an :class:`Expr` of two partial results.
COMBINE_OPS = ("+", "*", "max", "min")


def combine(op: str, a: Expr, b: Expr) -> Expr:
    """``a op b`` for a reduction operator of :data:`COMBINE_OPS`: ``max`` / ``min`` as ``fmax`` /
    ``fmin`` (the non-NaN operand wins, as C's fmaxf)."""
    if op in ("max", "min"):
        return Call("f" + op, (a, b))
    return Bin(op, a, b)


def _union(maps: list[isl.UnionMap], space_of: isl.UnionMap) -> isl.UnionMap:
    empty = isl.UnionMap.empty(space_of.get_space())
    return _fold(lambda a, b: a.union(b), maps, empty)


def _accesses(prog: Program, skip: frozenset[str]) -> tuple[isl.UnionMap, isl.UnionMap]:
    sched = prog.schedule_map()
    reads, writes = [], []
    for s in prog.statements:
        for a in s.reads:
            if a.ref not in skip:
                reads.append(isl.UnionMap.from_map(s.access_map(a, guarded=True)))
        if s.write.ref not in skip:
            writes.append(isl.UnionMap.from_map(s.access_map(s.write, guarded=True)))
    return _union(reads, sched), _union(writes, sched)


def _schedule_tree(prog: Program) -> isl.Schedule:
    """The original schedule as an isl schedule tree over the statements' (coalesced) domains."""
    domain = _union([isl.UnionMap.from_domain(s.instances().coalesce()) for s in prog.statements],
                    prog.schedule_map()).domain()
    band = isl.MultiUnionPwAff.from_union_map(prog.schedule_map().intersect_domain(domain))
    return isl.Schedule.from_domain(domain).insert_partial_schedule(band)


def dependences(prog: Program, *, skip_refs: frozenset[str] = frozenset()) -> Dependences:
    """Exact dependences of ``prog`` under its original schedule, ignoring the references ``skip_refs``.

    A guarded statement (:mod:`mica.affine.runtime`) takes part with the instances that run at each value of
    the runtime parameters, so the analysis is exact at every value; the relations returned are the unions
    over the declared ranges (a dependence at some value is a dependence).

    Uses isl's ``compute_flow`` on a schedule tree (the plain schedule-map form fails inside isl on some
    union domains with integer divisions). Should isl still fail, falls back to memory-based
    dependences — every earlier access to the same element — which contain the exact ones, so analyses
    built on them stay safe (they can only see more dependences than there are). Kept per program and
    ``skip_refs`` (the analyses of loop kinds, reductions, legality and local orders ask for the same ones),
    keyed by the statements and runtime parameters alone: the same statements in another program (an operator
    numbered differently in another split of a program) share one analysis."""
    return _dependences(_Statements(prog), skip_refs)


class _Statements:
    """A program as a cache key for :func:`dependences`: equal when the statements and runtime parameters
    are (everything the analysis reads), whatever the program's name, inputs or outputs."""

    __slots__ = ("prog", "_key", "_hash")

    def __init__(self, prog: Program):
        self.prog = prog
        self._key = (prog.statements, prog.runtime)
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Statements) and self._key == other._key


@lru_cache(maxsize=128)
def _dependences(key: _Statements, skip_refs: frozenset[str]) -> Dependences:
    """:func:`dependences` of ``key.prog`` (see there)."""
    prog = key.prog
    reads, writes = _accesses(prog, skip_refs)
    try:
        deps = _exact(prog, reads, writes)
    except isl.Error as exc:
        if out_of_budget(exc):
            raise
        deps = _memory_based(prog, reads, writes)
    if not prog.runtime:
        return deps
    # Guarded statements took part with the instances that run at each value of the runtime parameters:
    # the relations hold at every value of the declared ranges; their union over those values contains each
    # value's dependences.
    ctx = prog.runtime_context()
    return Dependences(*(r.intersect_params(ctx).project_out_all_params()
                         for r in (deps.flow, deps.anti, deps.output, deps.live_in, deps.live_out)))


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


def memory_dependences(prog: Program) -> isl.UnionMap:
    """Every pair of instances of ``prog`` that access one element, at least one of them writing it, the first
    earlier in the original schedule (flow, anti and output together; ``{ S[..] -> T[..] }``): a superset of
    :func:`dependences`, closed under the chains exact dependences take the last writer of."""
    return _memory_based(prog, *_accesses(prog, frozenset())).all


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
    """The associative updates of ``prog`` by statement name (see :class:`Reduction`), ``e`` never reading
    ``X``: ``X[f] = X[f] op e`` with ``op`` ``+`` / ``*``; ``X[f] = fmax(X[f], e)`` (either argument order,
    ``fmin`` too, float or double); ``X[f] = e CMP X[f] ? e : X[f]`` and every equivalent spelling of a
    max or min (operands of the comparison swapped, branches swapped with the comparison reversed). Then
    (value, index) pairs: a statement ``I[f] = e CMP X[f] ? v : I[f]`` (or its swapped spellings) right
    before the max/min ``X[f] = ...`` with the same condition, both in the same loops over the same domain,
    ``v`` reading neither ``I`` nor ``X``, every loop ``f`` does not index running upwards; and the online
    softmax's (running max, rescaled sum) pair (:func:`_softmax_pair_of`).

    Cached per program (programs are frozen values); do not modify the returned dict."""
    found = {}
    for s in prog.statements:
        r = _reduction_of(s)
        if r is not None and not _truncates_each_step(prog, s):
            found[s.name] = r
    for a, b in zip(prog.statements, prog.statements[1:]):
        pair = _pair_of(a, b, found.get(b.name)) or _softmax_pair_of(a, b, found.get(b.name))
        if pair is not None and a.name not in found:
            found[a.name], found[b.name] = pair
    return found


def _truncates_each_step(prog: Program, s: Statement) -> bool:
    """Whether ``s`` stores a floating-point sum or product into an integer array: each step truncates, so
    the updates do not re-associate (``int s; s += 2.0; s += -1.5`` is 0, ``2 + (int)-1.5`` is 1)."""
    if prog.array(s.write.array).dtype not in INT_DTYPES:
        return False

    def dtype_of(leaf) -> str:
        return prog.array(s.access(leaf.ref).array).dtype if isinstance(leaf, Read) else dict(prog.scalars)[leaf.name]
    return int_typed(s.expr, dtype_of) is False


def _is_acc(s: Statement, e: Expr) -> bool:
    """``e`` is a read of the element ``s`` writes."""
    if not isinstance(e, Read):
        return False
    acc = s.access(e.ref)
    return acc.array == s.write.array and acc.index == s.write.index


def _shape(s: Statement, e: Expr):
    """``e`` with each read replaced by the (array, index) it reads: equal shapes compute equal values."""
    if isinstance(e, Read):
        acc = s.access(e.ref)
        return ("read", acc.array, acc.index)
    if isinstance(e, (Const, Scalar, Index)):
        return e
    return (type(e).__name__, getattr(e, "op", getattr(e, "fn", None)),
            tuple(_shape(s, c) for c in e.children()))


def _reads_array(s: Statement, e: Expr, array: str) -> bool:
    return any(s.access(r).array == array for r in e.refs())


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _choice(e: Expr, acc, old_acc=None) -> tuple[str, Expr, Expr, bool] | None:
    """``e`` as ``cond ? new : old`` with ``old_acc(old)`` true (default ``acc``), normalised: (``op``,
    ``a``, ``new``, ``taken``) where the condition reads ``a op X`` (``acc(X)``) and ``new`` is chosen when
    it is ``taken``. None unless ``e`` is such a choice with one comparison side an ``acc`` read."""
    old_acc = old_acc or acc
    if not (isinstance(e, Select) and isinstance(e.cond, Cmp) and e.cond.op in _FLIP):
        return None
    c = e.cond
    if acc(c.rhs) and not acc(c.lhs):
        op, a = c.op, c.lhs
    elif acc(c.lhs) and not acc(c.rhs):
        op, a = _FLIP[c.op], c.rhs
    else:
        return None
    if old_acc(e.other) and not old_acc(e.then):
        return op, a, e.then, True
    if old_acc(e.then) and not old_acc(e.other):
        return op, a, e.other, False
    return None


def _reduction_of(s: Statement) -> Reduction | None:
    e = s.expr
    X = s.write.array
    mine = [r for r in e.refs() if _is_acc(s, Read(r))]
    if isinstance(e, Bin) and e.op in ("+", "*"):
        for acc_side, other in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if _is_acc(s, acc_side):
                if _reads_array(s, other, X):
                    return None
                return Reduction(s.name, e.op, X, s.write.ref, (acc_side.ref,))
        return None
    if isinstance(e, Call) and e.fn in ("fmax", "fmin"):
        for acc_side, other in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
            if _is_acc(s, acc_side):
                if _reads_array(s, other, X):
                    return None
                return Reduction(s.name, e.fn[1:], X, s.write.ref, (acc_side.ref,))
        return None
    ch = _choice(e, lambda x: _is_acc(s, x))
    if ch is None:
        return None
    op, a, new, taken = ch
    if _reads_array(s, a, X) or _shape(s, a) != _shape(s, new):
        return None
    greater = op in (">", ">=")          # new wins when new > X (taken) or when not new < X (not taken)
    kind = "max" if greater == taken else "min"
    # Ties keep X when the comparison that picks ``new`` is strict.
    strict = (op in ("<", ">")) if taken else (op in ("<=", ">="))
    return Reduction(s.name, kind, X, s.write.ref, tuple(mine), strict=strict)


def _same_nest(a: Statement, b: Statement) -> bool:
    """Whether ``a`` and ``b`` run side by side in one loop body (same loops, same instances, adjacent) and
    update one element each of two different arrays at the same indices: the shape of a pair."""
    if a.loops != b.loops or a.order[:-1] != b.order[:-1] or \
            not a.domain_set.set_tuple_name(b.name).is_equal(b.domain_set) or \
            (a.guard or b.guard) and not (a.guard and b.guard and
                                          a.instances().set_tuple_name(b.name).is_equal(b.instances())):
        return False
    if a.write.array == b.write.array:
        return False
    # (a scalar local and a one-element array are one element each)
    return a.write.index == b.write.index or (_one_element(a) and _one_element(b))


def _reads_element_of(a: Statement, b: Statement):
    """A test of whether an expression of ``a`` is a read of the element ``b`` writes."""
    def x_read(e):
        if not isinstance(e, Read):
            return False
        acc = a.access(e.ref)
        return acc.array == b.write.array and (acc.index == b.write.index or (
            (not acc.index or not any(ix.names for ix in acc.index)) and _one_element(b)))
    return x_read


def _max_operand(b: Statement) -> Expr | None:
    """``e`` of a max/min reduction ``X = fmax(X, e)`` (either order) or of its comparison-and-choice spelling."""
    e = b.expr
    if isinstance(e, Call) and e.fn in ("fmax", "fmin"):
        accs = [_is_acc(b, arg) for arg in e.args]
        return e.args[1] if accs[0] and not accs[1] else e.args[0] if accs[1] and not accs[0] else None
    ch = _choice(e, lambda x: _is_acc(b, x))
    return ch[2] if ch is not None else None


def _softmax_pair_of(a: Statement, b: Statement, red: Reduction | None):
    """(rescaled sum, running max) when ``a`` and the max ``b`` are the online softmax's pair::

        z = z * expf(m - fmaxf(m, e)) + expf(e - fmaxf(m, e));     // a, before b
        m = fmaxf(m, e);                                          // b

    (the sum's terms and factors in either order, ``fmaxf(m, e)`` spelled in ``a`` as ``b`` spells it, ``e``
    reading neither ``z`` nor ``m``). Partials ``(m1, z1)``, ``(m2, z2)`` combine as ``M = max(m1, m2)``,
    ``z = z1 exp(m1 - M) + z2 exp(m2 - M)`` in any order, so no loop direction is required."""
    if red is None or red.op != "max" or red.partner is not None or not _same_nest(a, b):
        return None
    new = _max_operand(b)
    if new is None or _reads_array(b, new, a.write.array):
        return None
    m_read = _reads_element_of(a, b)
    top = _shape(b, b.expr)

    def is_top(e) -> bool:
        return _shape(a, e) == top

    def exp_arg(e):
        return e.args[0] if isinstance(e, Call) and e.fn == "exp" else None

    def difference(e, lhs_ok) -> bool:
        return isinstance(e, Bin) and e.op == "-" and lhs_ok(e.lhs) and is_top(e.rhs)
    e = a.expr
    if not (isinstance(e, Bin) and e.op == "+"):
        return None
    for scaled, fresh in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if not difference(exp_arg(fresh), lambda x: _shape(a, x) == _shape(b, new)):
            continue
        if not (isinstance(scaled, Bin) and scaled.op == "*"):
            continue
        for z, factor in ((scaled.lhs, scaled.rhs), (scaled.rhs, scaled.lhs)):
            if _is_acc(a, z) and difference(exp_arg(factor), m_read):
                acc_reads = tuple(r for r in e.refs() if _is_acc(a, Read(r)) or m_read(Read(r)))
                return (Reduction(a.name, "softmax", a.write.array, a.write.ref, acc_reads, partner=b.name),
                        replace(red, partner=a.name))
    return None


def _pair_of(a: Statement, b: Statement, red: Reduction | None):
    """(index half, value half) when ``a`` is the index statement of a pair with the max/min ``b``."""
    if red is None or red.op not in ("max", "min") or red.partner is not None or not _same_nest(a, b):
        return None
    X, Ia = b.write.array, a.write.array
    if any(str(o).startswith("-") for o in a.order[1::2]
           if o not in {v for ix in a.write.index for v in ix.names}):
        return None                     # the tie rule needs the reduced loops running upwards
    ch_b = _choice(b.expr, lambda x: _is_acc(b, x))
    x_read = _reads_element_of(a, b)
    ch_a = _choice(a.expr, x_read, lambda x: _is_acc(a, x))
    if ch_b is None or ch_a is None:
        return None
    op_a, cmp_a, v, taken_a = ch_a
    op_b, cmp_b, _, taken_b = ch_b
    # The same condition: "new wins" in both statements.
    wins_a = op_a if taken_a else _negate(op_a)
    wins_b = op_b if taken_b else _negate(op_b)
    if wins_a != wins_b or _shape(a, cmp_a) != _shape(b, cmp_b):
        return None
    if _reads_array(a, v, X) or _reads_array(a, v, Ia) or _reads_array(a, cmp_a, Ia):
        return None
    acc_reads = tuple(r for r in a.expr.refs() if _is_acc(a, Read(r)) or x_read(Read(r)))
    ia = Reduction(a.name, "arg" + red.op, Ia, a.write.ref, acc_reads, partner=b.name, strict=red.strict)
    return ia, replace(red, partner=a.name)


def _one_element(s: Statement) -> bool:
    """Whether every instance of ``s`` writes the same one element (constant subscripts, or a scalar)."""
    return all(not ix.names for ix in s.write.index)


def _negate(op: str) -> str:
    return {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}[op]


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
    skip = frozenset(r for red in reds.values() for r in red.refs)
    full = dependences(prog).all
    plain = dependences(prog, skip_refs=skip).all if skip else full
    kinds: dict[str, dict[str, str]] = {}
    for s in prog.statements:
        by_all = carried_loops(full, s)
        by_plain = carried_loops(plain, s)
        kinds[s.name] = {lp: _kind(lp, by_plain, by_all, s.name in reds) for lp in s.loops}
    return kinds


def _kind(loop: str, by_plain, by_all, reduced: bool) -> str:
    """A loop's kind from the loops its statement's dependences carry without the reduction references
    (``by_plain``) and with them (``by_all``): a loop only the reduction carries is a ``reduction``."""
    if loop in by_plain:
        return SEQUENTIAL
    if loop in by_all:
        return REDUCTION if reduced else SEQUENTIAL
    return PARALLEL


@lru_cache(maxsize=64)
def nest_carried(prog: Program, stmt_name: str) -> frozenset[str]:
    """Loops of statement ``stmt_name`` that carry a dependence between two statements of its nest (both
    inside the loop, at the same textual position): deriche's ``j`` in ``y1[i][j] = .. ym1[i] ..;
    ym1[i] = y1[i][j]`` carries the recurrence although neither statement depends on itself across ``j``.
    A dependence ``{ S[..] -> T[..] }`` counts for loop ``l`` when some pair of its instances has different
    values of ``l``. Cached per program; pure."""
    stmt = prog.statement(stmt_name)
    by_name = {s.name: s for s in prog.statements}
    out: set[str] = set()
    for m in _maps(dependences(prog).all):
        src = by_name.get(m.get_tuple_name(isl.dim_type.in_))
        dst = by_name.get(m.get_tuple_name(isl.dim_type.out))
        if src is None or dst is None:
            continue
        for lp in stmt.loops:
            if lp in out or lp not in src.loops or lp not in dst.loops:
                continue
            at = [k for k, v in enumerate(stmt.order) if v in (lp, f"-{lp}")]
            prefix = stmt.order[:at[0] + 1] if at else None
            if prefix is None or src.order[:len(prefix)] != prefix or dst.order[:len(prefix)] != prefix:
                continue
            a, b = src.loops.index(lp), dst.loops.index(lp)
            n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
            ins = ", ".join(f"i{k}" for k in range(n_in))
            outs = ", ".join(f"o{k}" for k in range(n_out))
            differ = isl.Map(f"{{ [{ins}] -> [{outs}] : i{a} < o{b} or i{a} > o{b} }}")
            differ = differ.set_tuple_name(isl.dim_type.in_, src.name).set_tuple_name(isl.dim_type.out, dst.name)
            differ = differ.align_params(m.get_space())
            if not m.intersect(differ).is_empty():
                out.add(lp)
    return frozenset(out)


@lru_cache(maxsize=64)
def loop_kinds_within(prog: Program, outer: str) -> dict[str, dict[str, str]]:
    """:func:`loop_kinds` inside one iteration of loop ``outer`` (a sweep loop every statement has first): only
    the self-dependences between instances with the same value of ``outer`` count, so a loop whose
    dependences all cross iterations of ``outer`` is ``parallel`` (right-looking LU's ``i`` at one step
    ``k``). ``outer`` itself keeps its kind. Cached per program; do not modify the returned dicts."""
    reds = reductions(prog)
    skip = frozenset(r for red in reds.values() for r in red.refs)
    full = dependences(prog).all
    plain = dependences(prog, skip_refs=skip).all if skip else full
    overall = loop_kinds(prog)
    kinds: dict[str, dict[str, str]] = {}
    for s in prog.statements:
        if outer not in s.loops:
            kinds[s.name] = overall[s.name]
            continue
        same = isl.Map(f"{{ {s.name}[{', '.join(s.loops)}] -> {s.name}[{', '.join('__' + v for v in s.loops)}] : "
                       f"__{outer} = {outer} }}")
        by_all = carried_loops(full.intersect(isl.UnionMap.from_map(same)), s)
        by_plain = carried_loops(plain.intersect(isl.UnionMap.from_map(same)), s)
        kinds[s.name] = {lp: overall[s.name][lp] if lp == outer else _kind(lp, by_plain, by_all, s.name in reds)
                         for lp in s.loops}
    return kinds


def _maps(rel: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    rel.foreach_map(out.append)
    return out
