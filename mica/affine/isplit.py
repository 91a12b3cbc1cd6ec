"""Index-set splitting: a loop cut in three where a statement reads the pivot row (or column) it also updates.

Floyd-Warshall updates ``path[i][j]`` at step ``k`` from ``path[i][k]`` and ``path[k][j]``. Row ``k`` is itself
updated during step ``k``: its new values flow to the rows after it and its old values are read by the rows
before it, dependences of no constant distance along ``i``, so in the source order every loop carries one and
no plan spreads it. Cut at ``i = k`` into three loops run one after another -- ``i < k``, ``i = k``, ``i > k``
-- the same instances run in the same order, and each outer piece is parallel over ``i``: its rows read row
``k``, which only the middle piece writes. (Index-set splitting, after Griebl, Feautrier and Lengauer, here for
this pivot pattern.)

What is split (:func:`pivots`): loop ``L`` of the main statement when its write indexes a dimension of an array
with ``L`` alone and one of its reads of the same array indexes that dimension with an expression ``e`` of the
loops enclosing ``L`` only, every other subscript the write's (the pivot row or column of the written element). Every statement inside loop ``L`` is cut with it: its domain intersected
with ``L < e``, ``L = e`` and ``L > e`` (empty pieces dropped), the pieces named ``{S}_lt``, ``{S}_eq``,
``{S}_gt`` with their access tags renamed alike, the three loops placed where ``L`` was, in the order ``L``
runs (reversed for a downward loop), and the statements after ``L`` in its parent moved two positions on.

What it preserves: every instance of every statement runs, in the same order as in the source (a piece is
the same statement on part of its domain, and the three loops run in the order the instances had), so every
value, rounding included, is the one the source computes. Arrays, inputs, outputs and scalars are unchanged.

Spaces: a statement's domain ``{ S[loops] }``; the cuts ``{ S[loops] : L < e }`` (and ``=``, ``>``) in the same
space, renamed to the piece.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .expr import Aff
from .isl_names import iset
from .pieces import _renamed
from .program import Access, Program, Statement, main_statement

PIECES = ("lt", "eq", "gt")
RELATION = {"lt": "<", "eq": "=", "gt": ">"}


@dataclass(frozen=True)
class Split:
    """The last of ``loops`` (the loops down to it, outermost first) in top-level nest ``nest`` cut at ``at``, an
    affine expression of the loops enclosing it: in every statement of the nest inside such a loop."""

    nest: int
    loops: tuple[str, ...]
    at: Aff

    @property
    def loop(self) -> str:
        return self.loops[-1]

    def describe(self) -> str:
        return f"loop {self.loop} cut at {self.loop} = {self.at} (before, at and after the pivot)"


def pivots(prog: Program) -> tuple[Split, ...]:
    """The cuts worth trying on ``prog``'s main statement (see the module text), one per loop and pivot
    expression, in the order of its reads. None when the program has runtime parameters or guards."""
    if prog.runtime or any(s.guard for s in prog.statements):
        return ()
    s = main_statement(prog)
    out: list[Split] = []
    for r in s.reads:
        if r.array != s.write.array:
            continue
        for p, (w_ix, r_ix) in enumerate(zip(s.write.index, r.index)):
            if any(a != b for q, (a, b) in enumerate(zip(s.write.index, r.index)) if q != p):
                continue            # the pivot row or column of the written element: every other subscript equal
            loop = w_ix.single_var()
            if loop is None or w_ix != Aff.var(loop) or r_ix == w_ix:
                continue
            d = s.loops.index(loop)
            if not r_ix.names or not set(r_ix.names) <= set(s.loops[:d]):
                continue
            split = Split(int(s.order[0]), s.loops[:d + 1], r_ix)
            if split not in out:
                out.append(split)
    return tuple(out)


def split_programs(prog: Program) -> list[tuple[str, Program]]:
    """``(how, program)`` for each cut of :func:`pivots` that cuts something, and for all of them made one after
    another when there are several (Floyd-Warshall cut along ``i`` and ``j`` spreads over both mesh axes)."""
    out: list[tuple[str, Program]] = []
    every, made = prog, []
    for split in pivots(prog):
        cut = split_program(prog, split)
        if cut is prog:
            continue
        out.append((split.describe(), cut))
        every = split_program(every, split)
        made.append(split.describe())
    if len(made) > 1:
        out.append(("; ".join(made), every))
    return out


def split_program(prog: Program, split: Split) -> Program:
    """``prog`` with every loop ``split.loop`` under ``split.loops`` in nest ``split.nest`` cut in three (see the
    module text); ``prog`` itself when no such loop has instances on both sides of the cut. Computes exactly
    what ``prog`` computes; statements outside those loops keep their names and accesses."""
    d = len(split.loops) - 1
    heads = list(dict.fromkeys(t.order[:2 * d + 2] for t in prog.statements
                               if t.order and t.order[0] == split.nest and t.loops[:d + 1] == split.loops))
    out = prog
    # The last loop first: cutting one moves only the statements after it in its parent.
    for head in reversed(heads):
        out = _cut(out, head, split, d)
    return out


def _cut(prog: Program, head: tuple, split: Split, d: int) -> Program:
    """``prog`` with the one loop whose statements' orders start with ``head`` cut in three (``prog`` itself when
    all its instances fall in one piece)."""
    inside = [t for t in prog.statements if t.order[:2 * d + 2] == head]
    pos = int(head[2 * d])
    downward = str(head[2 * d + 1]).startswith("-")
    ranks = {p: k for k, p in enumerate(reversed(PIECES) if downward else PIECES)}
    pieces = {p: [q for t in inside if (q := _piece(t, split, p, pos + ranks[p], d)) is not None] for p in PIECES}
    if sum(1 for p in PIECES if pieces[p]) < 2:
        return prog
    block = [q for p in sorted(PIECES, key=ranks.get) for q in pieces[p]]
    out: list[Statement] = []
    for t in prog.statements:
        if t in inside:
            if t is inside[0]:
                out.extend(block)
            continue
        if t.order[:2 * d] == head[:2 * d] and len(t.order) > 2 * d and int(t.order[2 * d]) > pos:
            t = replace(t, order=t.order[:2 * d] + (int(t.order[2 * d]) + 2,) + t.order[2 * d + 1:])
        out.append(t)
    return prog.replace(statements=tuple(out))


def _piece(t: Statement, split: Split, piece: str, pos: int, d: int) -> Statement | None:
    """Statement ``t`` restricted to one piece of the cut (None when that piece has no instance), at position
    ``pos`` in the cut loop's parent, its name and access tags suffixed with the piece."""
    cut = iset(f"{{ {t.name}[{', '.join(t.loops)}] : {split.loop} {RELATION[piece]} {split.at.text()} }}")
    dom = t.domain_set.intersect(cut)
    if dom.is_empty():
        return None
    name = f"{t.name}_{piece}"
    tags = {a.ref: _tag(a.ref, t.name, name) for a in t.accesses}

    def tagged(a: Access) -> Access:
        return Access(tags[a.ref], a.array, a.index)
    return Statement(name, t.loops, str(dom.set_tuple_name(name)), tagged(t.write), _renamed(t.expr, tags),
                     tuple(tagged(a) for a in t.reads), t.order[:2 * d] + (pos,) + t.order[2 * d + 1:], t.line,
                     t.guard)


def _tag(ref: str, old: str, new: str) -> str:
    return new + ref[len(old):] if ref.startswith(old + "_") else f"{new}_{ref}"

