"""Reference plans: the classic expert algorithms as ordinary :class:`Schedule` values.

Each function returns a schedule for ``prog`` on ``mesh`` that names an algorithm people write by hand;
it is compiled by the same pipeline as a searched plan (``compile_affine(op, mesh, schedule=...)``) and
benchmarked against the search's choice.

* :func:`summa` — both panels multicast along rows/columns each step (csl-examples gemm-collectives_2d);
* :func:`cannon` — pre-skewed panels shifted to the neighbour each step, with the wrap-around across the
  whole line (Cannon 1969);
* :func:`interleaved` — Cannon on an interleaved ring, every shift at most 2 hops (WaferLLM MeshGEMM);
* :func:`chain` — partial sums combined by a chain of one-hop shifts (csl-examples GEMV);
* :func:`ktree` — a two-level tree: chains inside groups, then across the group roots (WaferLLM MeshGEMV);
* :func:`levels` — a multi-level tree of a fan-in (binary by default: log-depth, ``ceil(log2 n)`` stages);
* :func:`halo` — a stencil's grid blocked over the mesh, its time loop in lock-step sweeps, and
  neighbours' edges exchanged into ghost zones before every statement that reads them.

The stepped plans (SUMMA, Cannon, interleaved) take ``buffers=2`` for their double-buffered variant: the
panels of step t+1 travel while step t computes, into a second receive slot
(:func:`mica.tiling.schedule.with_buffers`); the plan's name gets a ``+db`` suffix.
"""

from __future__ import annotations

from math import isqrt

from ..affine.deps import REDUCTION, loop_kinds
from ..affine.program import Program
from ..errors import ScheduleError
from .mapping import derive_schedule, loop_extent, main_statement, spatial_candidates
from .schedule import Schedule


def summa(prog: Program, mesh: tuple[int, int], buffers: int = 1) -> Schedule:
    return derive_schedule(prog, mesh, skew="none", family="summa", buffers=buffers)


def cannon(prog: Program, mesh: tuple[int, int], buffers: int = 1) -> Schedule:
    return derive_schedule(prog, mesh, skew="cannon", family="cannon", buffers=buffers)


def interleaved(prog: Program, mesh: tuple[int, int], buffers: int = 1) -> Schedule:
    return derive_schedule(prog, mesh, skew="interleaved", family="interleaved", buffers=buffers)


def chain(prog: Program, mesh: tuple[int, int]) -> Schedule:
    return derive_schedule(prog, mesh, reduce="chain", family="chain")


def ktree(prog: Program, mesh: tuple[int, int], group: int | None = None) -> Schedule:
    """A two-level tree reduction; ``group`` defaults to about the square root of the reduced cores: the
    blocks of the spatial loops the main statement reduces over (MeshGEMV's groups of the reduced line), or
    of every spatial loop when none reduces."""
    base = derive_schedule(prog, mesh)
    if group is None:
        main = main_statement(prog)
        kinds = loop_kinds(prog)[main.name]
        reduced = [s for s in base.space if kinds.get(s.loop) == REDUCTION] or list(base.space)
        n = max((-(-loop_extent(main, s.loop) // s.tile) for s in reduced), default=1)
        group = max(2, isqrt(n))
    return derive_schedule(prog, mesh, reduce="tree", group=group, family="ktree")


def levels(prog: Program, mesh: tuple[int, int], fanin: int = 2) -> Schedule:
    """A ``fanin``-ary tree reduction of as many levels as the reduced cores need: chains inside groups of
    ``fanin`` cores, then inside groups of ``fanin`` of their roots, and so on (``fanin = 2``: a binary tree,
    one stage per level, the fewest stages of any way of combining)."""
    return derive_schedule(prog, mesh, reduce="levels", group=fanin, family="levels")


def halo(prog: Program, mesh: tuple[int, int]) -> Schedule:
    """Two parallel loops of the grid blocked over the mesh (one for a 1-D grid) and the time loop in
    lock-step sweeps with halo exchanges. Raises :class:`ScheduleError` for a program that is not a
    stencil (no parallel loop to spread, or reads that reach past the neighbours)."""
    for assignment in spatial_candidates(prog):
        if assignment:
            return derive_schedule(prog, mesh, assignment=assignment, family="halo")
    raise ScheduleError(f"{prog.name} has no loop that can be spread over the mesh: no halo plan")


REFERENCE_PLANS = {"summa": summa, "cannon": cannon, "interleaved": interleaved, "chain": chain, "ktree": ktree, "levels": levels,
                   "halo": halo}
