"""A program cut into operators: the top-level loop nests (or a legal fission of them), the sub-program each
operator maps, and the layouts arrays keep from one operator to the next.

An operator is a tuple of statements; a phased :class:`~mica.tiling.schedule.Schedule` maps one per phase.
Nothing here builds MeshIR (that is :mod:`mica.lower.phases`)."""

from __future__ import annotations

from ..affine.fission import fission, statement_graph
from ..affine.pieces import Pieces, cut_program
from ..affine.program import Program, Statement
from ..affine.repeat import RepeatLoop, repeat_candidates, repeated_program
from ..errors import ScheduleError
from .schedule import Home, Schedule


def split_operators(prog: Program, fine: bool = False) -> list[tuple[Statement, ...]]:
    """The statements grouped by top-level loop nest (the first entry of their textual order); with
    ``fine``, each nest further distributed into the finest legal sequence (:func:`mica.affine.fission.fission`)."""
    groups: dict[object, list[Statement]] = {}
    for s in prog.statements:
        groups.setdefault(s.order[0] if s.order else 0, []).append(s)
    nests = [tuple(g) for g in groups.values()]
    return fission(prog, nests) if fine else nests


def phase_operators(prog: Program, sched: Schedule) -> list[tuple[Statement, ...]]:
    """The operators a phased schedule maps: phase ``k`` runs the statements its ``local_order`` names.

    Raises :class:`ScheduleError` unless every statement is in exactly one phase and every dependence of
    ``prog`` runs from a phase to itself or a later one (running the phases in sequence is then legal)."""
    groups = [tuple(prog.statement(n) for n, _ in p.local_order) for p in sched.phases]
    names = [s.name for g in groups for s in g]
    if sorted(names) != sorted(s.name for s in prog.statements):
        raise ScheduleError(f"the phases of the schedule run statements {names}; {prog.name} has "
                            f"{[s.name for s in prog.statements]}, each must run in exactly one phase")
    phase_of = {s.name: k for k, g in enumerate(groups) for s in g}
    for src, dsts in statement_graph(prog).items():
        for dst in dsts:
            if phase_of[dst] < phase_of[src]:
                raise ScheduleError(
                    f"phase {phase_of[dst]} runs {dst}, which depends on {src} of the later phase "
                    f"{phase_of[src]}: the phases cannot run one after another")
    return groups


def operator_program(prog: Program, stmts: tuple[Statement, ...], k: int) -> Program:
    """The sub-program of one operator: all arrays; inputs are what it reads or updates in place."""
    touched = {a.array for s in stmts for a in s.accesses}
    read = {a.array for s in stmts for a in s.reads}
    written = {s.write.array for s in stmts}
    names = [a.name for a in prog.arrays]
    inputs = tuple(n for n in names if n in read or (n in written and n in prog.inputs))
    outputs = tuple(n for n in names if n in written)
    scalars = tuple((n, d) for n, d in prog.scalars if any(n in s.scalars() for s in stmts))
    arrays = tuple(a for a in prog.arrays if a.name in touched)
    runtime = tuple(r for r in prog.runtime if r[0] in {n for n, _ in scalars})
    on_mesh = tuple(n for n in prog.on_mesh if n in touched)
    return Program(f"{prog.name}_op{k}", arrays, stmts, inputs, outputs, scalars, runtime=runtime, on_mesh=on_mesh)


def fixed_homes_after(prog: Program, ops: list[tuple[Statement, ...]], scheds: list[Schedule],
                      arrays: frozenset[str] | None = None, latest: frozenset[str] = frozenset()) -> dict:
    """The homes arrays produced (or loaded) by the operators mapped so far keep for the next ones
    (only those named in ``arrays``, when given): the first operator's home of each array, except for the
    arrays in ``latest``, whose home is the last operator's (an array an operator re-laid out on the mesh
    stays where that operator left it)."""
    fixed = {}
    for stmts, s in zip(ops, scheds):
        touched = {a.array for st in stmts for a in st.accesses}
        if arrays is not None:
            touched &= arrays
        if not s.space and s.step is None:
            # A one-core operator leaves whole arrays on core (0, 0).
            for name in touched:
                shape = prog.array(name).shape
                fixed.setdefault(name, Home(name, tuple((None, n) for n in shape), (("x", 0), ("y", 0))))
            continue
        for h in s.homes:
            if h.array in touched and h.array in latest:
                fixed[h.array] = h
            elif h.array in touched:
                fixed.setdefault(h.array, h)
    return fixed


def loop_carried(ops: list[tuple[Statement, ...]], repeat: tuple, k: int) -> frozenset[str]:
    """The arrays operator ``k`` finds produced on the mesh because it runs inside a phase loop
    (:attr:`Schedule.repeat` ``(nest, loop, count, first, end)``): every array an operator of the loop writes
    (from the second iteration on, what the loop's operators read of it is the previous iteration's). Empty
    outside a loop."""
    if not repeat or not repeat[3] <= k < repeat[4]:
        return frozenset()
    return frozenset(s.write.array for g in ops[repeat[3]:repeat[4]] for s in g)


def program_pieces(op: Program, sched: Schedule) -> Pieces | None:
    """``op`` cut into the pieces ``sched`` maps (:attr:`Schedule.pieces`), or None when it maps ``op``."""
    if not sched.pieces:
        return None
    array, dim, count = sched.pieces
    return cut_program(op, array, int(dim), int(count))


def repeat_of(op: Program, sched: Schedule) -> RepeatLoop | None:
    """The loop of ``op`` that ``sched`` runs around operators (:attr:`Schedule.repeat`), or None. Raises
    :class:`ScheduleError` when ``op`` has no such loop."""
    if not sched.repeat:
        return None
    nest, loop, count = sched.repeat[:3]
    for rep in repeat_candidates(op):
        if (rep.nest, rep.loop, rep.count) == (nest, loop, count):
            return rep
    raise ScheduleError(f"the schedule runs loop {loop} of top-level nest {nest} ({count} iterations) around its "
                        f"operators; {op.name} has no such loop")


def mapped_program(op: Program, sched: Schedule) -> Program:
    """The program whose statements ``sched`` maps: ``op``, its pieces, or its body with the loop the schedule
    runs around operators taken off (:func:`mica.affine.repeat.repeated_program`)."""
    rep = repeat_of(op, sched)
    if rep is not None:
        return repeated_program(op, rep)
    pieces = program_pieces(op, sched)
    return op if pieces is None else pieces.program
