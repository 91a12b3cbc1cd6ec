"""Privatisation: expanding temporaries along the loops within whose iterations their values live.

A temporary — an array that is neither an input nor an output of the program: a C local (scalar or
array, declared in the function or in a loop body) — that is rewritten in every iteration of an outer
loop makes every iteration of that loop depend on the previous one (anti and output dependences on the
same few elements), and so serialises the program. :func:`privatise` gives each iteration its own copy
(scalar and array expansion, as PPCG and Pluto do): the array gets extra leading dimensions, one per loop
it is expanded along, and each of its accesses indexes them with that loop's iterator minus the loop's
lower bound.

What is expanded along what:

* the accesses of a temporary ``X`` are grouped into *webs*: the statements touching ``X`` are nodes,
  joined when one's write of ``X`` is the exact source (isl dataflow, :func:`mica.affine.deps.dependences`)
  of the other's read. A web is one live range: in deriche, ``ym1`` of the first loop nest and ``ym1`` of
  the fourth are two webs;
* a web containing a read with no source (the value comes from before the program: a read before any
  write) is left alone;
* otherwise the web is expanded along each loop that encloses all its statements (same prefix of their
  2d+1 textual-order vectors) such that (a) every read's source lies in the same iteration of that loop —
  the values live within an iteration — and (b) some write of the web and some access of it touch the
  same element in different iterations of that loop — there is reuse to remove. A running sum across the
  loop fails (a); a temporary read after the loop is in a web whose statements the loop does not all
  enclose; ``tmp[i]`` already indexed by ``i`` fails (b), which also makes the pass idempotent;
* the expanded array has ``k`` new leading dimensions, ``k`` the most loops any web of it is expanded
  along; a web expanded along loops ``l_0, ..., l_{m-1}`` (outermost first) indexes them with
  ``l_p - o_p`` and pads the remaining ``k - m`` with 0, where the origin ``o_p`` is the smallest ``lb_p``
  over the array's webs — one origin for every web, so the copies of one iteration land at the same
  subscripts whichever statement writes them (:func:`_origins`); the extent of new dimension ``p`` is the
  largest ``ub_p - o_p + 1`` over the webs, with ``lb_p``/``ub_p`` the exact minimum and maximum of ``l_p``
  over the domains of the web's statements (isl's bounding box, so triangular bounds give exact extents).

* webs of one temporary in different top-level nests (none spanning both) are different variables that
  share a C name: each group of nests gets an array of its own (:func:`split_webs`; the first keeps the name,
  the others are ``{name}_{nest}``), so the operator of one nest never moves another nest's values.

What it preserves: statements (names, loops, domains, expressions, textual order, reference tags), the
names, dtypes and order of arrays, inputs, outputs and scalars — only the shapes of expanded temporaries,
the arrays a temporary is split into (in its place) and the subscripts and array names of their accesses
change. Every read gets its value from the same write instance as
before: a write and a read it feeds index the new dimensions with the same iteration, and any write that
reaches an element of the expanded array wrote the same original element, so one between the source and
the read would have been the source. The outputs are therefore unchanged (and so is the exact dataflow,
which is why a second application changes nothing and returns the program itself).

Spaces of the isl relations built here: ``flow`` ``{ S[loops] -> T[loops'] }`` (from deps: the source
instance of ``S`` writing ``X`` to the instance of ``T`` reading it); the loop-difference relation
``{ S[a0, ...] -> T[b0, ...] : a_d != b_d }`` for a common loop at depth ``d``; the same-element relation
``{ S[loops] -> T[loops'] }`` (a write of ``S`` and an access of ``T`` to one element of ``X``, the write's
access map composed with the inverse of the other's); ``live_in`` ``{ T[loops] -> X[a] }``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import islpy as isl

from .deps import dependences
from .expr import Aff
from .isl_names import imap, int_bounds
from .program import Access, Array, Program, Statement


@dataclass(frozen=True)
class Web:
    """One live range of temporary ``array``: the statements ``stmts`` whose accesses to it are linked
    by dataflow, expanded along ``loops`` (outermost first; empty if it is not expanded) whose lower and
    upper bounds over the web are ``lower``/``upper``. ``reason`` says why it is not expanded further."""

    array: str
    stmts: tuple[str, ...]
    loops: tuple[str, ...]
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    reason: str = ""


def temporaries(prog: Program) -> tuple[str, ...]:
    """Arrays that are neither inputs nor outputs of ``prog``, in declaration order."""
    io = set(prog.inputs) | set(prog.outputs)
    return tuple(a.name for a in prog.arrays if a.name not in io)


@lru_cache(maxsize=64)
def plan(prog: Program) -> dict[str, tuple[Web, ...]]:
    """Per temporary of ``prog`` that some statement accesses, its webs and what each is expanded along.

    Cached per program (programs are frozen values); do not modify the result."""
    temps = set(temporaries(prog))
    if not temps:
        return {}
    deps = dependences(prog)
    flows: list[tuple[str, str, isl.Map]] = []     # (source statement, sink statement, relation)
    for m in _maps(deps.flow):
        src, dst = m.domain().get_tuple_name(), m.range().get_tuple_name()
        if prog.statement(src).write.array in temps and not m.is_empty():
            flows.append((src, dst, m))
    live_in: set[tuple[str, str]] = set()          # (statement, array): a read of it has no source
    for m in _maps(deps.live_in):
        if not m.is_empty():
            live_in.add((m.domain().get_tuple_name(), m.range().get_tuple_name()))

    out: dict[str, tuple[Web, ...]] = {}
    for x in (a.name for a in prog.arrays if a.name in temps):
        users = [s for s in prog.statements if any(a.array == x for a in s.accesses)]
        if not users:
            continue
        parent = {s.name: s.name for s in users}

        def find(n: str) -> str:
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n
        for src, dst, _ in flows:
            if prog.statement(src).write.array == x:
                parent[find(src)] = find(dst)
        groups: dict[str, list[Statement]] = {}
        for s in users:
            groups.setdefault(find(s.name), []).append(s)
        webs = []
        for stmts in groups.values():
            names = {s.name for s in stmts}
            web_flows = [m for src, dst, m in flows
                         if src in names and dst in names and prog.statement(src).write.array == x]
            webs.append(_web(prog, x, stmts, web_flows, any((s.name, x) in live_in for s in stmts)))
        out[x] = tuple(webs)
    return out


def _maps(rel: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    rel.foreach_map(out.append)
    return out


def _web(prog: Program, x: str, stmts: list[Statement], flows: list[isl.Map], live_in: bool) -> Web:
    names = tuple(s.name for s in stmts)
    if live_in:
        return Web(x, names, (), (), (), f"a read of {x} comes from before the program")
    if any(s.domain_set.dim(isl.dim_type.param) for s in stmts):
        return Web(x, names, (), (), (), "parametric domain")
    loops, lower, upper = [], [], []
    reason = ""
    for d in range(_common_depth(stmts)):
        lp = stmts[0].loops[d]
        if any(not _same_iteration(m, d) for m in flows):
            reason = reason or f"loop {lp} carries a value of {x} from one iteration to the next"
            continue
        if not _reused_across(prog, x, stmts, d):
            continue
        bounds = [b for s in stmts if (b := int_bounds(s.domain_set, s.loops[d])) is not None]
        if not bounds:
            continue
        loops.append(lp)
        lower.append(min(b[0] for b in bounds))
        upper.append(max(b[1] for b in bounds))
    return Web(x, names, tuple(loops), tuple(lower), tuple(upper), reason)


def _common_depth(stmts: list[Statement]) -> int:
    """How many loops enclose every statement of ``stmts`` (equal 2d+1 order prefixes)."""
    depth = 0
    while all(len(s.order) > 2 * depth + 1 and len(s.loops) > depth for s in stmts) and \
            len({tuple(s.order[:2 * depth + 2]) for s in stmts}) == 1:
        depth += 1
    return depth


def _differ(m: isl.Map, d: int) -> isl.Map:
    """``{ S[a0, ...] -> T[b0, ...] : a_d != b_d }`` in the space of ``m``."""
    n_in, n_out = m.domain().dim(isl.dim_type.set), m.range().dim(isl.dim_type.set)
    a = [f"a{k}" for k in range(n_in)]
    b = [f"b{k}" for k in range(n_out)]
    return imap(f"{{ {m.domain().get_tuple_name()}[{', '.join(a)}] -> "
                f"{m.range().get_tuple_name()}[{', '.join(b)}] : a{d} != b{d} }}")


def _same_iteration(m: isl.Map, d: int) -> bool:
    """Every pair of ``m`` (a flow ``{ S -> T }``) is in one iteration of the loop at depth ``d``."""
    return m.intersect(_differ(m, d)).is_empty()


def _reused_across(prog: Program, x: str, stmts: list[Statement], d: int) -> bool:
    """Some write of ``x`` by ``stmts`` and some access to ``x`` by ``stmts`` touch one element in two
    different iterations of the loop at depth ``d`` (the same-element relation ``{ S -> T }``)."""
    for s in stmts:
        if s.write.array != x:
            continue
        w = s.access_map(s.write)
        for t in stmts:
            for a in t.accesses:
                if a.array != x:
                    continue
                same = w.apply_range(t.access_map(a).reverse())
                if not same.intersect(_differ(same, d)).is_empty():
                    return True
    return False


def _origins(webs: tuple[Web, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The origin and extent of each new leading dimension of one temporary expanded as ``webs`` say.

    The origin of dimension ``p`` is the smallest lower bound over the webs expanded along at least ``p + 1``
    loops, one for all of them: two webs along the same loops then put the copies of one iteration at the
    same subscripts (ludcmp's ``w`` of the lower part, where ``i`` starts at 1, and of the upper part, where
    it starts at 0, both become ``w[i][j]``), so an iteration's copies stay together whatever the mapping
    does with that loop. The extent is the largest upper bound minus the origin plus one."""
    k = max(len(w.loops) for w in webs)
    origin = [min(w.lower[p] for w in webs if len(w.loops) > p) for p in range(k)]
    ext = [1] * k
    for w in webs:
        for p, hi in enumerate(w.upper):
            ext[p] = max(ext[p], hi - origin[p] + 1)
    return tuple(origin), tuple(ext)


def split_webs(prog: Program, webs: dict[str, tuple[Web, ...]]) -> dict[str, tuple[str, tuple[Web, ...]]]:
    """The webs of :func:`plan` regrouped into the arrays privatisation makes: ``{name: (temporary, webs)}``.
    Webs of one temporary that lie in different top-level nests (and no web joins, by spanning both) are
    different variables that happen to share a C name — ludcmp's ``w`` of the factorisation and of each
    substitution — and get arrays of their own: the group of webs in the first nest keeps the name, the others
    are named ``{temporary}_{nest}`` (made unique), so an operator reading one never moves the other's
    values. Each web's ``array`` is its new array's name."""
    taken = {a.name for a in prog.arrays}
    out: dict[str, tuple[str, tuple[Web, ...]]] = {}
    for x, ws in webs.items():
        nests = [{int(prog.statement(st).order[0]) for st in w.stmts} for w in ws]
        group = list(range(len(ws)))

        def find(k: int) -> int:
            while group[k] != k:
                k = group[k]
            return k
        for a in range(len(ws)):
            for b in range(a):
                if nests[a] & nests[b]:
                    group[find(a)] = find(b)
        members: dict[int, list[int]] = {}
        for k in range(len(ws)):
            members.setdefault(find(k), []).append(k)
        for n, ks in enumerate(sorted(members.values(), key=lambda ks: min(min(nests[k]) for k in ks))):
            name = x
            if n:
                name = f"{x}_{min(min(nests[k]) for k in ks)}"
                while name in taken:
                    name += "_"
                taken.add(name)
            out[name] = (x, tuple(replace(ws[k], array=name) for k in ks))
    return out


def privatise(prog: Program) -> Program:
    """``prog`` with every temporary split into one array per group of top-level nests its webs touch
    (:func:`split_webs`) and expanded along the loops within whose iterations its values live (see the module
    docstring for the rule, what is preserved and the isl spaces). Returns ``prog`` itself when nothing
    changes, so ``privatise(privatise(p)) is privatise(p)``."""
    groups = split_webs(prog, plan(prog))
    if all(name == x and not any(w.loops for w in ws) for name, (x, ws) in groups.items()):
        return prog
    extra: dict[str, tuple[int, ...]] = {}
    index: dict[tuple[str, str], tuple[Aff, ...]] = {}      # (new array, statement) -> new leading subscripts
    where: dict[tuple[str, str], str] = {}                  # (temporary, statement) -> its new array
    for name, (x, ws) in groups.items():
        for w in ws:
            for sname in w.stmts:
                where[(x, sname)] = name
        if not any(w.loops for w in ws):
            continue
        origin, ext = _origins(ws)
        extra[name] = ext
        k = len(ext)
        for w in ws:
            for sname in w.stmts:
                s = prog.statement(sname)
                depth = {lp: d for d, lp in enumerate(s.loops)}
                lead = [Aff.var(s.loops[depth[lp]]) + (-lo) for lp, lo in zip(w.loops, origin)]
                index[(name, sname)] = tuple(lead) + (Aff(),) * (k - len(lead))
    # The arrays a temporary is split into take its place, in the order of their nests.
    arrays = []
    for a in prog.arrays:
        mine = [name for name, (x, _) in groups.items() if x == a.name] or [a.name]
        arrays += [Array(name, extra.get(name, ()) + a.shape, a.dtype) for name in mine]

    def moved(s: Statement, a: Access) -> Access:
        name = where.get((a.array, s.name), a.array)
        lead = index.get((name, s.name), ())
        return a if name == a.array and not lead else Access(a.ref, name, lead + a.index)
    stmts = tuple(replace(s, write=moved(s, s.write), reads=tuple(moved(s, a) for a in s.reads))
                  for s in prog.statements)
    return prog.replace(arrays=tuple(arrays), statements=stmts)
