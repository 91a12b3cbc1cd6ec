"""The search over recurrence expansion: a program with temporaries carried from one iteration of a loop to the
next (:mod:`mica.affine.recurrence`) is searched as written and with those temporaries expanded, and the
cheaper plan wins.

Expanded, deriche's rows are recurrences through arrays with uniform dependences: each pass runs as a wavefront
on the same 2D blocks, a block's last values travelling to the next core by a halo exchange
(:mod:`mica.tiling.wavefront`), where as written the temporaries pin each pass to a line of cores and the
passes need the whole image re-laid out between them. The expanded program needs more memory (one element of
each temporary per iteration), so it is a candidate, not a rewrite: on one core, or where the wavefront does
not pay, the program as written keeps its plan. Both are proved legal and built by the same passes; the choice
is only about modelled cycles. Programs without such temporaries are searched once, as before."""

from __future__ import annotations

from ..affine.program import Program
from ..affine.recurrence import expand_recurrences
from ..errors import MicaError
from ..targets import Target
from .aligned import _cycles, search_aligned, spreads
from .schedule import Schedule
from .search import Lowering, SearchReport


def search_expanded(op: Program, mesh, tgt: Target, lowering: Lowering, side_by_side: bool = True, *,
                    progress=None) -> tuple[Program, Schedule, SearchReport | None]:
    """The program to map and its plan: :func:`search_aligned` of ``op`` and, when it carries temporaries
    across iterations, of its expansion (:func:`expand_recurrences`); the one with fewer modelled cycles
    (``op`` on ties). Raises the error of ``op``'s search when neither has a plan. Preserves what the
    program computes (the expansion does, read for read)."""
    expanded = expand_recurrences(op)
    try:
        found = search_aligned(op, mesh, tgt, lowering, side_by_side, progress=progress)
    except MicaError as exc:
        found, error = None, exc
    if expanded is op or mesh[0] * mesh[1] == 1:
        if found is None:
            raise error
        return found
    # The original's plan bounds the expanded form's search: its ladder of smaller grids (walked to beat the
    # one-core plan) stops where the original's plan already beats one core.
    incumbent = _cycles(found[0], found[1], tgt, lowering) if found is not None else float("inf")
    try:
        alt = search_aligned(expanded, mesh, tgt, lowering, side_by_side, progress=progress, incumbent=incumbent)
    except MicaError:
        alt = None
    if alt is None or not spreads(alt[1]):
        if found is None:
            raise error
        return found
    alt_cycles = _cycles(alt[0], alt[1], tgt, lowering)
    if found is not None and incumbent <= alt_cycles:
        return found
    why = (f"temporaries carried across iterations ({', '.join(_carried(op, expanded))}) expanded to one "
           f"element per iteration, so the blocks of their loop can run on different cores "
           f"(mica.affine.recurrence)")
    return alt[0], alt[1].copy(reasons=alt[1].reasons + (why,)), alt[2]


def _carried(op: Program, expanded: Program) -> list[str]:
    """The arrays the expansion added."""
    old = {a.name for a in op.arrays}
    return [a.name for a in expanded.arrays if a.name not in old]
