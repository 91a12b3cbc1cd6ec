"""Recurrence expansion: a temporary that carries a value from one iteration of a loop to the next gets one
element per iteration, so the value can travel between the cores that run neighbouring blocks of the loop.

After privatisation (:mod:`mica.affine.privatise`) deriche's first pass reads

    for i: { xm1[i] = 0; for j: { y1[i][j] = a1*imgIn[i][j] + a2*xm1[i] + ...; xm1[i] = imgIn[i][j]; } }

``xm1[i]`` lives across iterations of ``j``: one element, rewritten every iteration, so every block of ``j``
depends on the element another block wrote, and no plan can put two blocks of ``j`` on two cores (the write
would land on the core that does not own it). :func:`expand_recurrences` rewrites such a temporary ``X`` as
``X_r`` with one more (last) dimension along the carrying loop ``L``:

* the one statement ``U`` in ``L``'s body that writes ``X[w]`` writes ``X_r[w, L - lo]`` (the value after
  iteration ``L``);
* a read of ``X[w]`` in ``L``'s body after ``U`` reads ``X_r[w, L - lo]``;
* a statement of the body that reads ``X[w]`` before ``U`` is split in two: its first iteration of ``L``
  (``L`` at its lower bound, at its upper bound for a loop that counts down) keeps reading ``X[w]``, which
  the statements before the loop (the initialisations) wrote; the other iterations read ``X_r[w, L' - lo]``
  with ``L'`` the previous iteration. The first-iteration copy is named ``<name>_0`` (its references too) and
  comes right before the statement in the program.

What qualifies: ``X`` is a temporary (neither input nor output); exactly one statement inside ``L`` writes it
(``U``, whose subscript does not involve ``L`` and which does not read ``X``: a reduction stays one); every
other write of ``X`` is a statement of the enclosing loops before ``L`` (same subscript); every read of ``X`` is
in ``L``'s body (same loops and textual prefix as ``U``, same subscript), and ``U`` and the readers have one
domain. The exact dataflow (isl, :func:`mica.affine.deps.dependences`) must then say what the rewrite assumes:
each read after ``U`` takes the value ``U`` wrote in the same iteration; each read before ``U`` takes it from
``U`` in the previous iteration, or at the first iteration from an initialisation. Otherwise ``X`` is left as it
is.

What it preserves: every read gets its value from the same write instance as before (the dataflow checked
above), so the outputs are unchanged; statement names, orders and expressions stay, but for the new
first-iteration copies; arrays keep their order, ``X_r`` follows ``X``. Returns the program itself when
nothing qualifies.

Spaces: statement domains ``{ S[loops] }``; the flow ``{ U[loops] -> R[loops] }`` of ``X``; the previous-iteration
relation ``{ U[.., l'] -> R[.., l] : l' = l - 1 }`` (``l + 1`` counting down).

Public API: :func:`expand_recurrences`, :func:`recurrences`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import lru_cache

import islpy as isl

from .deps import _maps, dependences
from .expr import Aff, Const, Expr, Read
from .isl_names import imap, int_bounds, rename_dims
from .pieces import _renamed
from .privatise import temporaries
from .program import Access, Array, Program, Statement


@dataclass(frozen=True)
class Recurrence:
    """Temporary ``array`` carried by loop ``loop`` of its update ``update`` (lowest value ``lo``, ``extent``
    iterations, counting down when ``down``); ``before``: the statements reading it before the update (split),
    ``after``: those reading it after."""

    array: str
    loop: str
    update: str
    lo: int
    extent: int
    down: bool
    before: tuple[str, ...]
    after: tuple[str, ...]
    inits: tuple[str, ...] = ()
    value: Const | None = None      # the one initialisation's value, when it is a constant


def _same_body(a: Statement, b: Statement) -> bool:
    """``a`` and ``b`` sit in one innermost loop body (same loops, same textual prefix)."""
    return a.loops == b.loops and tuple(a.order[:-1]) == tuple(b.order[:-1]) and len(a.order) == 2 * len(a.loops) + 1


def _step_map(u: Statement, r: Statement, shift: int) -> isl.Map:
    """``{ U[o.., l'] -> R[o.., l] : l' = l + shift }`` (the loops of both are the same names)."""
    *outer, lp = u.loops
    src = [*outer, "lp_"]
    return imap(f"{{ {u.name}[{', '.join(src)}] -> {r.name}[{', '.join(u.loops)}] : lp_ = {lp} + ({shift}) }}")


def _candidate(prog: Program, x: str, web: list[Statement], flow: list[tuple[str, str, isl.Map]]
               ) -> Recurrence | None:
    """The recurrence of temporary ``x`` whose live range (web) is the statements ``web``, or None."""
    writers = [s for s in web if s.write.array == x]
    readers = [s for s in web if any(a.array == x for a in s.reads)]
    inner = [s for s in writers if s.loops and len(s.loops) == max(len(w.loops) for w in writers)]
    if len(inner) != 1 or not readers:
        return None
    u = inner[0]
    lp = u.loops[-1]
    w = u.write.index
    if any(ix.coeff(lp) for ix in w) or any(a.array == x for a in u.reads):
        return None
    if u.domain_set.dim(isl.dim_type.param):
        return None
    depth = len(u.loops) - 1
    for s in writers:
        if s is u:
            continue
        # An initialisation: in the loops around L, before L, same subscript.
        if s.loops != u.loops[:-1] or tuple(s.order[:2 * depth + 1][:-1]) != tuple(u.order[:2 * depth]) \
                or len(s.order) != 2 * depth + 1 or s.order[-1] >= u.order[2 * depth] or s.write.index != w:
            return None
    inits = [s for s in writers if s is not u]
    before, after = [], []
    u_dom = u.domain_set.reset_tuple_id()
    for r in readers:
        if r is u or not _same_body(r, u) or any(a.index != w for a in r.reads if a.array == x):
            return None
        if not r.domain_set.reset_tuple_id().is_equal(u_dom):
            return None
        (before if r.order[-1] < u.order[-1] else after).append(r)
    down = str(u.order[-2]).startswith("-")
    bounds = int_bounds(u.domain_set, lp)
    if bounds is None:
        return None
    lo, hi = bounds
    # The exact dataflow must be what the rewrite assumes.
    sources = {(src, dst): m for src, dst, m in flow}
    shift = 1 if down else -1
    for r in readers:
        got = sources.get((u.name, r.name))
        got = got if got is not None else isl.Map.empty(_step_map(u, r, 0).get_space())
        if r in after:
            want = _step_map(u, r, 0).intersect_domain(u.domain_set).intersect_range(r.domain_set)
        else:
            want = _step_map(u, r, shift).intersect_domain(u.domain_set).intersect_range(r.domain_set)
        if not got.is_equal(want):
            return None
        if r in before:
            first = r.domain_set.subtract(want.range())
            fed = isl.Set.empty(first.get_space())
            for s in inits:
                m = sources.get((s.name, r.name))
                if m is not None:
                    fed = fed.union(m.range())
            if not first.is_subset(fed):
                return None
    value = None
    if len(inits) == 1 and isinstance(inits[0].expr, Const) and _exact(inits[0].expr, prog.array(x).dtype):
        value = inits[0].expr
    return Recurrence(x, lp, u.name, lo, hi - lo + 1, down, tuple(r.name for r in before),
                      tuple(r.name for r in after), tuple(s.name for s in inits), value)


def _exact(c: Const, dtype: str) -> bool:
    """``c``'s value is stored unchanged in an element of ``dtype`` (an integer value of at most 11 bits is,
    in every floating type)."""
    v = c.value
    return float(v).is_integer() and abs(v) < 2048


@lru_cache(maxsize=64)
def recurrences(prog: Program) -> tuple[Recurrence, ...]:
    """The temporaries of ``prog`` that :func:`expand_recurrences` expands, in declaration order. Cached per
    program; pure."""
    temps = set(temporaries(prog))
    if not temps:
        return ()
    deps = dependences(prog)
    flow = [(m.domain().get_tuple_name(), m.range().get_tuple_name(), m) for m in _maps(deps.flow)
            if not m.is_empty()]
    out = []
    for a in prog.arrays:
        if a.name not in temps:
            continue
        x_flow = [(s, d, m) for s, d, m in flow if prog.statement(s).write.array == a.name]
        for web in _webs(prog, a.name, x_flow):
            rec = _candidate(prog, a.name, web, x_flow)
            if rec is not None:
                out.append(rec)
    # A statement split for two temporaries must be split the same way: one loop per program part.
    split: dict[str, str] = {}
    kept = []
    for rec in out:
        if any(split.get(s, rec.loop) != rec.loop for s in rec.before):
            continue
        split.update({s: rec.loop for s in rec.before})
        kept.append(rec)
    return tuple(kept)


def _webs(prog: Program, x: str, flow: list[tuple[str, str, isl.Map]]) -> list[list[Statement]]:
    """The live ranges of ``x``: its statements, joined when one's write is the source of the other's read."""
    users = [s for s in prog.statements if any(a.array == x for a in s.accesses)]
    parent = {s.name: s.name for s in users}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n
    for src, dst, _ in flow:
        if src in parent and dst in parent:
            parent[find(src)] = find(dst)
    groups: dict[str, list[Statement]] = {}
    for s in users:
        groups.setdefault(find(s.name), []).append(s)
    return list(groups.values())


def _new_name(taken: set[str], base: str) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}{k}", k + 1
    taken.add(name)
    return name


def expand_recurrences(prog: Program) -> Program:
    """``prog`` with every temporary :func:`recurrences` finds expanded along its carrying loop (module
    docstring); ``prog`` itself when there is none."""
    recs = recurrences(prog)
    if not recs:
        return prog
    new_arrays: dict[Recurrence, Array] = {}
    taken = {a.name for a in prog.arrays}
    for rec in recs:
        a = prog.array(rec.array)
        new_arrays[rec] = Array(_new_name(taken, f"{rec.array}_r"), a.shape + (rec.extent,), a.dtype)
    by_update = {rec.update: rec for rec in recs}
    first_of: dict[str, list[Recurrence]] = {}
    current: dict[str, list[Recurrence]] = {}
    for rec in recs:
        for s in rec.before:
            first_of.setdefault(s, []).append(rec)
        for s in rec.after:
            current.setdefault(s, []).append(rec)

    def moved(a: Access, rec: Recurrence, lp: str, shift: int) -> Access:
        return Access(a.ref, new_arrays[rec].name, a.index + (Aff.var(lp) + (shift - rec.lo),))

    stmts: list[Statement] = []
    for s in prog.statements:
        write = s.write
        if s.name in by_update:
            rec = by_update[s.name]
            write = moved(write, rec, rec.loop, 0)
        reads = list(s.reads)
        for rec in current.get(s.name, []):
            reads = [moved(a, rec, rec.loop, 0) if a.array == rec.array else a for a in reads]
        recs_here = first_of.get(s.name, [])
        if not recs_here:
            stmts.append(replace(s, write=write, reads=tuple(reads)))
            continue
        lp = recs_here[0].loop
        down = recs_here[0].down
        prev = _step_map(s, s, 1 if down else -1)      # { S[.., l'] -> S[.., l] : l' is the iteration before l }
        rest = rename_dims(prev.intersect_domain(s.domain_set).range(), "set", s.loops).intersect(s.domain_set)
        first = s.domain_set.subtract(rest)
        later = list(reads)
        for rec in recs_here:
            later = [moved(a, rec, lp, 1 if down else -1) if a.array == rec.array else a for a in later]
        name0 = f"{s.name}_0"
        refs = {a.ref: name0 + a.ref[len(s.name):] if a.ref.startswith(s.name) else f"{name0}_{a.ref}"
                for a in (write, *reads)}
        if not first.is_empty():
            # The first iteration reads what the initialisations wrote; a constant one is read as the
            # constant (the initialisation then runs for no one and goes: a pass that counts down no
            # longer waits for a statement placed at its other end).
            consts = {a.ref: rec.value for rec in recs_here for a in reads
                      if a.array == rec.array and rec.value is not None}
            stmts.append(replace(
                s, name=name0, domain=str(first.set_tuple_name(name0)),
                write=Access(refs[write.ref], write.array, write.index),
                reads=tuple(Access(refs[a.ref], a.array, a.index) for a in reads if a.ref not in consts),
                expr=_renamed(_constants(s.expr, consts), refs)))
        stmts.append(replace(s, domain=str(rest), write=write, reads=tuple(later)))
    read = {a.array for s in stmts for a in s.reads}
    dead = {i for rec in recs if rec.value is not None and rec.array not in read for i in rec.inits}
    stmts = [s for s in stmts if s.name not in dead]
    used = {a.array for s in stmts for a in s.accesses}
    gone = {rec.array for rec in recs if rec.value is not None} - used
    arrays: list[Array] = []
    for a in prog.arrays:
        if a.name not in gone:
            arrays.append(a)
        arrays.extend(new_arrays[rec] for rec in recs if rec.array == a.name)
    return prog.replace(arrays=tuple(arrays), statements=tuple(stmts))


def _constants(e: Expr, consts: dict[str, Const]) -> Expr:
    """``e`` with the reads ``consts`` names replaced by their constants."""
    if isinstance(e, Read):
        return consts.get(e.ref, e)
    changes = {}
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, Expr):
            changes[f.name] = _constants(v, consts)
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            changes[f.name] = tuple(_constants(x, consts) for x in v)
    return replace(e, **changes) if changes else e
