"""Loop alignment: the main loop nest rewritten so that another loop of its deepest statement runs outermost.

In the program's own order the statements of a nest may not line up: trisolv's ``x[i] -= L[i][j]*x[j]``
is parallel over ``i`` only in the column-oriented order (step ``j``: ``x[j] /= L[j][j]`` on the owner of
``x[j]``, then every ``x[i] -= L[i][j]*x[j]`` with ``i > j``). :func:`alignments` finds such orders by a
small search over loop alignments and :func:`aligned_program` writes one as a new frozen :class:`Program`
whose statements are re-indexed:

* the *main* statement (the deepest, the last among equals) gets loop ``o`` outermost, its other loops
  after it in their original order;
* every other statement of the main statement's top-level nest either aligns one of its loops with ``o``
  (renamed ``o``; a loop of its own already named ``o`` gets a fresh name), or is hoisted out of the nest,
  before it or after it, keeping its own loops and their order;
* inside one iteration of ``o`` the aligned statements run one after another (each in its own inner nest),
  in an order that puts every dependence between two of them at the same ``o`` forward (a topological order
  of those dependences; none when they form a cycle);
* the other top-level nests keep their places.

What it preserves: every flow, anti and output dependence of the original program (exact, from
:func:`mica.affine.deps.dependences`) goes forward under the new order — isl proves it for every
alignment returned (:func:`_respects`). Each memory location is therefore written and read by the same
instances in the same order, so every value, floating-point rounding included, is the one the original
program computes (a reduction's updates of one element stay in their original order: they are output
dependences of one another). Programs with runtime parameters or guards are left alone.

Spaces: a statement's new schedule is ``{ S[loops] -> [n, g, o, p, l1, 0, l2, 0, ...] }`` (``n``: its
top-level nest, ``g``: 0 hoisted before, 1 aligned, 2 hoisted after, ``o``: the aligned loop, ``p``: its
position inside an iteration of ``o``), padded with zeros; dependences are ``{ S[loops] -> T[loops'] }``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
import heapq
from itertools import combinations

import islpy as isl

from .deps import COMBINE_OPS, dependences, memory_dependences, reductions
from .expr import INT_DTYPES, Aff, Bin, Expr, Index, Read
from .isl_names import iset, rename_dims, umap
from .program import Access, Program, Statement, main_statement

#: Most combinations of per-statement choices checked whole per outer loop (each one an isl check), and most
#: combinations looked at (pruned pairwise first, :class:`_Pairs`).
MAX_COMBINATIONS = 64
MAX_PAIRED = 4096

BEFORE, AFTER = "<", ">"


@dataclass(frozen=True)
class Alignment:
    """One way to run the main nest with loop ``loop`` of its main statement outermost: per statement of the
    nest ``(name, choice)``, the statement's loop aligned with ``loop`` or :data:`BEFORE` / :data:`AFTER`
    (hoisted out of the nest); ``order`` the aligned statements inside one iteration, first to last."""

    loop: str
    choices: tuple[tuple[str, str], ...]
    order: tuple[str, ...]
    down: bool = False
    reordered: tuple[str, ...] = ()

    def describe(self) -> str:
        """The alignment in words, for reasons and reports."""
        parts = []
        for name, c in self.choices:
            parts.append(f"{name} hoisted {'before' if c == BEFORE else 'after'} the nest" if c in (BEFORE, AFTER)
                         else f"{name} by its loop {c}")
        way = ", counting down" if self.down else ""
        reorder = (f"; the updates of {', '.join(self.reordered)}'s reduction in another order"
                   if self.reordered else "")
        return (f"loop {self.loop} outermost{way} ({', '.join(parts)}; inside an iteration: "
                f"{', '.join(self.order)}{reorder})")


@lru_cache(maxsize=64)
def alignments(prog: Program, priority: str | None = None, nest: int | None = None) -> tuple[Alignment, ...]:
    """The legal alignments of ``prog``'s main nest worth searching, for each loop of the main statement that
    is not already outermost: the first legal combination under each of :data:`PRIORITIES` (fewest hoisted
    statements, then most statements aligned by their loop of the same name — the same role in the source;
    and the other way round), each once. Both matter: trisolv's column sweep hoists one statement, while
    ludcmp's right-looking order must hoist its privatised temporary's initialisations so that every update
    runs at the step of its ``k``. With ``priority``, only that one's.

    The outer loop runs upwards, or — when no combination is legal that way — downwards (a back
    substitution's column sweep runs from the last column to the first); the other loops keep the
    directions the source gives them. ``nest``: the top-level nest to align (its first schedule
    coordinate; default the main statement's), its deepest statement (the last among equals) taking the
    main statement's part.

    Empty when the program has runtime parameters or guards, or when no loop can be made outermost.
    Cached per program; changes nothing."""
    if prog.runtime or any(s.guard for s in prog.statements):
        return ()
    if nest is None:
        nest = main_statement(prog).order[0]
    stmts = [s for s in prog.statements if s.order[:1] == (nest,)]
    if not stmts:
        return ()
    main = main_statement(prog.replace(statements=tuple(stmts)))
    if len(main.loops) < 2:
        return ()
    others = [s for s in stmts if s is not main]
    exact = dependences(prog).all
    loose = _reassociable(prog, stmts, exact)
    out: list[Alignment] = []
    for loop in main.loops[1:]:
        for p in PRIORITIES if priority is None else (priority,):
            for deps, down in ((exact, False), (exact, True), (loose[1], False), (loose[1], True)):
                if deps is None:
                    continue
                pairs = _Pairs(deps, down)
                # A statement's loop of the same name first, hoisting last; only the choices that agree with
                # the main statement's (pairwise, on the outer loop alone).
                options = [[c for c in sorted(s.loops, key=lambda lp: lp != loop) + [BEFORE, AFTER]
                            if pairs.agree(s, c, main, loop)] for s in others]
                if not all(options):
                    continue
                found = _first_legal(prog, stmts, main, others, options, loop, deps, pairs, p, down)
                if found is not None and deps is not exact:
                    found = replace(found, reordered=loose[0])
                if found is not None:
                    if found not in out:
                        out.append(found)
                    break
    return tuple(out)


def _reassociable(prog: Program, stmts: list[Statement], deps: isl.UnionMap
                  ) -> tuple[tuple[str, ...], isl.UnionMap | None]:
    """The reductions of ``stmts`` whose updates may run in another order (``+``, ``*``, ``max``, ``min``: not a
    (value, index) pair, whose tie rule is an order) and ``deps`` without their dependences from one update to
    another — the same freedom a reduction combined across cores takes (:func:`mica.affine.deps.loop_kinds`
    calls their loops ``reduction``). A reduction's expression never reads its accumulator's array, so its
    only dependences on itself are those of the accumulation. ``((), None)`` when there is none."""
    reds = reductions(prog)
    names = tuple(s.name for s in stmts if (s.name in reds and reds[s.name].partner is None
                                            and reds[s.name].op in COMBINE_OPS) or _subtracts(prog, s))
    if not names:
        return (), None
    # Exact dependences go to and from the last and first updates of a chain only: those of the reductions
    # are taken memory-based instead (every earlier access to the element), which keeps an initialisation
    # before every update and a use after every one once the updates are free to move.
    every = memory_dependences(prog)
    for n in names:
        st = next(s for s in stmts if s.name == n)
        dom = isl.UnionSet(st.domain_set)
        mine = deps.intersect_domain(dom).union(deps.intersect_range(dom))
        theirs = every.intersect_domain(dom).union(every.intersect_range(dom))
        deps = deps.subtract(mine).union(theirs)
    for n in names:
        st = next(s for s in stmts if s.name == n)
        own = isl.Map(f"{{ {n}[{', '.join(st.loops)}] -> {n}[{', '.join(st.loops)}] }}").get_space()
        deps = deps.subtract(isl.UnionMap.from_map(every.extract_map(own)))
    return names, deps


def _subtracts(prog: Program, s: Statement) -> bool:
    """``s`` is ``X[f] = X[f] - e`` with ``e`` not reading ``X``'s array, ``X`` floating-point: a sum of ``-e``
    terms (a substitution's ``w -= A[i][j]*x[j]``; an integer ``X`` may truncate a floating ``e`` at every
    step, which does not re-associate)."""
    if prog.array(s.write.array).dtype in INT_DTYPES:
        return False
    e = s.expr
    if not (isinstance(e, Bin) and e.op == "-" and isinstance(e.lhs, Read)):
        return False
    acc = s.access(e.lhs.ref)
    return (acc.array == s.write.array and acc.index == s.write.index
            and all(s.access(r).array != s.write.array for r in e.rhs.refs()))


#: The orders in which :func:`alignments` tries the combinations of choices: by (statements hoisted,
#: statements aligned by a loop not named like the outer one), and by the same two the other way round.
PRIORITIES = ("hoisted", "renamed")


def _first_legal(prog: Program, nest: list[Statement], main: Statement, others: list[Statement],
                 options: list[list[str]], loop: str, deps: isl.UnionMap, pairs: "_Pairs",
                 priority: str, down: bool = False) -> Alignment | None:
    """The first combination of ``options`` (one choice per statement of ``others``), cheapest first under
    ``priority`` (:data:`PRIORITIES`), that :func:`_checked` accepts with ``main`` by ``loop`` (counting
    down with ``down``); at most
    :data:`MAX_COMBINATIONS` pairwise-agreeing ones are checked whole. None when none is legal."""
    def cost(x: str) -> tuple[bool, bool]:
        hoisted, renamed = x in (BEFORE, AFTER), x != loop
        return (hoisted, renamed) if priority == "hoisted" else (renamed, hoisted)
    checked = 0
    for combo in _cheapest_first(options, cost, MAX_PAIRED):
        if not all(pairs.agree(a, ca, b, cb) for (a, ca), (b, cb) in combinations(zip(others, combo), 2)):
            continue
        choices = dict(zip((s.name for s in others), combo))
        choices[main.name] = loop
        found = _checked(prog, nest, choices, loop, deps, down)
        if found is not None:
            return found
        checked += 1
        if checked >= MAX_COMBINATIONS:
            return None
    return None


class _Pairs:
    """Whether two statements' choices agree on the outer loop alone, kept per pair of choices (an explicitly
    mutable cache for one :func:`alignments` call): every dependence between them goes from a group (hoisted
    before, aligned, hoisted after) to the same or a later one, and between two aligned statements from an
    iteration of the outer loop to the same or a later one (with ``down``, the outer loop counting down: the
    same or a lower value). A necessary condition of the whole check (:func:`_respects`), cheap enough to
    prune most combinations before it."""

    def __init__(self, deps: isl.UnionMap, down: bool = False):
        self.deps = deps
        self.down = down
        self.kept: dict[tuple, bool] = {}

    def agree(self, a: Statement, ca: str, b: Statement, cb: str) -> bool:
        key = (a.name, ca, b.name, cb)
        if key not in self.kept:
            self.kept[key] = self.kept[(b.name, cb, a.name, ca)] = (
                self._forward(a, ca, b, cb) and self._forward(b, cb, a, ca))
        return self.kept[key]

    def _forward(self, a: Statement, ca: str, b: Statement, cb: str) -> bool:
        d = self.deps.extract_map(isl.Map(f"{{ {a.name}[{', '.join(a.loops)}] -> {b.name}[{', '.join(b.loops)}] }}")
                                  .get_space())
        if d.is_empty():
            return True
        ga, gb = _group(ca), _group(cb)
        if ga != gb:
            return ga < gb
        if ga != 1:
            return True               # both hoisted to the same side: their original order, which is legal
        outer = d.apply_domain(_outer(a, ca)).apply_range(_outer(b, cb))
        return outer.is_subset(isl.Map("{ [p] -> [q] : p >= q }" if self.down else "{ [p] -> [q] : p <= q }"))


def _group(choice: str) -> int:
    return 0 if choice == BEFORE else 2 if choice == AFTER else 1


def _cheapest_first(options: list[list[str]], cost, limit: int):
    """At most ``limit`` combinations (one choice per list of ``options``, each list cheapest first) in order
    of increasing summed ``cost`` (a tuple per choice), without building the whole product (a nest of twenty
    statements has billions)."""
    def total(ix):
        parts = [cost(options[k][i]) for k, i in enumerate(ix)]
        return tuple(map(sum, zip(*parts))) if parts else ()
    start = (0,) * len(options)
    heap, seen = [(total(start), start)], {start}
    for _ in range(limit):
        if not heap:
            return
        _, ix = heapq.heappop(heap)
        yield tuple(options[k][i] for k, i in enumerate(ix))
        for k in range(len(ix)):
            if ix[k] + 1 < len(options[k]):
                nxt = ix[:k] + (ix[k] + 1,) + ix[k + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (total(nxt), nxt))


def _checked(prog: Program, nest: list[Statement], choices: dict[str, str], loop: str,
             deps: isl.UnionMap, down: bool = False) -> Alignment | None:
    """The alignment ``choices`` (statement -> aligned loop or BEFORE/AFTER) when an order of the aligned
    statements inside an iteration exists and the whole new schedule respects ``deps``; else None."""
    aligned = [s for s in nest if choices[s.name] not in (BEFORE, AFTER)]
    order = _inner_order(aligned, choices, deps)
    if order is None:
        return None
    sched = _schedule(prog, choices, order, down)
    if not _respects(deps, sched):
        return None
    return Alignment(loop, tuple((s.name, choices[s.name]) for s in nest), order, down)


def _outer(stmt: Statement, loop: str) -> isl.Map:
    """``{ S[loops] -> [loop] }`` on the statement's domain."""
    return isl.Map(f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> [{loop}] }}").intersect_domain(stmt.domain_set)


def _inner_order(aligned: list[Statement], choices: dict[str, str], deps: isl.UnionMap) -> tuple[str, ...] | None:
    """The aligned statements in an order that runs, inside one iteration of the outer loop, the source of
    every dependence between two of them before its sink (textual order among the ready ones); None when
    those dependences form a cycle through two statements."""
    outer = {s.name: _outer(s, choices[s.name]) for s in aligned}
    same = isl.Map("{ [a] -> [b] : a = b }")
    edges: dict[str, set[str]] = {s.name: set() for s in aligned}
    for s in aligned:
        for t in aligned:
            if s is t:
                continue
            d = deps.extract_map(isl.Map(f"{{ {s.name}[{', '.join(s.loops)}] -> {t.name}[{', '.join(t.loops)}] }}")
                                 .get_space())
            if d.is_empty():
                continue
            if not d.apply_domain(outer[s.name]).apply_range(outer[t.name]).intersect(same).is_empty():
                edges[s.name].add(t.name)
    done: list[str] = []
    left = [s.name for s in aligned]
    while left:
        ready = [n for n in left if not any(n in edges[m] for m in left if m != n)]
        if not ready:
            return None
        done.append(ready[0])
        left.remove(ready[0])
    return tuple(done)


def _vector(stmt: Statement, choices: dict[str, str], order: tuple[str, ...], down: bool = False) -> list[str]:
    """The new schedule vector of ``stmt`` (see the module docstring), unpadded: the aligned loop counting
    down with ``down``, every other loop in its source direction."""
    c = choices.get(stmt.name)
    nest = str(stmt.order[0]) if stmt.order else "0"
    if c is None:
        return [nest, "0"] + [str(v) for v in stmt.order[1:]]
    if c in (BEFORE, AFTER):
        return [nest, "0" if c == BEFORE else "2"] + [str(v) for v in stmt.order[1:]]
    vec = [nest, "1", f"-{c}" if down else c, str(order.index(stmt.name))]
    for lp in stmt.loops:
        if lp != c:
            vec += [_signed(stmt, lp, lp), "0"]
    return vec


def _signed(stmt: Statement, loop: str, name: str) -> str:
    """``name`` for ``stmt``'s ``loop``, written ``-name`` when the source runs the loop downwards."""
    return f"-{name}" if f"-{loop}" in stmt.order else name


def _schedule(prog: Program, choices: dict[str, str], order: tuple[str, ...], down: bool = False) -> isl.UnionMap:
    """``{ S[loops] -> [vector] }`` of every statement under the alignment, padded to one length."""
    vecs = {s.name: _vector(s, choices, order, down) for s in prog.statements}
    n = max(len(v) for v in vecs.values())
    parts = [f"{s.name}[{', '.join(s.loops)}] -> [{', '.join(vecs[s.name] + ['0'] * (n - len(vecs[s.name])))}]"
             for s in prog.statements]
    return umap("{ " + "; ".join(parts) + " }")


def _respects(deps: isl.UnionMap, sched: isl.UnionMap) -> bool:
    """Every dependence ``{ S[loops] -> T[loops'] }`` of ``deps`` goes strictly forward under ``sched``."""
    if deps.is_empty():
        return True
    pairs = deps.apply_domain(sched).apply_range(sched)
    forward = sched.range().lex_lt_union_set(sched.range())
    return pairs.is_subset(forward)


def aligned_program(prog: Program, alignment: Alignment) -> Program:
    """``prog`` with its main nest rewritten by ``alignment`` (one of :func:`alignments`): aligned
    statements re-indexed with the aligned loop first and named ``alignment.loop``, hoisted statements in
    nests of their own just before or after, every top-level nest renumbered in order, the statements listed
    in their new textual order. Computes exactly what
    ``prog`` computes (see the module docstring); statement, array and access names are unchanged."""
    choices = dict(alignment.choices)
    main_nest = next(s.order[0] for s in prog.statements if s.name in choices)
    out = []
    for s in prog.statements:
        c = choices.get(s.name)
        top = s.order[0]
        if c is None:
            out.append(_with_order(s, (_renumber(top, main_nest),) + tuple(s.order[1:])))
        elif c in (BEFORE, AFTER):
            out.append(_with_order(s, (_renumber(top, main_nest) + (0 if c == BEFORE else 2),) + tuple(s.order[1:])))
        else:
            out.append(_realigned(s, c, alignment.loop, _renumber(top, main_nest) + 1,
                                  alignment.order.index(s.name), alignment.down))
    # The statements listed in their new textual order (the passes read positions off the list).
    rank = {s.name: k for k, s in enumerate(prog.statements)}
    out.sort(key=lambda s: (s.order[0], s.order[2] if s.name in alignment.order else rank[s.name]))
    return prog.replace(statements=tuple(out))


def _renumber(top, main_nest) -> int:
    """The new top-level position of a nest at ``top``: the main nest becomes three (before, aligned, after)."""
    return int(top) if int(top) < int(main_nest) else int(top) + 2 if int(top) > int(main_nest) else int(top)


def _with_order(s: Statement, order: tuple) -> Statement:
    return Statement(s.name, s.loops, s.domain, s.write, s.expr, s.reads, order, s.line, s.guard)


def _realigned(s: Statement, loop: str, outer: str, top: int, pos: int, down: bool = False) -> Statement:
    """``s`` with its loop ``loop`` renamed ``outer`` and moved first (counting down with ``down``), its other
    loops after it in order and in their source directions (one already named ``outer`` renamed to a fresh
    name), at top-level position ``top``, position ``pos`` inside an iteration."""
    fresh = outer
    while fresh in s.loops:
        fresh += "_"
    names = {lp: (outer if lp == loop else fresh if lp == outer else lp) for lp in s.loops}
    loops = (outer,) + tuple(names[lp] for lp in s.loops if lp != loop)
    perm = [s.loops.index(loop)] + [k for k, lp in enumerate(s.loops) if lp != loop]
    dom = s.domain_set
    m = isl.Map(f"{{ {s.name}[{', '.join(s.loops)}] -> {s.name}[{', '.join(s.loops[k] for k in perm)}] }}")
    moved = rename_dims(dom.apply(m), "set", loops)
    domain = str(iset(str(moved)))
    order: list = [top, f"-{outer}" if down else outer, pos]
    for lp in s.loops:
        if lp != loop:
            order += [_signed(s, lp, names[lp]), 0]
    return Statement(s.name, loops, domain, _renamed_access(s.write, names), _renamed_expr(s.expr, names),
                     tuple(_renamed_access(a, names) for a in s.reads), tuple(order), s.line, s.guard)


def _renamed_aff(a: Aff, names: dict[str, str]) -> Aff:
    return Aff.of({names.get(n, n): c for n, c in a.coeffs}, a.const)


def _renamed_access(a: Access, names: dict[str, str]) -> Access:
    return Access(a.ref, a.array, tuple(_renamed_aff(ix, names) for ix in a.index))


def _renamed_expr(e: Expr, names: dict[str, str]) -> Expr:
    """``e`` with every loop index it uses as a value renamed (reads are named by reference: unchanged)."""
    if isinstance(e, Index):
        return Index(_renamed_aff(e.aff, names))
    kids = e.children()
    if not kids:
        return e
    return e.with_children(tuple(_renamed_expr(k, names) for k in kids))
