"""Phase loops: a sequential time loop around several loop nests, mapped operator by operator.

ADI's time loop runs a column sweep (rows of ``p``, ``q`` per column ``i``, reading ``u`` down its columns)
and then a row sweep (reading ``v`` along its rows, writing ``u`` by rows). The two sweeps want different
layouts of the same arrays, so no single mapping of the whole nest spreads both, and the whole nest used to
run on one core (or not at all, when its arrays exceed one core's SRAM). Taken off, the loop leaves its body:
two nests that the operator-level search maps one after another, each in its own layout, with the layout
changes between them; run ``count`` times in a loop around those operators (a *phase loop*,
:attr:`mica.meshir.ir.Loop.phase`), that body computes what the nest computes.

A top-level nest qualifies (:func:`repeat_candidates`) when its outermost loop ``t``

* runs a constant range ``lo .. lo + count - 1`` (``count >= 2``) for every statement of the nest, and no
  bound of an inner loop depends on it: each statement's domain is the range times the domain of its other
  loops;
* appears nowhere else: no subscript, value (``(float)t``) or runtime guard reads it;
* has a body of at least two statements or nests (one nest is mapped whole, as before).

Then running the body ``count`` times in textual order executes exactly the instances of the nest in its
order, so every dependence of the program holds however the body's operators are mapped, as long as each
iteration's operators respect the body's own dependences (checked like any operators': a dependence that
crosses iterations goes from one iteration to a later one, which the loop runs later).

Spaces: statement ``S[t, l...]`` becomes ``S[l...]`` with the domain ``{ S[l...] : exists t: S[t, l...] }``;
its original-schedule vector ``(k, t, j, ...)`` becomes ``(k', ...)`` where ``k'`` numbers ``(k, j)`` among
the program's top-level positions (each statement or nest of the body becomes a top-level nest of its own).
Arrays, accesses and expressions are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import islpy as isl

from .expr import Index
from .isl_names import iset
from .program import Program, Statement


@dataclass(frozen=True)
class RepeatLoop:
    """Top-level nest ``nest`` (its position ``order[0]``) runs its outermost loop ``loop`` over
    ``lo .. lo + count - 1``; ``statements`` are the names of the nest's statements."""

    nest: int
    loop: str
    lo: int
    count: int
    statements: tuple[str, ...]


def _uses(stmt: Statement, loop: str) -> bool:
    """Whether ``stmt`` reads the value of ``loop`` anywhere but in its own domain's range."""
    if any(loop in ix.names for a in stmt.accesses for ix in a.index):
        return True
    if any(isinstance(e, Index) and loop in e.aff.names for e in stmt.expr.walk()):
        return True
    return bool(stmt.guard)


def _range_and_rest(stmt: Statement) -> tuple[int, int, isl.Set] | None:
    """``(lo, hi, rest)`` when ``stmt``'s domain is ``lo <= t <= hi`` times ``rest`` (its other loops, in the
    space ``S[l...]``) for its outermost loop ``t`` with constant bounds; None otherwise."""
    dom = stmt.domain_set
    if dom.dim(isl.dim_type.param):
        return None
    t_only = dom.project_out(isl.dim_type.set, 1, dom.dim(isl.dim_type.set) - 1)
    if t_only.is_empty() or not t_only.is_bounded():
        return None
    lo, hi = t_only.dim_min_val(0), t_only.dim_max_val(0)
    if not (lo.is_int() and hi.is_int()):
        return None
    lo, hi = lo.to_python(), hi.to_python()
    if t_only.count_val().to_python() != hi - lo + 1:
        return None                                  # a strided or holed range
    rest = dom.project_out(isl.dim_type.set, 0, 1)
    product = rest.insert_dims(isl.dim_type.set, 0, 1).set_tuple_name(stmt.name)
    product = product.set_dim_name(isl.dim_type.set, 0, stmt.loops[0])
    for k, name in enumerate(stmt.loops[1:], start=1):
        product = product.set_dim_name(isl.dim_type.set, k, name)
    cons = iset(f"{{ {stmt.name}[{', '.join(stmt.loops)}] : {lo} <= {stmt.loops[0]} <= {hi} }}")
    if not product.intersect(cons).is_equal(dom):
        return None
    return lo, hi, rest


@lru_cache(maxsize=64)
def repeat_candidates(prog: Program) -> tuple[RepeatLoop, ...]:
    """The top-level nests of ``prog`` whose outermost loop can run around their body's operators (see the
    module docstring), in program order; cached per (frozen) program. Changes nothing."""
    nests: dict[object, list[Statement]] = {}
    for s in prog.statements:
        nests.setdefault(s.order[0] if s.order else None, []).append(s)
    out = []
    for key, stmts in nests.items():
        if key is None or any(len(s.order) < 3 or not s.loops for s in stmts):
            continue
        loop = stmts[0].loops[0]
        if any(s.loops[0] != loop or s.order[1] != loop or _uses(s, loop) for s in stmts):
            continue
        if len({s.order[2] for s in stmts}) < 2:
            continue
        ranges = [_range_and_rest(s) for s in stmts]
        if any(r is None for r in ranges) or len({r[:2] for r in ranges}) != 1:
            continue
        lo, hi, _ = ranges[0]
        if hi - lo + 1 < 2:
            continue
        out.append(RepeatLoop(key, loop, lo, hi - lo + 1, tuple(s.name for s in stmts)))
    return tuple(out)


@lru_cache(maxsize=64)
def repeated_program(prog: Program, rep: RepeatLoop) -> Program:
    """``prog`` with the loop of ``rep`` taken off its nest: the body's statements and nests become top-level
    nests of their own, run once (see the module docstring for the spaces). Arrays, accesses, expressions,
    inputs and outputs are unchanged; the program computes what one iteration of the loop computes."""
    inside = set(rep.statements)

    def key(s: Statement) -> tuple:
        if s.name in inside:
            return (s.order[0], s.order[2])
        return (s.order[0] if s.order else 0, -1)
    rank = {k: n for n, k in enumerate(sorted({key(s) for s in prog.statements}))}
    stmts = []
    for s in prog.statements:
        if s.name not in inside:
            stmts.append(replace(s, order=(rank[key(s)],) + tuple(s.order[1:])) if s.order else s)
            continue
        _, _, rest = _range_and_rest(s)
        loops = s.loops[1:]
        text = rest.set_tuple_name(s.name)
        for k, name in enumerate(loops):
            text = text.set_dim_name(isl.dim_type.set, k, name)
        stmts.append(replace(s, loops=loops, domain=str(text), order=(rank[key(s)],) + tuple(s.order[3:])))
    return replace(prog, statements=tuple(stmts))
