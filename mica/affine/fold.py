"""Folding a long loop in two: ``l`` of ``0 .. N-1`` run as ``l_o`` of ``0 .. N/B - 1`` and ``l_i`` of
``0 .. B-1`` (``l = B*l_o + l_i``), and every array dimension it indexes reshaped from ``N`` to ``N/B x B``.

The mapping sends each loop to at most one mesh axis, so a program whose parallelism is one long loop
(``y[i] = a*x[i] + y[i]`` over 2^20 elements, one head of decode attention over 4,096 cached positions, a
GEMV whose matrix streams from DRAM row block by row block) spreads over one line of cores: 994 of the
745,500 of a WSE-2. Folded, the loop is two loops the search can send to the two axes, and the arrays are
laid out in 2D blocks like any other.

What folds (:func:`fold_classes`): a *class* of loops and array dimensions. A dimension can be reshaped when
every access to it is a plain subscript (exactly a loop of the accessing statement: ``s[h][l+1]`` or
``s[h][0]`` would need a division to split); loop ``l`` of statement ``S`` and such a dimension are joined when
``S`` subscripts it with ``l``, and the statements of one nest are joined through the loops they share (a
loop folds in all of them or in none). A class folds when its dimensions all have the same extent ``N``.
Its loops may appear anywhere else (another subscript, also of an array not reshaped, a bound, a guard, a
value ``(float)l``): there ``l`` becomes the affine ``B*l_o + l_i``.

What it preserves (:func:`fold_program`): every statement keeps its instances and their order -- the
domain in the space ``S[..., l_o, l_i, ...]`` is the preimage of the old one under
``{ S[..., l_o, l_i, ...] -> S[..., B*l_o + l_i, ...] : 0 <= l_i < B }``, and the schedule vector runs
``l_o`` then ``l_i`` where it ran ``l`` (both downwards where ``l`` ran downwards), so lexicographic order on
``(l_o, l_i)`` is the order on ``l``. Each
instance reads and writes the same elements (``A[.., l, ..]`` is ``A'[.., l_o, l_i, ..]`` of the row-major
reshape), so the folded program computes what the original does, operation for operation; reductions over
``l`` keep their order. The folded program records the arrays' original shapes (:attr:`Program.folded`),
which ``run()`` takes and gives back (a reshape of a C-contiguous array: a view).

Public API: :class:`FoldClass`, :func:`fold_classes`, :func:`fold_program`, :func:`fold_factor`, :func:`refold`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import AffineError
from .expr import Aff, Expr, Index
from .isl_names import imap, iset
from .program import Access, Array, Program, Statement


@dataclass(frozen=True)
class FoldClass:
    """Array dimensions ``dims`` ((array, dimension) pairs, each of extent ``n``) and the loops ``loops``
    ((statement, loop) pairs) that index them with plain subscripts."""

    n: int
    dims: frozenset[tuple[str, int]]
    loops: frozenset[tuple[str, str]]

    def describe(self) -> str:
        dims = ", ".join(f"{a}[dim {d}]" for a, d in sorted(self.dims))
        return f"the loop of extent {self.n} indexing {dims}"


def fold_classes(prog: Program) -> list[FoldClass]:
    """The classes of ``prog`` that fold (see the module text), the longest first. Reads ``prog`` only."""
    parent: dict[tuple, tuple] = {}

    def find(a):
        parent.setdefault(a, a)
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    bad: set[tuple] = set()
    for s in prog.statements:
        for acc in s.accesses:
            for d, ix in enumerate(acc.index):
                if ix.single_var() not in s.loops:
                    bad.add((acc.array, d))
    for s in prog.statements:
        # statements of one nest share its loops: a loop folds in all of them or in none
        for k, v in enumerate(s.order):
            if k % 2 == 1 and isinstance(v, str):
                union(("L", s.name, v.lstrip("-")), ("N", tuple(s.order[:k + 1])))
        for acc in s.accesses:
            for d, ix in enumerate(acc.index):
                if (acc.array, d) not in bad:
                    union(("A", acc.array, d), ("L", s.name, ix.single_var()))
    groups: dict[tuple, set] = {}
    for node in list(parent):
        groups.setdefault(find(node), set()).add(node)
    out = []
    for nodes in groups.values():
        dims = {(n[1], n[2]) for n in nodes if n[0] == "A"}
        loops = {(n[1], n[2]) for n in nodes if n[0] == "L"}
        if not dims or not loops:
            continue
        extents = {prog.array(a).shape[d] for a, d in dims}
        if len(extents) != 1:
            continue
        out.append(FoldClass(extents.pop(), frozenset(dims), frozenset(loops)))
    return sorted(out, key=lambda c: (-c.n, sorted(c.dims)))


def fold_factor(n: int, near: int) -> int | None:
    """The divisor ``B`` of ``n`` with ``1 < B < n`` closest to ``near`` (the smaller on ties), or None when
    ``n`` is prime or too small."""
    divisors = [b for b in range(2, n) if n % b == 0]
    return min(divisors, key=lambda b: (abs(b - near), b)) if divisors else None


def _names(stmt: Statement, loop: str) -> tuple[str, str]:
    taken = set(stmt.loops)
    for k in range(100):
        suffix = "" if k == 0 else str(k)
        outer, inner = f"{loop}_o{suffix}", f"{loop}_i{suffix}"
        if outer not in taken and inner not in taken:
            return outer, inner
    raise AffineError(f"statement {stmt.name}: no free names to fold loop {loop}")


def _aff(a: Aff, subst: dict[str, tuple[str, str]], b: int) -> Aff:
    """``a`` with every folded loop ``l`` replaced by ``b*l_o + l_i``."""
    if not any(n in subst for n in a.names):
        return a
    terms: dict[str, int] = {}
    for name, c in a.coeffs:
        if name in subst:
            o, i = subst[name]
            terms[o] = terms.get(o, 0) + b * c
            terms[i] = terms.get(i, 0) + c
        else:
            terms[name] = terms.get(name, 0) + c
    return Aff.of(terms, a.const)


def _expr(e: Expr, subst, b: int) -> Expr:
    if isinstance(e, Index):
        return Index(_aff(e.aff, subst, b))
    kids = e.children()
    return e.with_children(tuple(_expr(k, subst, b) for k in kids)) if kids else e


def _preimage(text: str, stmt: Statement, loops: tuple[str, ...], subst, b: int) -> str:
    """The isl set ``text`` (in ``S[stmt.loops]``, parameters allowed) pulled back to ``S[loops]`` under
    ``l = b*l_o + l_i, 0 <= l_i < b``."""
    old = iset(text)
    exprs = []
    for lp in stmt.loops:
        exprs.append(f"{b}*{subst[lp][0]} + {subst[lp][1]}" if lp in subst else lp)
    cons = " and ".join(f"0 <= {subst[lp][1]} < {b}" for lp in subst)
    m = imap(f"{{ {stmt.name}[{', '.join(loops)}] -> {stmt.name}[{', '.join(exprs)}] : {cons} }}")
    params = old.get_space().params()
    m = m.align_params(params)
    old = old.align_params(m.get_space().params())
    new = m.intersect_range(old).domain().coalesce().remove_redundancies()
    return str(new)


def fold_program(prog: Program, cls: FoldClass, b: int) -> Program:
    """``prog`` with the loops of ``cls`` folded by ``b`` (which must divide ``cls.n``) and its dimensions
    reshaped to ``n/b x b`` (see the module text: the same instances in the same order, reading and writing
    the same elements). :attr:`Program.folded` gains the original shape of every reshaped input and output
    (the arrays ``run()`` takes and gives; a temporary is nobody's to see, and privatisation may reshape it
    again)."""
    if not 1 < b < cls.n or cls.n % b:
        raise AffineError(f"cannot fold a loop of extent {cls.n} by {b}")
    by_stmt: dict[str, list[str]] = {}
    for s, lp in cls.loops:
        by_stmt.setdefault(s, []).append(lp)
    dims_of: dict[str, set[int]] = {}
    for a, d in cls.dims:
        dims_of.setdefault(a, set()).add(d)
    statements = []
    for s in prog.statements:
        folded = by_stmt.get(s.name, [])
        if not folded:
            statements.append(s)
            continue
        subst = {lp: _names(s, lp) for lp in folded}
        loops = tuple(x for lp in s.loops for x in (subst[lp] if lp in subst else (lp,)))
        order = []
        for v in s.order:
            # a loop that runs downwards is ``-l`` in the schedule vector: (l_o, l_i) then run downwards too
            sign, name = ("-", v[1:]) if isinstance(v, str) and v.startswith("-") else ("", v)
            order += [sign + subst[name][0], 0, sign + subst[name][1]] if isinstance(v, str) and name in subst else [v]

        def access(acc: Access) -> Access:
            index = []
            for d, ix in enumerate(acc.index):
                if d in dims_of.get(acc.array, ()):
                    o, i = subst[ix.single_var()]
                    index += [Aff.var(o), Aff.var(i)]
                else:
                    index.append(_aff(ix, subst, b))
            return replace(acc, index=tuple(index))

        statements.append(replace(
            s, loops=loops, domain=_preimage(s.domain, s, loops, subst, b), write=access(s.write),
            reads=tuple(access(r) for r in s.reads), expr=_expr(s.expr, subst, b), order=tuple(order),
            guard=_preimage(s.guard, s, loops, subst, b) if s.guard else ""))
    arrays = []
    originals = dict(prog.folded)
    for arr in prog.arrays:
        if arr.name not in dims_of:
            arrays.append(arr)
            continue
        shape = []
        for d, n in enumerate(arr.shape):
            shape += [n // b, b] if d in dims_of[arr.name] else [n]
        if arr.name in prog.inputs or arr.name in prog.outputs:
            originals.setdefault(arr.name, arr.shape)     # a temporary's shape is nobody's to see
        arrays.append(Array(arr.name, tuple(shape), arr.dtype))
    return prog.replace(arrays=tuple(arrays), statements=tuple(statements),
                        folded=tuple(sorted(originals.items())))


def refold(prog: Program, folds) -> Program:
    """``prog`` folded as ``folds`` says (``(statement, loop, factor)`` per fold, in order: the class holding
    that loop of that statement, by that factor; :attr:`mica.tiling.schedule.Schedule.folds`). Raises
    :class:`AffineError` naming the loop when it does not fold in the program so far."""
    for stmt, loop, b in folds:
        cls = next((c for c in fold_classes(prog) if (stmt, loop) in c.loops), None)
        if cls is None or cls.n % b:
            raise AffineError(f"loop {loop} of statement {stmt} does not fold by {b} in {prog.name}")
        prog = fold_program(prog, cls, b)
    return prog
