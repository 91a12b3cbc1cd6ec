"""Schedule search: candidate plans × the PLMR cost model, with SRAM and colours as hard constraints.

Three small pieces, in the spirit of TVM's meta-schedule protocols:

* :func:`space` (the space generator) lists :class:`Decisions`: which loops go to which mesh axes, how
  many cores to use along each (sub-rectangles; square grids on a rectangular mesh), how a step loop's
  panels move (SUMMA multicasts, Cannon ring shifts, interleaved ≤2-hop ring shifts), whether they are double-buffered (the next step's panels
  travel while this step computes, at the price of a second receive slot in SRAM) and how reductions
  across cores combine (chain, a two-level tree with a group size, or a multi-level tree of a fan-in);
* :func:`evaluate` (the runner) turns decisions into a schedule, builds its MeshIR — which is where the
  SRAM budget, the colour budget and the legality of the communication are checked — and costs it;
* :func:`search` (the strategy) tries every candidate, records why each loser lost or was rejected, and
  returns the cheapest plan with a :class:`SearchReport`.

Every candidate is built by the same pipeline a forced schedule goes through; nothing is costed that
could not be compiled.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace
from math import ceil, isqrt, prod
from typing import Callable

from ..affine.deps import REDUCTION, loop_kinds
from ..affine.program import Program
from ..affine.isl_names import isl_budget
from ..errors import CommError, MeshIRError, MicaError, ScheduleError, SramError
from ..meshir.ir import MeshProgram
from ..meshir.on_mesh import check_on_mesh_caps
from ..meshir.verify import verify
from ..targets import DTYPE_BYTES, Target
from .cost import Cost, estimate, expr_flops
from .mapping import (derive_schedule, fixed_tiles, loop_extent, main_statement, sliced_nest, spatial_candidates,
                      wavefront_candidates)
from .schedule import Home, Schedule

PROGRESS_AFTER_S = 2.0


@dataclass(frozen=True)
class Lowering:
    """How the search turns a schedule into MeshIR: the pipeline's lowering passes (:mod:`mica.lower`), handed
    to the search so that ``tiling/`` never imports the packages below it (the search proposes schedules;
    lowering them is a later pass, which the search runs on every candidate as TVM's search strategies run
    a builder).

    * ``operator(prog, sched, target, *, resident=None) -> MeshProgram`` — one operator
      (:func:`mica.lower.build.build_mesh_program`);
    * ``program(prog, sched, target) -> MeshProgram`` — any schedule: phased, placed or streamed
      (:func:`mica.lower.phases.build_program`);
    * ``relayout_cycles(prog, home_from, home_to, mesh, target) -> float`` — modelled cycles of transposing
      an array's blocks on the mesh (:func:`mica.lower.relayout.relayout_cycles`).
    """

    operator: Callable[..., MeshProgram]
    program: Callable[[Program, Schedule, Target], MeshProgram]
    relayout_cycles: Callable[[Program, Home, Home, tuple[int, int], Target], float]


@dataclass(frozen=True)
class Decisions:
    """One point of the search space (see :func:`mica.tiling.mapping.derive_schedule`)."""

    assignment: tuple[tuple[str, str], ...]
    blocks: tuple[tuple[str, int], ...] = ()
    skew: str = "none"
    reduce: str = "chain"
    group: int = 0
    buffers: int = 1
    steps: bool = True
    wave: bool = False
    stream: int = 0                 # > 0: the step's read-only inputs stream from device DRAM in panels of this
    stream_roots: bool = False      # a line's shared panel read by its first core and multicast (dram_roots)

    @property
    def family(self) -> str:
        """The plan family of :data:`mica.tiling.schedule.PLAN_FAMILIES` these decisions make."""
        if not self.assignment:
            return "one-core"
        if self.wave:
            return "wavefront"
        if not self.steps:
            return "slices"
        return {"none": "summa", "cannon": "cannon", "interleaved": "interleaved"}[self.skew]

    def describe(self) -> str:
        space = ", ".join(f"{lp}->{ax}" for lp, ax in self.assignment) or "one core"
        blocks = ", ".join(f"{ax}:{n}" for ax, n in self.blocks)
        out = f"[{space}] cores ({blocks})"
        if self.skew != "none":
            out += f" {self.skew} rings"
        if self.reduce == "tree":
            out += f" tree/{self.group}"
        elif self.reduce == "levels":
            out += f" {self.group}-ary tree"
        if self.buffers == 2:
            out += " double-buffered"
        if not self.steps:
            out += " slices in original order"
        if self.wave:
            out += " wavefront"
        if self.stream:
            out += f" streamed from DRAM (panels of {self.stream}" + (", read by line roots and multicast)"
                                                                       if self.stream_roots else ")")
        return out


@dataclass(frozen=True)
class Candidate:
    decisions: Decisions
    cycles: float | None
    rejected: str = ""
    schedule: Schedule | None = field(default=None, compare=False, repr=False)
    cost: Cost | None = field(default=None, compare=False, repr=False)
    cause: str = ""                 # why it was rejected: a key of REJECTIONS or the error class's cause
    error: MicaError | None = field(default=None, compare=False, repr=False)   # the rejecting error


@dataclass(frozen=True)
class SearchReport:
    """Every candidate considered, its modelled cycles or why it was rejected, and the winner."""

    candidates: tuple[Candidate, ...]
    winner: int
    seconds: float

    @property
    def best(self) -> Candidate:
        return self.candidates[self.winner]

    def causes(self) -> list[tuple[str, int]]:
        """How many candidates each typed cause rejected (:data:`REJECTIONS`), most frequent first."""
        counts: dict[str, int] = {}
        for c in self.candidates:
            if c.cycles is None:
                counts[c.cause] = counts.get(c.cause, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def table(self, limit: int = 25) -> str:
        ok = sorted((c for c in self.candidates if c.cycles is not None), key=lambda c: c.cycles)
        bad = [c for c in self.candidates if c.cycles is None]
        best = self.best
        lines = [f"searched {len(self.candidates)} candidate plans in {self.seconds:.2f} s: "
                 f"{len(ok)} feasible, {len(bad)} rejected"]
        for c in ok[:limit]:
            mark = "*" if c is best else " "
            ratio = c.cycles / best.cycles if best.cycles else 1.0
            lines.append(f" {mark} {c.cycles:>14,.0f} cycles  x{ratio:6.2f}  {c.decisions.describe()}")
        if len(ok) > limit:
            lines.append(f"   ... {len(ok) - limit} more feasible plans")
        reasons: dict[str, int] = {}
        for c in bad:
            reasons[c.rejected] = reasons.get(c.rejected, 0) + 1
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:limit]:
            lines.append(f"   rejected x{n}: {why}")
        lines.append(f"winner: {best.decisions.describe()} — the lowest modelled cycles "
                     f"({best.cycles:,.0f}) among feasible plans")
        return "\n".join(lines)


def _core_options(p: int, extent: int) -> list[int]:
    """Core counts to try along an axis of ``p`` cores for a loop of ``extent`` iterations: all of them,
    a half, a quarter — each trimmed to the blocks its tile size actually makes (no idle cores). When the
    whole loop fits the axis, also every power of two below: the counts an axis of ``2^k <= p`` cores tries
    are then all tried here, so a plan a smaller mesh finds stays a candidate on a larger one (adi's rows in
    two blocks on 8x8 and on the wafer). A longer loop keeps the three (its counts grow with the mesh)."""
    top = min(p, extent)
    counts = {top, max(1, top // 2), max(1, top // 4)}
    c = 1
    while c < top and extent <= p:
        counts.add(c)
        c *= 2
    return sorted({_blocks_of(extent, c) for c in counts}, reverse=True)


#: Grids a wavefront is tried on per base grid: the grid itself, then halved up to WAVE_RUNGS - 1 times.
WAVE_RUNGS = 4


def _aligned_counts(main, loop: str, axis: str, p: int, fixed_homes: dict | None) -> set[int]:
    """Core counts along ``axis`` (``p`` cores) that give ``loop`` the tiles of the layouts ``fixed_homes`` left
    for the arrays ``main`` accesses (its write and reads) along ``loop`` alone and ``axis``: each core then
    works on the elements it already holds (a write lands on its owner, a read needs no other tile). A count is
    offered only when it gives that tile back (``ceil(extent / n) == tile``). Empty without fixed layouts."""
    if not fixed_homes:
        return set()
    extent = loop_extent(main, loop)
    return {n for t in fixed_tiles(main.accesses, fixed_homes, loop, axis) if t > 0 for n in [-(-extent // t)]
            if 1 <= n <= p and -(-extent // n) == t}


def _blocks_of(extent: int, cores: int) -> int:
    """The blocks ``extent`` iterations make in tiles sized for ``cores`` (no idle cores)."""
    return -(-extent // -(-extent // cores))


#: The fan-ins of the multi-level trees the search tries (:func:`reduction_levels`): a binary tree has the
#: fewest stages, wider groups fewer levels; a fan-in whose square reaches ``n`` would be a two-level tree.
LEVEL_FANINS = (2,)


def _group_options(n: int) -> list[int]:
    opts = {g for g in (2, 4, 8, 16, 32, 64) if g < n} | ({max(2, isqrt(n))} if n > 2 else set())
    return sorted(opts)


def space(prog: Program, mesh: tuple[int, int], rings: bool = True,
          fixed_homes: dict | None = None) -> list[Decisions]:
    """The candidate decisions for ``prog`` on ``mesh`` (see the module docstring); without ``rings``, no
    skewed (Cannon, interleaved) plans: an operator placed away from core (0, 0) cannot ring its panels.
    ``fixed_homes`` (layouts earlier operators left): a spatial loop also tries the blocks of every such layout
    of an array its main statement accesses along that loop and axis (:func:`_aligned_counts`)."""
    main = main_statement(prog)
    kinds = loop_kinds(prog)[main.name]
    dims = {"x": mesh[0], "y": mesh[1]}
    out: list[Decisions] = []
    for assignment in spatial_candidates(prog):
        per_axis = {ax: sorted(set(_core_options(dims[ax], loop_extent(main, lp)))
                               | _aligned_counts(main, lp, ax, dims[ax], fixed_homes), reverse=True)
                    for lp, ax in assignment}
        axes = sorted(per_axis)
        combos: list[dict[str, int]] = [{}]
        for ax in axes:
            combos = [{**c, ax: n} for c in combos for n in per_axis[ax]]
        spatial = {lp for lp, _ in assignment}
        leftover_reduction = any(kinds[lp] == REDUCTION and lp not in spatial for lp in main.loops)
        reduced = [ax for lp, ax in assignment if kinds[lp] == REDUCTION]
        ringed = len(assignment) == 2 and leftover_reduction
        # Square grids: sides from the shorter axis, trimmed to each loop's blocks.
        sides = ([c for lp, _ in assignment for c in _core_options(min(dims["x"], dims["y"]), loop_extent(main, lp))]
                 if len(assignment) == 2 else [])
        if ringed and rings:
            combos += [{"x": c, "y": c, "ring": 1} for c in sides]       # rings need a square of cores
        if dims["x"] != dims["y"]:
            # On a rectangular mesh plain square grids too: equal tiles on both axes let a statement read a
            # square array both ways (through a mirror home) and a later operator transpose it on the mesh.
            combos += [{"x": c, "y": c} for c in sides]
        for blocks in combos:
            skews = ["none"]
            if blocks.pop("ring", None):
                # Interleaved first: at equal modelled cycles (double-buffered rings whose shifts all hide
                # behind compute) the plan whose every step is at most 2 hops wins the tie, not the one
                # that sends across the whole line every step.
                skews = ["interleaved", "cannon"]
            for skew in skews:
                reductions = [("chain", 0)]
                if reduced:
                    n = max(blocks[ax] for ax in reduced)
                    reductions += [("tree", g) for g in _group_options(n)]
                    reductions += [("levels", g) for g in LEVEL_FANINS if g * g < n]
                for reduce, group in reductions:
                    base = Decisions(tuple(assignment), tuple(sorted(blocks.items())), skew, reduce, group)
                    out.append(base)
                    if leftover_reduction:
                        # A stepped loop: its panels may be double-buffered (after the single-buffered
                        # variant, which wins ties: it needs less SRAM).
                        out.append(Decisions(base.assignment, base.blocks, skew, reduce, group, 2))
                if skew == "none" and leftover_reduction and not reduced and sliced_nest(prog, spatial):
                    # The nest's statements feed each other across iterations (symm): no step loop, each
                    # core runs its slice of the spatial loops in the original order.
                    out.append(Decisions(tuple(assignment), tuple(sorted(blocks.items())), steps=False))
    for assignment in wavefront_candidates(prog):
        # Loops carrying dependences of bounded distance, as a wavefront on the whole mesh (more cores make
        # a shorter pipeline per block) and on the square of its shorter side. When that gives a core a
        # single iteration of a wave loop (the pipeline then passes a message per row), also on a half, a
        # quarter and an eighth of it (at least two blocks): a larger mesh should not lose the plan a
        # smaller one finds (Gauss-Seidel 64x64 on the wafer). Each rung is a candidate built in full.
        extent = {ax: loop_extent(main, lp) for lp, ax in assignment}
        blocks = {ax: _core_options(dims[ax], extent[ax])[0] for ax in extent}
        bases = [blocks]
        if len(assignment) == 2 and dims["x"] != dims["y"]:
            side = min(blocks.values())
            bases.append({ax: side for ax in blocks})
        options = []
        for base in bases:
            thin = any(-(-extent[ax] // base[ax]) == 1 for ax in base)
            for rung in range(WAVE_RUNGS if thin else 1):
                f = 2 ** rung
                if f > 1 and min(base.values()) // f < 2:
                    break
                options.append({ax: _blocks_of(extent[ax], max(1, base[ax] // f)) for ax in base})
        for b in dict.fromkeys(tuple(sorted(b.items())) for b in options):
            out.append(Decisions(tuple(assignment), b, wave=True))
    return list(dict.fromkeys(out))


def compute_bound(prog: Program, mesh: tuple[int, int], target: Target, d: Decisions) -> float:
    """A lower bound on a candidate's modelled cycles: the main statement's work on one core (its tile
    of every spatial loop, the whole of every other loop) at the target's FLOP rate, the fewest vector
    operations and calls that work can take, plus the hop latency its communication pattern cannot avoid."""
    main = main_statement(prog)
    cores = dict(d.blocks)
    if d.skew != "none" and cores:
        side = min(cores.values())
        cores = {ax: side for ax in cores}
    axis_of = dict(d.assignment)
    work, longest = 1, 1
    for lp in main.loops:
        n = loop_extent(main, lp)
        ext = ceil(n / cores[axis_of[lp]]) if lp in axis_of else n
        work *= ext
        longest = max(longest, ext)
    dtype = prog.array(main.write.array).dtype
    # The compute model's overheads (mica.tiling.cost.call_cycles): whatever loop the kernel runs innermost,
    # its runs are at most the longest local extent, so there are at least work / longest vector operations,
    # and at least one call.
    over = (ceil(work / longest) * target.vector_op_cycles + target.call_cycles) if work and main.loops else 0.0
    return (work * max(expr_flops(main.expr), 1) / target.flops(dtype) + over
            + _latency_bound(prog, target, d, cores))


def reduction_levels(reduce: str, group: int, n: int) -> list[tuple[int, int]]:
    """(hops per shift, stages) of each level of a reduction across ``n`` cores of one axis combined as
    ``reduce`` with ``group`` (:attr:`Schedule.reduce`; what :mod:`mica.lower.reduce` builds): a chain is one
    level of ``n - 1`` one-hop stages, a two-level tree ``g - 1`` one-hop stages then ``ceil(n / g) - 1``
    stages of ``g`` hops, a ``g``-ary tree a level per power of ``g`` below ``n``."""
    if n <= 1:
        return []
    if reduce == "chain":
        return [(1, n - 1)]
    g = min(group, n)
    if reduce == "tree":
        return [(1, g - 1)] + ([(g, ceil(n / g) - 1)] if ceil(n / g) > 1 else [])
    out, span = [], 1
    while span < n:
        out.append((span, min(g, ceil(n / span)) - 1))
        span *= g
    return out


def reduction_stages(reduce: str, group: int, n: int) -> int:
    """The stages, one after another, of a reduction across ``n`` cores (:func:`reduction_levels`)."""
    return sum(k for _, k in reduction_levels(reduce, group, n))


def reduction_hops(reduce: str, group: int, n: int) -> int:
    """The hops its stages' shifts travel one after another: at least ``n - 1`` (the last core's partial
    reaches coordinate 0), exactly that for a chain, or for a tree whose groups are all full."""
    return sum(h * k for h, k in reduction_levels(reduce, group, n))


def _latency_bound(prog: Program, target: Target, d: Decisions, cores: dict[str, int]) -> float:
    """Hop latency no plan of these decisions can avoid, as the cost model charges it: the first step of
    a stepped loop waits for its farthest panel (later steps only for what a dependence chain carries,
    which this bound leaves out), and a reduction across cores passes through every stage."""
    main = main_statement(prog)
    kinds = loop_kinds(prog)[main.name]
    spatial = {lp for lp, _ in d.assignment}
    lat = target.hop_latency
    bound = 0.0
    leftover = [lp for lp in main.loops if kinds[lp] == REDUCTION and lp not in spatial]
    if len(d.assignment) == 2 and leftover:
        bx, by = cores.get("x", 1), cores.get("y", 1)
        if d.skew == "none":
            bound += (max(bx, by) - 1) * lat              # the first step's farthest multicast target
        elif d.buffers == 2:
            pass                                          # the first shift may hide behind step 0's compute
        elif d.skew == "cannon":
            bound += (bx - 1) * lat                       # the first shift waits for the wrap-around
        else:
            bound += min(2, bx - 1) * lat
    # Each reduction stage, one after another: the hop (hardware-routed, no software relay), the partial
    # (the output tile) at link bandwidth, and its accumulate (one operation per element); a shift longer than
    # a hop adds its other hops.
    axis_of = dict(d.assignment)
    tile = 1
    for lp in main.loops:
        if kinds[lp] != REDUCTION:
            n = loop_extent(main, lp)
            tile *= ceil(n / cores[axis_of[lp]]) if lp in axis_of else n
    dtype = prog.array(main.write.array).dtype
    stage = lat + tile * DTYPE_BYTES[dtype] / target.link_bytes_per_cycle + tile / target.flops(dtype)
    for lp, ax in d.assignment:
        if kinds[lp] == REDUCTION:
            n = cores[ax]
            levels = reduction_levels(d.reduce, d.group, n)
            stages = sum(k for _, k in levels)
            bound += stages * stage + (sum(h * k for h, k in levels) - stages) * lat
    return bound


def evaluate(prog: Program, mesh: tuple[int, int], target: Target, d: Decisions, lowering: Lowering,
             fixed_homes: dict | None = None, resident: frozenset[str] | None = None, *,
             verify_below: float = float("inf"), caps: dict | None = None) -> Candidate:
    """Builds (through ``lowering``), costs and verifies one candidate; a schedule that cannot be built or
    that the verifier refuses is rejected with the reason. The verifier runs on a candidate whose modelled
    cycles are at most ``verify_below`` (the best plan so far: only such a candidate can be chosen, so a
    plan the verifier would refuse is never chosen); costlier ones are reported feasible unverified.
    ``caps``: the most bytes per core of each on-mesh array (:func:`mica.meshir.on_mesh.on_mesh_caps`)."""
    sched = None
    try:
        with isl_budget(f"schedule search, candidate {d.describe()}"):
            sched = derive_schedule(prog, mesh, assignment=list(d.assignment), blocks=dict(d.blocks),
                                    skew=d.skew, reduce=d.reduce, group=d.group, family=d.family, searched=True,
                                    fixed_homes=fixed_homes, buffers=d.buffers, steps=d.steps, wave=d.wave,
                                    dram=streamed_arrays(prog, d) if d.stream else (),
                                    step_tile=d.stream or None, dram_roots=d.stream_roots)
            mp = lowering.operator(prog, sched, target, resident=_resident(fixed_homes, resident))
            if caps:
                check_on_mesh_caps(mp, caps)
            cost = estimate(mp, target)
            if cost.total_cycles <= verify_below:
                verify(mp, target)
    except (ScheduleError, CommError, MeshIRError) as exc:
        if sched is None:
            exc.before_combining = True       # derive_schedule reads the combining only into its reasons
        cause, line = rejection(exc)
        return Candidate(d, None, line, cause=cause, error=exc)
    return Candidate(d, cost.total_cycles, "", sched, cost)


def uncombined(d: Decisions) -> Decisions:
    """``d`` without its choice of how partial results combine across cores (chain; no group): the decisions
    that fix everything a build reads before the combining (:attr:`MicaError.before_combining`)."""
    return replace(d, reduce="chain", group=0)


def dominant_rejection(prog: Program, mesh: tuple[int, int], results: list[Candidate]) -> MicaError:
    """The error to raise when every candidate of ``results`` was rejected: among those rejected for the most
    frequent cause (SRAM, dependence, ownership, ...), that of the plan needing the least SRAM (for SRAM) or
    else of the most promising one (the lowest compute bound: ``results`` is in bound order), with the count per cause in its message and every
    rejection in its detail. Preserves the error's class (an SRAM error stays an :class:`SramError`)."""
    rejected = [c for c in results if c.error is not None]
    if not rejected:
        return ScheduleError(f"no feasible schedule for {prog.name} on {mesh}",
                             detail="\n".join(c.rejected for c in results))
    counts: dict[str, int] = {}
    for c in rejected:
        counts[c.cause] = counts.get(c.cause, 0) + 1
    cause = max(counts, key=lambda k: (counts[k], -next(i for i, c in enumerate(rejected) if c.cause == k)))
    of_cause = [c for c in rejected if c.cause == cause]
    # The plan that came closest to fitting, for SRAM; else the most promising one.
    best = min(of_cause, key=lambda c: getattr(c.error, "needed", None) or 0) if cause == "sram" else of_cause[0]
    exc = best.error
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    w, h = mesh
    which = "the one closest to fitting" if cause == "sram" else "the most promising"
    exc.args = (f"{exc.args[0] if exc.args else exc} [no plan of {prog.name} works on the {w}x{h} mesh; this is "
                f"{which} of the {counts[cause]} candidate(s) rejected for {cause}, {best.decisions.describe()}; "
                f"{len(rejected)} rejected in all: {tally}]",) + tuple(exc.args[1:])
    exc.detail = "\n".join(["candidates rejected:"] + [f"  {c.decisions.describe()}: {c.rejected}" for c in rejected]
                           + ([exc.detail] if exc.detail else []))
    return exc


def _resident(fixed_homes: dict | None, resident: frozenset[str] | None) -> frozenset[str]:
    return frozenset(fixed_homes or ()) if resident is None else resident


#: Panel sizes (step-loop tiles) a plan streaming from device DRAM tries: multiples of Tenstorrent's 32x32 tile.
STREAM_TILES = (32, 64, 128, 256)


def streamed_arrays(prog: Program, d: Decisions) -> tuple[str, ...]:
    """The arrays a streamed plan of decisions ``d`` keeps in device DRAM: every read-only input the main
    statement reads by its step loop (the first reduction loop no spatial loop takes). Changes nothing."""
    main = main_statement(prog)
    kinds = loop_kinds(prog)[main.name]
    spatial = {lp for lp, _ in d.assignment}
    step = next((lp for lp in main.loops if kinds[lp] == REDUCTION and lp not in spatial), None)
    written = {s.write.array for s in prog.statements}
    return tuple(dict.fromkeys(acc.array for acc in main.reads
                               if acc.array in prog.inputs and acc.array not in written
                               and any(ix.single_var() == step for ix in acc.index))) if step else ()


def stream_space(prog: Program, decisions: list[Decisions]) -> list[Decisions]:
    """Streamed variants of the unskewed stepped plans among ``decisions`` (SUMMA's family: a step loop whose
    panels no ring skews), per panel size of :data:`STREAM_TILES` up to the step loop's extent: every core
    reading its own panels, and the first core of each line reading the panel the line shares and multicasting
    it (``dram_roots``)."""
    out = []
    main = main_statement(prog)
    kinds = loop_kinds(prog)[main.name]
    for d in decisions:
        if d.family != "summa" or not streamed_arrays(prog, d):
            continue
        spatial = {lp for lp, _ in d.assignment}
        step = next(lp for lp in main.loops if kinds[lp] == REDUCTION and lp not in spatial)
        n = loop_extent(main, step)
        for tile in STREAM_TILES:
            if tile < n or tile == STREAM_TILES[0]:
                for roots in (False, True):
                    out.append(Decisions(d.assignment, d.blocks, d.skew, d.reduce, d.group, d.buffers, d.steps,
                                         d.wave, tile, roots))
    return list(dict.fromkeys(out))


def may_stream(prog: Program, target: Target, fixed_homes, resident, caps) -> bool:
    """Whether the search may offer plans streaming from device DRAM: a target with a DRAM level (never WSE),
    a program of one operator searched on its own (no layouts fixed by other operators, nothing kept on the
    mesh)."""
    return bool(getattr(target, "has_dram", False)) and not fixed_homes and resident is None and not caps \
        and not prog.on_mesh


#: Typed reasons a candidate is rejected, with the line the report prints for each (``{kind}``: the error
#: class). Errors carry them as :attr:`MicaError.cause`; an SRAM error without one is ``sram``.
REJECTIONS = {
    "pruned": "pruned: its compute and minimum latency exceed the best plan",
    "double-buffers": "{kind}: the double buffers (a second slot per received panel) exceed the SRAM budget",
    "nothing-to-prefetch": "{kind}: double buffering: the step loop receives no panels to prefetch",
    "sram": "{kind}: per-core data exceeds the SRAM budget",
    "colours": "{kind}: needs more colours than a router holds",
    "on-mesh-share": "{kind}: keeps more of an array on the mesh per core than its share of SRAM",
}


def rejection(exc: MicaError) -> tuple[str, str]:
    """``(cause, line)`` of a candidate rejected by ``exc``: the typed cause the error carries (an SRAM
    error's default ``sram``; otherwise its class name in lower case) and the report's line for it."""
    kind = type(exc).__name__
    cause = exc.cause or ("sram" if isinstance(exc, SramError) else kind.lower())
    if cause in REJECTIONS:
        return cause, REJECTIONS[cause].format(kind=kind)
    return cause, f"{kind}: {str(exc)[:160]}"


def stream_bound(prog: Program, mesh: tuple[int, int], target: Target, d: Decisions) -> float:
    """A lower bound on the modelled cycles of streamed decisions ``d``: the main statement's work on one core
    (as :func:`compute_bound`, without the multicast latency a streamed plan does not pay) plus the DRAM reads
    no overlap hides: the first step's panels when double-buffered, every step's otherwise (each core reads its
    panels at its share of the chip's bandwidth, :meth:`Target.dram_read_cycles`)."""
    main = main_statement(prog)
    kinds = loop_kinds(prog)[main.name]
    cores = dict(d.blocks)
    axis_of = dict(d.assignment)
    work = compute_bound(prog, mesh, target, d) - _latency_bound(prog, target, d, cores)
    step = next(lp for lp in main.loops if kinds[lp] == REDUCTION and lp not in axis_of)
    n = loop_extent(main, step)
    tile = min(d.stream, n)
    panel = 0.0
    for a in streamed_arrays(prog, d):
        arr = prog.array(a)
        acc = next(acc for acc in main.reads if acc.array == a)
        elems = 1
        axes = set()
        for ix, ext in zip(acc.index, arr.shape):
            v = ix.single_var()
            elems *= tile if v == step else ceil(ext / cores[axis_of[v]]) if v in axis_of else ext
            if v in axis_of:
                axes.add(axis_of[v])
        # line roots read a panel their line shares (one spatial axis indexes it); else every core reads
        readers = cores[axes.pop()] if d.stream_roots and len(axes) == 1 else prod(cores.values())
        panel += target.dram_read_cycles(elems * arr.elem_bytes, readers)
    return work + (panel if d.buffers == 2 else ceil(n / tile) * panel)


def _search_streamed(prog: Program, mesh: tuple[int, int], target: Target, decisions: list[Decisions],
                     bounds: list[float], lowering: Lowering, best: float = float("inf")) -> list[Candidate]:
    """The streamed candidates ``decisions`` (lower bounds ``bounds``, :func:`stream_bound`), evaluated in order
    of their bound with the same branch and bound as :func:`search`, starting from ``best``: the cycles of the
    best plan found without streaming (inf: none). A candidate whose bound reaches the best so far is pruned."""
    out: list[Candidate] = []
    for k in sorted(range(len(decisions)), key=lambda i: (bounds[i], i)):
        if bounds[k] >= best:
            out.append(Candidate(decisions[k], None, REJECTIONS["pruned"], cause="pruned"))
            continue
        c = evaluate(prog, mesh, target, decisions[k], lowering, verify_below=best)
        out.append(c)
        if c.cycles is not None:
            best = min(best, c.cycles)
    return out


def streamed_candidates(prog: Program, mesh: tuple[int, int], target: Target, decisions: list[Decisions],
                        best: float) -> tuple[list[Decisions], list[float]]:
    """The streamed variants of ``decisions`` (:func:`stream_space`) and their lower bounds
    (:func:`stream_bound`) when at least one bound is below ``best``, the cycles of the best plan holding its
    data in SRAM (inf: none fits); else nothing, so that a program no streamed plan can beat evaluates none
    and its search report is the resident search's alone. Changes nothing."""
    streamed = stream_space(prog, decisions)
    bounds = [stream_bound(prog, mesh, target, d) for d in streamed]
    if not any(b < best for b in bounds):
        return [], []
    return streamed, bounds


def search(prog: Program, mesh: tuple[int, int], target: Target, lowering: Lowering, *, progress=None,
           fixed_homes: dict | None = None, resident: frozenset[str] | None = None, rings: bool = True,
           caps: dict | None = None) -> tuple[Schedule, SearchReport]:
    """The cheapest feasible plan of ``prog`` on ``mesh`` and the report of the search (without ``rings``:
    no skewed plans, see :func:`space`).

    ``fixed_homes`` are layouts other operators chose (see :func:`mica.tiling.split.fixed_homes_after`);
    ``resident`` the arrays an earlier operator leaves on the mesh (default: those of ``fixed_homes``);
    ``caps`` the most bytes per core a plan may keep of each on-mesh array (see :func:`evaluate`).

    When the target has device DRAM (:func:`may_stream`), the unskewed stepped plans are tried again with the
    step's read-only inputs streamed from DRAM (:func:`stream_space`) when no candidate fits, or when a streamed
    plan's lower bound (:func:`stream_bound`) is below the best fitting plan's cycles: a streamed plan is chosen
    only when it models fewer cycles (e.g. it uses every core of an 11x10 Blackhole where a resident plan fits
    10x10), and a program where none can win evaluates none, its report unchanged. WSE targets never stream.
    A :class:`~mica.errors.DramError` when no candidate fits and the streamed ones do not fit the device DRAM
    either.

    ``progress`` is called ``(count, total, elapsed, done=False)`` while a search runs longer than
    :data:`PROGRESS_AFTER_S` (:func:`mica.progress.search_reporter` makes the pipeline's); None: silent.

    When no candidate is feasible, raises :func:`dominant_rejection`'s error: the most frequent cause across
    the candidates (e.g. the data cannot fit the SRAM at all on this mesh), with its most promising candidate.
    """
    t0 = time.perf_counter()
    with isl_budget("schedule search: candidate space"):
        decisions = space(prog, mesh, rings, fixed_homes)
        bounds = [compute_bound(prog, mesh, target, d) for d in decisions]
    order = sorted(range(len(decisions)), key=lambda i: (bounds[i], i))
    results: list[Candidate] = []
    best_cycles = float("inf")
    shown, last_shown = False, 0.0
    refused: dict[Decisions, Candidate] = {}     # rejected before combining, by decisions without the combining
    for i, k in enumerate(order):
        d = decisions[k]
        same = refused.get(uncombined(d))
        if bounds[k] >= best_cycles and d.assignment:       # (the one-core plan is always built: it wins ties)
            # Branch and bound: its computation and unavoidable latency exceed the best plan found.
            results.append(Candidate(d, None, REJECTIONS["pruned"], cause="pruned"))
        elif same is not None:
            # A plan differing only in how it combines partial results failed before the combining mattered.
            results.append(replace(same, decisions=d, error=copy.copy(same.error)))
        else:
            c = evaluate(prog, mesh, target, d, lowering, fixed_homes, resident, verify_below=best_cycles,
                         caps=caps)
            results.append(c)
            if c.cycles is not None:
                best_cycles = min(best_cycles, c.cycles)
            elif c.error.before_combining:
                refused[uncombined(d)] = c
        elapsed = time.perf_counter() - t0
        if progress and elapsed > PROGRESS_AFTER_S and (elapsed - last_shown > 0.5 or i + 1 == len(decisions)):
            shown, last_shown = True, elapsed
            progress(i + 1, len(decisions), elapsed)
    if shown:
        progress(len(decisions), len(decisions), time.perf_counter() - t0, done=True)
    feasible = [i for i, c in enumerate(results) if c.cycles is not None]
    resident_rejected = len(results)
    best_resident = min((results[i].cycles for i in feasible), default=float("inf"))
    if may_stream(prog, target, fixed_homes, resident, caps):
        # The step's read-only inputs may stay in device DRAM: tried when no plan holds its data in the cores'
        # SRAM, or when a streamed plan's lower bound is below the best such plan's cycles.
        with isl_budget("schedule search: streamed candidates"):
            streamed, stream_bounds = streamed_candidates(prog, mesh, target, decisions, best_resident)
        results += _search_streamed(prog, mesh, target, streamed, stream_bounds, lowering, best_resident)
        feasible = [i for i, c in enumerate(results) if c.cycles is not None]
        dram = [c for c in results[resident_rejected:] if c.cause == "dram"]
        if not feasible and dram:
            raise dominant_rejection(prog, mesh, dram)
    if not feasible:
        raise dominant_rejection(prog, mesh, results)
    # On a tie the one-core plan wins: a plan whose cores add nothing is not reported as spread. (On a mesh
    # of one core every plan runs on that core; the first keeps the register-blocked contraction kernels.)
    spread = mesh[0] * mesh[1] > 1
    best = min(feasible, key=lambda i: (results[i].cycles, spread and bool(results[i].decisions.assignment), i))
    report = SearchReport(tuple(results), best, time.perf_counter() - t0)
    sched = results[best].schedule
    reasons = sched.reasons + (f"chosen by search: {report.best.decisions.describe()} has the lowest modelled "
                               f"cycles of {len(feasible)} feasible plans ({len(results) - len(feasible)} rejected)",)
    if sched.dram:
        reasons += (_dram_reason(sched.dram, results[:resident_rejected], best_resident),)
    return sched.copy(reasons=reasons), report


def _dram_reason(dram: tuple[str, ...], resident: list[Candidate], best_resident: float) -> str:
    """Why the chosen plan streams ``dram`` from device DRAM: no plan holding them in the cores' SRAM fits (every
    candidate of ``resident`` rejected, by cause), or the best that fits models ``best_resident`` cycles, more
    than the streamed plan."""
    if best_resident < float("inf"):
        return (f"{', '.join(dram)} stay in device DRAM because streaming them is cheaper than the best plan holding "
                f"them in the cores' SRAM ({best_resident:,.0f} cycles)")
    causes = ", ".join(f"{n} {k}" for k, n in SearchReport(tuple(resident), 0, 0).causes())
    return (f"{', '.join(dram)} stay in device DRAM because no plan holding them in the cores' SRAM fits: all "
            f"{len(resident)} such candidates were rejected ({causes})")
