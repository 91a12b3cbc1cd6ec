"""Where the operators of a program run on the mesh: runs of independent operators, slabs of the mesh sized
by work, slabs trimmed to the lines their operators use and packed from the mesh's edge, rectangles scaled
to another mesh, and the schedule of piece 0 renamed for piece k of a streamed program.

Pure geometry and renaming over schedules: nothing here searches or builds MeshIR (the search over these
placements is :mod:`.operators`)."""

from __future__ import annotations

from dataclasses import replace

from ..affine.isl_names import count_points
from ..affine.pieces import Pieces, piece_name
from ..affine.program import Program
from .mapping import work_blocks
from .schedule import Schedule
from .split import operator_program


def independent_runs(op: Program, ops: list) -> list[list[int]]:
    """Maximal runs (two or more) of consecutive operators no two of which depend on each other: none
    writes an array another reads or writes. They may run at the same time on disjoint cores."""
    def arrays(g):
        reads = {a.array for s in g for a in s.reads}
        writes = {s.write.array for s in g}
        return reads, writes
    rw = [arrays(g) for g in ops]

    def independent(i, j):
        (ri, wi), (rj, wj) = rw[i], rw[j]
        return not (wi & (rj | wj) or wj & ri)
    runs, run = [], [0] if ops else []
    for k in range(1, len(ops)):
        if all(independent(j, k) for j in run):
            run.append(k)
        else:
            runs.append(run)
            run = [k]
    runs.append(run)
    return [r for r in runs if len(r) > 1]


def slabs(op: Program, ops: list, mesh) -> list[tuple[list[int], list]]:
    """Placements :func:`search_operators` tries: each run of :func:`independent_runs` on slabs of the mesh
    cut along its longer axis, one slab per operator with a share of the cores proportional to its work
    (at least one line); every other operator on the whole mesh. Returns ``(run, places)`` pairs, places as
    :func:`map_operators` takes them."""
    out = []
    for run in independent_runs(op, ops):
        cut = slab_places([ops[k] for k in run], mesh)
        if cut is None:
            continue
        places = [((0, 0), tuple(mesh))] * len(ops)
        for k, place in zip(run, cut):
            places[k] = place
        out.append((run, places))
    return out


def slab_places(ops: list, mesh, axis: int | None = None) -> list | None:
    """One slab of the mesh per operator of ``ops``, cut along mesh axis ``axis`` (0: x; default the
    longer one) with a share of the cores proportional to the operator's work (at least one line each),
    as ``(origin, size)``; None when there are more operators than lines."""
    if axis is None:
        axis = 0 if mesh[0] >= mesh[1] else 1
    length = mesh[axis]
    if len(ops) > length:
        return None
    work = [max(1, sum(count_points(s.domain_set, {}) for s in g)) for g in ops]
    cuts = [0]
    for i in range(1, len(ops)):
        cut = round(length * sum(work[:i]) / sum(work))
        cuts.append(min(max(cut, cuts[-1] + 1), length - (len(ops) - i)))
    cuts.append(length)
    return [((a, 0), (b - a, mesh[1])) if axis == 0 else ((0, a), (mesh[0], b - a))
            for a, b in zip(cuts, cuts[1:])]


def packed_slabs(prog: Program, ops: list, sched: Schedule, group, axis: int) -> Schedule | None:
    """``sched`` (a phased schedule whose operators ``group`` sit on consecutive slabs along mesh axis
    ``axis``) with each of those slabs trimmed to the lines its operator works on and the slabs packed
    from the mesh's edge: a block produced on one slab crosses fewer cores to the next. Every decision,
    tiles included, is kept, so each operator builds the same MeshIR, moved. None when no slab has lines
    to spare."""
    mesh = sched.mesh
    used = {k: work_blocks(operator_program(prog, ops[k], k), sched.phases[k])["xy"[axis]] for k in group}
    if all(used[k] == sched.phases[k].mesh[axis] for k in group):
        return None
    phases, at = list(sched.phases), 0
    for k in group:
        u = used[k]
        phases[k] = phases[k].copy(origin=(at, 0) if axis == 0 else (0, at),
                                   mesh=(u, mesh[1]) if axis == 0 else (mesh[0], u))
        at += u
    return sched.copy(phases=tuple(phases))


def piece_phase(pieces: Pieces, phase: Schedule, k: int) -> Schedule:
    """``phase`` (a schedule of piece 0's statements) for the same statements of piece ``k``: statement
    and cut array names renamed, every decision kept (pieces of equal size)."""
    arrays = {piece_name(a, 0): piece_name(a, k) for a, _ in pieces.cut}
    stmts = {piece_name(s.name, 0): piece_name(s.name, k) for s in pieces.source.statements}
    return phase.copy(local_order=tuple((stmts[n], o) for n, o in phase.local_order),
                      homes=tuple(replace(h, array=arrays.get(h.array, h.array)) for h in phase.homes))


def scaled_place(origin, size, mesh_from, mesh_to) -> tuple[tuple[int, int], tuple[int, int]]:
    """The rectangle ``origin``/``size`` of ``mesh_from`` scaled to ``mesh_to`` (its edges scaled and rounded
    down, so rectangles disjoint before stay disjoint), at least one core wide."""
    lo = [o * t // f for o, t, f in zip(origin, mesh_to, mesh_from)]
    hi = [max(a + 1, (o + n) * t // f) for a, o, n, t, f in zip(lo, origin, size, mesh_to, mesh_from)]
    return tuple(lo), tuple(b - a for a, b in zip(lo, hi))
