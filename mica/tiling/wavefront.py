"""Wavefronts: spreading loops that carry dependences of bounded distance (Gauss-Seidel, seidel-2d, 2D
recurrences ``A[i][j] = f(A[i-1][j], A[i][j-1])``) by skewing the step at which each core runs.

Under a wavefront (:attr:`mica.tiling.schedule.StepMap.wave`) core ``(x, y)`` runs its block of iteration
``l`` of the sweep loop at step ``t = period*l + wx*x + wy*y``. :func:`block_deltas` gives the distances of
every dependence between *blocks* — the set ``{ [dl, dx, dy] }`` of differences of
``{ S[loops] -> W[l, x, y] }`` (sweep iteration, core column, core row) over the dependence relation
``{ S[loops] -> T[loops'] }`` — and :func:`wave_weights` the weights that put every dependence between two
cores at a later step (``period*dl + wx*dx + wy*dy >= 1``) with the fewest steps. Only bounded distances
qualify: a dependence reaching arbitrarily far (Floyd-Warshall's row and column ``k``) has no wavefront.
Legality (:func:`mica.tiling.legality.check_legal`) still proves the whole plan, local order included.

Pure functions of the program and the spatial maps; nothing here is specific to an operator.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

import islpy as isl

from ..affine.deps import dependences, reductions
from ..affine.isl_names import imap
from ..affine.program import Program, Statement
from ..errors import CommError
from .schedule import SpaceMap

#: Largest weight tried per mesh axis and largest period: a dependence reaching further than this many
#: blocks (in steps) is not worth pipelining.
MAX_WEIGHT = 4
MAX_PERIOD = 9
#: At most this many block distances are enumerated (uniform dependences give a handful).
MAX_DELTAS = 4096


def _block_map(stmt: Statement, loop: str, space: tuple[SpaceMap, ...]) -> isl.Map:
    """``{ S[loops] -> W[l, x, y] }``: the sweep iteration (0 without ``loop``) and the core of each instance
    (coordinate 0 on an axis whose loop the statement lacks)."""
    cons = [f"__l = {loop}" if loop and loop in stmt.loops else "__l = 0"]
    for axis in ("x", "y"):
        sm = next((s for s in space if s.axis == axis), None)
        if sm is not None and sm.loop in stmt.loops:
            cons.append(f"{sm.tile}*__{axis} <= {sm.loop} < {sm.tile}*__{axis} + {sm.tile}")
        else:
            cons.append(f"__{axis} = 0")
    text = f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> W[__l, __x, __y] : {' and '.join(cons)} }}"
    return imap(text, CommError)


@lru_cache(maxsize=16)
def _dependence_maps(prog: Program) -> tuple[isl.Map, ...]:
    """Every flow, anti and output dependence of ``prog``, ``{ S[loops] -> T[loops'] }`` one map per statement
    pair; computed once per (frozen) program, however many candidate tilings ask."""
    rels: list[isl.Map] = []
    dependences(prog).all.foreach_map(rels.append)
    return tuple(rels)


@lru_cache(maxsize=64)
def block_deltas(prog: Program, loop: str, space: tuple[SpaceMap, ...]) -> frozenset[tuple[int, int, int]] | None:
    """Every ``(dl, dx, dy)`` some dependence (flow, anti or output) of ``prog`` spans between the blocks
    of :func:`_block_map`; None when a distance is unbounded or parametric (no wavefront then), or there
    are more than :data:`MAX_DELTAS` of them. Cached per (frozen) program and maps."""
    maps = {s.name: _block_map(s, loop, space) for s in prog.statements}
    out: set[tuple[int, int, int]] = set()
    for m in _dependence_maps(prog):
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        d = m.apply_domain(maps[src]).apply_range(maps[dst]).deltas()
        if d.is_empty():
            continue
        if d.dim(isl.dim_type.param) or not d.is_bounded():
            return None
        volume = 1
        for i in range(3):
            volume *= d.dim_max_val(i).to_python() - d.dim_min_val(i).to_python() + 1
        if volume > MAX_DELTAS:
            return None
        pts: list[tuple[int, int, int]] = []

        def add(p, pts=pts):
            pts.append(tuple(p.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(3)))
        d.foreach_point(add)
        out.update(pts)
        if len(out) > MAX_DELTAS:
            return None
    return frozenset(out)


def tileable(prog: Program, loop: str, loops: tuple[str, ...]) -> bool:
    """True when blocks of ``loops`` (any tiles) can run as a wavefront: every dependence spans a bounded
    distance along ``loop`` and ``loops``, and none with distance 0 along ``loop`` goes backwards along one of
    ``loops`` (rectangular blocks of a band whose distances are all >= 0 are legal, as in classical tiling;
    seidel-2d's ``A[i-1][j+1]`` is not, unskewed). Instance distances are block distances of tiles of 1."""
    axes = ("y", "x")
    deltas = block_deltas(prog, loop, tuple(SpaceMap(lp, ax, 1) for lp, ax in zip(loops, axes)))
    if deltas is None:
        return False
    same = [(dx, dy) for dl, dx, dy in deltas if dl == 0]
    # Along each axis the blocks of one sweep iteration depend one way: forwards, or backwards (a loop
    # that counts down, run from the last block with a negative weight).
    return all(all(d[k] >= 0 for d in same) or all(d[k] <= 0 for d in same) for k in (0, 1))


def wave_weights(prog: Program, loop: str, space: tuple[SpaceMap, ...], n: int,
                 blocks: dict[str, int]) -> tuple[int, int, int] | None:
    """``(period, wx, wy)`` with the fewest steps ``period*(n - 1) + |wx|*(bx - 1) + |wy|*(by - 1) + 1`` (``n``
    sweep iterations, ``bx x by`` blocks) such that every dependence between blocks on two cores goes to a
    later step, and one between blocks on one core never to an earlier one; None when no weights up to
    :data:`MAX_WEIGHT` / :data:`MAX_PERIOD` do, or when the program has a reduction (its partials are
    combined, not pipelined). When no dependence crosses cores (one block per axis, as when a plan is
    re-instantiated on one core) any weights are legal and the fewest steps win."""
    if reductions(prog):
        return None
    deltas = block_deltas(prog, loop, space)
    if deltas is None:
        return None
    cross = [(dl, dx, dy) for dl, dx, dy in deltas if (dx, dy) != (0, 0)]
    periods = range(1, MAX_PERIOD + 1) if loop else (1,)
    best = None
    weights = range(-MAX_WEIGHT, MAX_WEIGHT + 1)
    for period, wx, wy in product(periods, weights, weights):
        if (wx, wy) == (0, 0):
            continue
        if any(period * dl + wx * dx + wy * dy < 1 for dl, dx, dy in cross):
            continue
        if any(period * dl + wx * dx + wy * dy < 0 for dl, dx, dy in deltas):
            continue
        steps = period * (n - 1) + abs(wx) * (blocks.get("x", 1) - 1) + abs(wy) * (blocks.get("y", 1) - 1) + 1
        # Fewest steps, then the smallest weights; forward weights win ties (a negative weight only runs a
        # pipeline from its last block).
        key = (steps, period + abs(wx) + abs(wy), min(wx, wy) < 0, (period, wx, wy))
        if best is None or key < best[0]:
            best = (key, (period, wx, wy))
    return best[1] if best else None
