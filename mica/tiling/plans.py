"""Reference plans: the classic expert algorithms as ordinary :class:`Schedule` values.

Each function returns a schedule for ``prog`` on ``mesh`` that names an algorithm people write by hand;
it is compiled by the same pipeline as a searched plan (``compile_affine(op, mesh, schedule=...)``) and
benchmarked against the search's choice.

* :func:`summa` — both panels multicast along rows/columns each step (csl-examples gemm-collectives_2d);
* :func:`cannon` — pre-skewed panels shifted to the neighbour each step, with the wrap-around across the
  whole line (Cannon 1969);
* :func:`interleaved` — Cannon on an interleaved ring, every shift at most 2 hops (WaferLLM MeshGEMM);
* :func:`chain` — partial sums combined by a chain of one-hop shifts (csl-examples GEMV);
* :func:`ktree` — a two-level tree: chains inside groups, then across the group roots (WaferLLM MeshGEMV).

Stencil halo exchanges need stencil programs, which the front end does not map yet.
"""

from __future__ import annotations

from math import isqrt

from ..affine.program import Program
from .mapping import derive_schedule
from .schedule import Schedule


def summa(prog: Program, mesh: tuple[int, int]) -> Schedule:
    return derive_schedule(prog, mesh, skew="none", name="summa")


def cannon(prog: Program, mesh: tuple[int, int]) -> Schedule:
    return derive_schedule(prog, mesh, skew="cannon", name="cannon")


def interleaved(prog: Program, mesh: tuple[int, int]) -> Schedule:
    return derive_schedule(prog, mesh, skew="interleaved", name="interleaved")


def chain(prog: Program, mesh: tuple[int, int]) -> Schedule:
    return derive_schedule(prog, mesh, reduce="chain", name="chain")


def ktree(prog: Program, mesh: tuple[int, int], group: int | None = None) -> Schedule:
    """A two-level tree reduction; ``group`` defaults to about the square root of the reduced cores."""
    base = derive_schedule(prog, mesh)
    if group is None:
        from .mapping import loop_extent, main_statement
        main = main_statement(prog)
        n = max((-(-loop_extent(main, s.loop) // s.tile) for s in base.space), default=1)
        group = max(2, isqrt(n))
    return derive_schedule(prog, mesh, reduce="tree", group=group, name=f"ktree{group}")


REFERENCE_PLANS = {"summa": summa, "cannon": cannon, "interleaved": interleaved, "chain": chain, "ktree": ktree}
