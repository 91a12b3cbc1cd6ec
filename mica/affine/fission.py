"""Loop fission: the finest legal split of a program into operators that run one after another.

A top-level loop nest may hold several statements that are better mapped separately: ``atax`` computes
``tmp[i] = A[i][:] . x`` and then ``y[:] += A[i][:] * tmp[i]`` in one ``i`` loop; the first wants ``i``
spread over cores with ``j`` temporal, the second is a reduction over ``i`` into ``y``. Distributing the
nest turns it into operators that each map well (:mod:`mica.lower.phases` runs them in sequence).

Running every instance of one group of statements before every instance of the next is legal when no
dependence goes from an instance of a later group to an instance of an earlier one. The groups are
therefore unions of the strongly connected components of the statement dependence graph (an edge
``S -> T`` when some instance of ``T`` depends on an instance of ``S``: flow, anti or output), in an
order that respects every edge, ties broken by textual order. Consecutive groups that write the same
elements of an array stay together (an initialisation ``tmp[i] = 0`` with the reduction that accumulates
into it); groups writing disjoint parts of one array (a symmetric matrix's upper triangle, then its
mirror image ``corr[j][i] = corr[i][j]`` below the diagonal) become operators of their own.
"""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from .deps import dependences
from .program import Program, Statement


@lru_cache(maxsize=64)
def statement_graph(prog: Program) -> dict[str, set[str]]:
    """``S -> {T}``: statements with an instance depending on an instance of ``S`` (from the program's
    flow, anti and output dependences, each a relation ``{ S[loops] -> T[loops'] }``).

    Cached per program (the search splits and checks phases many times); do not modify the result."""
    edges: dict[str, set[str]] = {s.name: set() for s in prog.statements}

    def add(m: isl.Map) -> None:
        if not m.is_empty():
            src = m.get_tuple_name(isl.dim_type.in_)
            dst = m.get_tuple_name(isl.dim_type.out)
            if src != dst:
                edges[src].add(dst)
    dependences(prog).all.foreach_map(add)
    return edges


def _components(names: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of the graph restricted to ``names`` (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    keep = set(names)
    for root in names:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root] & keep)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt] & keep))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    v = stack.pop()
                    on_stack.discard(v)
                    comp.append(v)
                    if v == node:
                        break
                comps.append(comp)
    return comps


def _ordered(comps: list[list[str]], edges: dict[str, set[str]], pos: dict[str, int]) -> list[list[str]]:
    """The components in an order respecting every edge between them, earliest textual statement first
    among those ready."""
    owner = {v: k for k, comp in enumerate(comps) for v in comp}
    preds: dict[int, set[int]] = {k: set() for k in range(len(comps))}
    for v, outs in edges.items():
        for w in outs:
            if v in owner and w in owner and owner[v] != owner[w]:
                preds[owner[w]].add(owner[v])
    done: list[int] = []
    left = set(range(len(comps)))
    while left:
        ready = [k for k in left if preds[k] <= set(done)]
        k = min(ready, key=lambda c: min(pos[v] for v in comps[c]))
        done.append(k)
        left.discard(k)
    return [sorted(comps[k], key=pos.__getitem__) for k in done]


def fission(prog: Program, nests: list[tuple[Statement, ...]]) -> list[tuple[Statement, ...]]:
    """``nests`` (the program's statements grouped by top-level loop nest, in order) split further into
    the finest legal sequence of operators; each keeps its statements in textual order.

    Preserves: every dependence of ``prog`` runs from an operator to itself or to a later one, so running
    the operators one after another computes what ``prog`` computes."""
    edges = statement_graph(prog)
    pos = {s.name: k for k, s in enumerate(prog.statements)}
    by_name = {s.name: s for s in prog.statements}
    out: list[tuple[Statement, ...]] = []
    for nest in nests:
        names = [s.name for s in nest]
        groups = _ordered(_components(names, edges), edges, pos)
        merged: list[list[str]] = []
        for g in groups:
            if merged and _writes_meet(prog, g, merged[-1]):
                merged[-1] = sorted(merged[-1] + g, key=pos.__getitem__)
            else:
                merged.append(g)
        out.extend(tuple(by_name[n] for n in g) for g in merged)
    return out


def _writes_meet(prog: Program, a: list[str], b: list[str]) -> bool:
    """True when statements ``a`` and ``b`` write a common element of some array (the images of their
    write relations ``{ S[loops] -> X[...] }`` meet)."""
    def written(names):
        out: dict[str, isl.Set] = {}
        for n in names:
            s = prog.statement(n)
            img = s.access_map(s.write).range()
            out[s.write.array] = img if s.write.array not in out else out[s.write.array].union(img)
        return out
    wa, wb = written(a), written(b)
    return any(not wa[x].intersect(wb[x]).is_empty() for x in wa.keys() & wb.keys())
