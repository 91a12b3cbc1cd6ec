"""The search over reformulations: a program whose searched plan keeps it on one core is searched again with
its main nest aligned (:mod:`mica.affine.align`: another loop of its deepest statement outermost, the other
statements re-indexed to follow it) and with its pivot loops cut in three (:mod:`mica.affine.isplit`:
Floyd-Warshall's rows and columns before, at and after the pivot), and the cheapest plan wins.

In trisolv's own order ``x[i] -= L[i][j]*x[j]`` is sequential in both loops; aligned by ``j`` it runs as a
sweep over ``j`` whose steps are parallel over ``i`` (``x[j]`` multicast from its owner each step:
:func:`mica.lower.reads.step_owner_plan`). The aligned program computes exactly what the original does (isl
proves that every dependence keeps its direction), and every plan of it is proved legal and built by the same
passes as any other, so the choice is only about modelled cycles.

Programs whose plan already spreads are returned untouched without any further analysis: the alignments are
looked for only when the searched plan runs on one core and some loop of the main statement carries a
dependence (a nest already parallel in its own order gains nothing from another one)."""

from __future__ import annotations

from ..affine.align import PRIORITIES, Alignment, aligned_program, alignments
from ..affine.isplit import split_programs
from ..affine.deps import PARALLEL, REDUCTION, loop_kinds
from ..affine.program import Program
from ..errors import MicaError
from ..meshir.verify import verify
from ..targets import Target
from .cost import estimate
from .mapping import main_statement
from .operators import search_program
from .schedule import Schedule
from .search import Lowering, SearchReport


def spreads(sched: Schedule) -> bool:
    """Whether ``sched`` maps some loop to the mesh or steps one (in any of its phases)."""
    return bool(sched.space or sched.step is not None or any(spreads(p) for p in sched.phases))


def search_aligned(op: Program, mesh, tgt: Target, lowering: Lowering, side_by_side: bool = True, *,
                   progress=None, incumbent: float = float("inf")) -> tuple[Program, Schedule, SearchReport | None]:
    """The program to map and its searched plan: ``op`` and :func:`search_program`'s plan, unless that plan
    runs on one core and an aligned program (:func:`mica.affine.align.alignments`) or a split one
    (:func:`mica.affine.isplit.split_programs`) has a plan of fewer modelled cycles — then that program, its
    plan (its reasons saying how it was rewritten) and the report of its search. Preserves what the program
    computes (both rewrites do, bit for bit). ``incumbent``: the modelled cycles of a plan the caller has for
    another form of the computation (:func:`mica.tiling.operators.search_operators`)."""
    memo: dict = {}         # operator searches shared by the rewrites (most of their operators are the same)
    try:
        sched, report = search_program(op, mesh, tgt, lowering, side_by_side, progress=progress, memo=memo,
                                       incumbent=incumbent)
    except MicaError as exc:
        # No plan in the source order (trisolv at n = 120 on 8x8: its matrix fits no core and no loop is
        # parallel as written): a rewrite may still have one, else this is the error.
        sched, report, error = None, None, exc
    else:
        error = None
        if spreads(sched) or mesh[0] * mesh[1] == 1:
            return op, sched, report
    main = main_statement(op)
    sides = _side_nests(op)
    if all(k in (PARALLEL, REDUCTION) for k in loop_kinds(op)[main.name].values()) and not sides:
        if error is not None:
            raise error
        return op, sched, report          # no loop of a nest's deepest statement carries a dependence

    def rewrites(priority: str) -> list[tuple[Program, str]]:
        """The programs aligned under ``priority`` and not under an earlier one (the first priority's with the
        cuts at pivots), each with how it was made."""
        earlier = set(alignments(op, PRIORITIES[0])) if priority != PRIORITIES[0] else set()
        out = [(aligned_program(op, al), f"aligned: {_what(al)}")
               for al in alignments(op, priority) if al not in earlier]
        if priority == PRIORITIES[0]:
            out += [(prog, f"split: {how}, which runs the same instances in the same order as the source")
                    for how, prog in split_programs(op)]
        return out
    # A later priority's alignments only when nothing earlier spreads: each is a whole search. A program whose
    # plan leaves some operators on one core while others spread (or has no plan) is also searched with its
    # other nests aligned (_sides_aligned, _sides_may_help); each program once.
    one = None
    best = (float("inf"), op, sched, report)
    seen: set = {op}
    for priority in PRIORITIES:
        # (program, how it was made, whether its side nests are aligned already): a program made by
        # aligning side nests is not aligned again (aligning a nest twice swaps its loops back, at new
        # top-level positions, so the programs would never repeat and the search would not end).
        found = [(prog, how, False) for prog, how in rewrites(priority)]
        if sides and _sides_may_help(sched):
            found.insert(0, _sides_aligned(op, priority, sides, "") + (True,))
        if not any(prog is not None for prog, _, _ in found):
            continue
        if one is None:
            one = _cycles(op, sched, tgt, lowering) if error is None else float("inf")
            best = (one, op, sched, report)
        while found:
            prog, how, sided = found.pop(0)
            if prog is None or prog in seen:
                continue
            seen.add(prog)
            try:
                s, r = search_program(prog, mesh, tgt, lowering, side_by_side, progress=progress, memo=memo,
                                      incumbent=incumbent)
                # (without a plan in the source order, any plan of a rewrite is better than none)
                cycles = _cycles(prog, s, tgt, lowering) if spreads(s) or error is not None else float("inf")
            except MicaError:
                s, cycles = None, float("inf")
            if sides and not sided and _sides_may_help(s):
                found.insert(0, _sides_aligned(prog, priority, sides, how) + (True,))
            if cycles < best[0]:
                why = (f"{how}; in the source order no plan spreads ({one:,.0f} modelled cycles on one core)"
                       if error is None else f"{how}; in the source order no plan works ({str(error).splitlines()[0]})")
                best = (cycles, prog, s.copy(reasons=s.reasons + (why,)), r)
        if best[1] is not op:
            break
    if best[2] is None:
        raise error
    return best[1], best[2], best[3]


def _sides_may_help(sched: Schedule | None) -> bool:
    """Whether a program with plan ``sched`` (None: no plan) is also searched with its other nests aligned:
    when it has no plan (its data may fit only spread), or when some of its operators spread and others stay
    on one core. A plan that spreads nothing keeps its main nest on one core whatever the others do, and one
    that spreads everything has nothing left to gain (this bounds the searches a program with many nests
    costs)."""
    if sched is None:
        return True
    parts = [spreads(p) for p in sched.phases] if sched.phases else [spreads(sched)]
    return any(parts) and not all(parts)


def _what(al: Alignment) -> str:
    """``al`` in words with what it preserves."""
    if al.reordered:
        return (f"{al.describe()}, which computes what the source order does with the updates of "
                f"{', '.join(al.reordered)} summed in another order, as a reduction over cores sums them (isl "
                f"proves every other dependence keeps its direction)")
    return (f"{al.describe()}, which computes exactly what the source order does (isl proves every dependence "
            f"keeps its direction)")


def _side_nests(prog: Program) -> list[frozenset[str]]:
    """The top-level nests of ``prog`` other than the main statement's whose deepest statement has a loop
    carrying a dependence (a forward and a back substitution after ludcmp's LU), each as its statements'
    names: the nests :func:`_sides_aligned` aligns."""
    kinds = loop_kinds(prog)
    top = main_statement(prog).order[0]
    out = []
    for nest in sorted({s.order[0] for s in prog.statements if s.order}):
        stmts = [s for s in prog.statements if s.order[:1] == (nest,)]
        deepest = main_statement(prog.replace(statements=tuple(stmts)))
        if nest != top and len(deepest.loops) >= 2 and any(
                k not in (PARALLEL, REDUCTION) for k in kinds[deepest.name].values()):
            out.append(frozenset(s.name for s in stmts))
    return out


def _sides_aligned(prog: Program, priority: str, sides: list[frozenset[str]], how: str
                   ) -> tuple[Program | None, str]:
    """``prog`` with each nest of ``sides`` (statement names) aligned by its first alignment under
    ``priority`` (:func:`mica.affine.align.alignments` of that nest), one nest after another, and ``how``
    extended to say so; ``(None, how)`` when no nest has one. Each rewrite keeps what the program computes
    as :func:`_what` says."""
    done = []
    for names in sides:
        tops = {s.order[0] for s in prog.statements if s.name in names}
        if len(tops) != 1:
            continue                      # the nest was rewritten already (it held the main statement)
        found = alignments(prog, priority, tops.pop())
        if not found:
            continue
        prog = aligned_program(prog, found[0])
        done.append(_what(found[0]))
    if not done:
        return None, how
    more = "; ".join(f"aligned: {d}" for d in done)
    return prog, f"{how}; {more}" if how else more


def _cycles(prog: Program, sched: Schedule, tgt: Target, lowering: Lowering) -> float:
    """Modelled cycles of ``prog`` under ``sched``, built and verified first."""
    mp = lowering.program(prog, sched, tgt)
    verify(mp, tgt)
    return estimate(mp, tgt).total_cycles
