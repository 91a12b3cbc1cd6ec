"""The search over loop folds: a plan that spreads a long loop along one mesh axis while the other axis lies
idle is searched again with that loop folded in two (:mod:`mica.affine.fold`), and the cheaper plan wins.

Every loop maps to at most one axis, so a program whose parallelism is one long loop (a vector operation over
2^20 elements; one head of decode attention, its 4,096 positions over a line of 241 cores of the wafer)
reaches one line of cores at best. Folded, the long loop is two loops the search sends to the two axes. The
folded program computes what the original does, operation for operation, and is searched, proved legal and
built by the same passes as any other, so the choice is only about modelled cycles: a fold is kept when its
plan models fewer than :data:`GAIN` times the cycles of the plan as written.

Looked for only where the searched plan (or one of its operators) maps a loop to one axis in tiles of two
or more iterations and no loop it maps spreads over the other axis: there the loop has more iterations than
its axis has cores while the other axis is idle. A loop class that another operator already spreads over
both axes is not folded (one head of decode attention: its scores' operator spreads positions and the head
dimension; searched folded, it took 10 s more to compile for no cheaper plan). At most :data:`MAX_FOLDS`
classes are tried, each once, folded near its square root, and only in programs of at most
:data:`MAX_STATEMENTS` statements (a compile-time budget: each fold is a whole search again). Not on targets
with a DRAM level (Tenstorrent's): their engines work on 32x32 tiles, which the cost model does not price
(:mod:`mica.targets`), so a fold that cuts a vector into blocks smaller than a tile would look cheaper than it
is.
"""

from __future__ import annotations

from math import isqrt

from ..affine.fold import fold_classes, fold_factor, fold_program
from ..affine.program import Program
from ..errors import MicaError
from ..targets import Target
from .aligned import _cycles
from .expanded import search_expanded
from .mapping import loop_extent
from .schedule import Schedule
from .search import Lowering, SearchReport

#: A folded plan replaces the found one only when it models fewer than this fraction of its cycles.
GAIN = 0.9
#: The most fold classes tried for one program (the longest loops first).
MAX_FOLDS = 2
#: Programs of more statements are not folded: each fold is a whole search again, and a program this large
#: (a decode layer) has operators enough to fill both axes.
MAX_STATEMENTS = 12


def _extent(prog: Program, loop: str, names) -> int:
    """The values ``loop`` takes from 0 over the statements ``names`` that run it (as the mapping counts its
    blocks: :func:`mica.tiling.mapping.loop_extent`)."""
    return max((loop_extent(s, loop) for s in prog.statements if s.name in names and loop in s.loops), default=0)


def mapped_loops(prog: Program, sched: Schedule) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Two sets of (statement, loop) pairs: the loops ``sched`` (or one of its operators) maps to a mesh axis in
    tiles of at least two iterations while no loop it maps spreads over more than one core of the other
    axis, and the loops it maps where loops spread over both axes."""
    one: set[tuple[str, str]] = set()
    both: set[tuple[str, str]] = set()
    for s in (sched, *sched.phases):
        if s.phases and s is not sched:
            o, b = mapped_loops(prog, s)
            one |= o
            both |= b
            continue
        names = {name for name, _ in s.local_order}
        spread = {m.axis for m in s.space if -(-_extent(prog, m.loop, names) // m.tile) > 1}
        for m in s.space:
            pairs = {(name, m.loop) for name, loops in s.local_order if m.loop in loops}
            if len(spread) == 2:
                both |= pairs
            elif m.tile >= 2 and m.axis in spread:
                one |= pairs
    return one, both


def one_axis_loops(prog: Program, sched: Schedule) -> set[tuple[str, str]]:
    """The first set of :func:`mapped_loops`: loops spread along one axis while the other idles."""
    return mapped_loops(prog, sched)[0]


def search_folded(found: tuple[Program, Schedule, SearchReport | None], mesh, tgt: Target, lowering: Lowering,
                  side_by_side: bool = True, *, progress=None) -> tuple[Program, Schedule, SearchReport | None]:
    """``found`` (a program and its searched plan), or the plan of that program with one loop class folded
    (:func:`mica.affine.fold.fold_program`, searched by :func:`search_expanded`) when it models fewer than
    :data:`GAIN` times the cycles; its schedule's reasons then say what was folded. Preserves what the program
    computes."""
    prog, sched, _ = found
    if mesh[0] * mesh[1] == 1 or len(prog.statements) > MAX_STATEMENTS or tgt.has_dram:
        return found
    wants, both = mapped_loops(prog, sched)
    if not wants:
        return found
    # a class some operator already spreads over both axes is left as it is (its search again would cost a
    # whole search of a larger space for what is mostly the same plan)
    classes = [c for c in fold_classes(prog) if c.loops & wants and not c.loops & both][:MAX_FOLDS]
    if not classes:
        return found
    base = _cycles(prog, sched, tgt, lowering)
    best = None
    for cls in classes:
        b = fold_factor(cls.n, isqrt(cls.n))
        if b is None:
            continue
        folded = fold_program(prog, cls, b)
        try:
            alt = search_expanded(folded, mesh, tgt, lowering, side_by_side, progress=progress)
            cycles = _cycles(alt[0], alt[1], tgt, lowering)
        except MicaError:
            continue
        if cycles < GAIN * base and (best is None or cycles < best[0]):
            best = (cycles, alt, cls, b)
    if best is None:
        return found
    cycles, alt, cls, b = best
    why = (f"{cls.describe()} folded into {cls.n // b} x {b} (mica.affine.fold), so its iterations spread over "
           f"both mesh axes: {cycles:,.0f} modelled cycles against {base:,.0f} with the loop on one axis")
    fold = (*min(cls.loops), b)
    return alt[0], alt[1].copy(reasons=alt[1].reasons + (why,), folds=sched.folds + (fold,) + alt[1].folds), alt[2]
