"""The compiler as one flat function of named passes, with a verifier at the seams.

    program  --privatise-->  Program                             (affine/privatise: temporaries expanded)
             --search_aligned / derive_schedule-->  Schedule    (tiling/: per operator and across them)
             --build_program-->  MeshProgram                     (lower/, with comm/ sets)
             --verify-->                                           (meshir/)
             --estimate-->  Cost                                   (tiling/cost)
             --emit_kernel_module-->  C per class                  (emit_c/)

:func:`compile_affine` is the user's entry point; it returns a :class:`CompiledProgram`. The search
builds every candidate through :data:`LOWERING`, the same passes a forced schedule goes through.
"""

from __future__ import annotations

import functools
import gc
import numbers
import operator
import time
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

from .affine.deps import loop_kinds, reductions
from .affine.fold import refold
from .affine.from_c import from_c
from .affine.isl_names import isl_budget
from .affine.pieces import Pieces
from .affine.privatise import privatise
from .affine.program import Program
from .emit import emit
from .emit_c.kernels import KernelModule, emit_kernel_module
from .errors import AffineError, ArgumentError, MeshError, MicaError, ScheduleError, SramError
from .lower.build import build_mesh_program
from .lower.phases import build_program
from .lower.relayout import relayout_cycles
from .meshir.ir import HostLoad, MeshProgram
from .meshir.printer import format_mesh_program
from .meshir.verify import verify
from .native_sim.resident import Resident
from .native_sim.execute import execute
from .progress import search_reporter
from .saved import load_file, save_file
from .targets import Target, get_target
from .tiling.expanded import search_expanded
from .tiling.folded import search_folded
from .tiling.cost import Cost, estimate
from .tiling.mapping import derive_schedule
from .tiling.operators import retarget_schedule
from .tiling.schedule import Schedule, with_buffers
from .tiling.search import Lowering, SearchReport
from .tiling.split import mapped_program, operator_program, phase_operators, program_pieces

#: The lowering passes the schedule search builds its candidates with (see :class:`Lowering`).
LOWERING = Lowering(operator=build_mesh_program, program=build_program, relayout_cycles=relayout_cycles)


def check_mesh(mesh, target: Target) -> tuple[int, int]:
    """``mesh`` as (width, height) of Python ints after checking it is positive and fits the target's
    grid; ``None`` means the target's whole grid. Any integer type is accepted (``np.int64`` too)."""
    if mesh is None:
        return tuple(target.grid)
    try:
        w, h = mesh
    except (TypeError, ValueError):
        raise MeshError(f"mesh must be (width, height), got {mesh!r}") from None
    sides = []
    for name, v in (("width", w), ("height", h)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise MeshError(f"mesh {name} must be an integer, got {v!r}")
        v = operator.index(v)
        if v <= 0:
            raise MeshError(f"mesh {name} must be positive, got {v}")
        sides.append(v)
    w, h = sides
    gw, gh = target.grid
    if w > gw or h > gh:
        raise MeshError(f"mesh {w}x{h} is larger than {target.name}'s usable grid {gw}x{gh}")
    return w, h


@dataclass(frozen=True)
class OperatorCycles:
    """One operator of a phased plan (:meth:`CompiledProgram.operator_cycles`): its index, statements, the
    arrays it writes, and its modelled cycles and computing cores when run alone."""

    index: int
    statements: tuple[str, ...]
    writes: tuple[str, ...]
    cycles: float
    cores: int


@dataclass(frozen=True)
class CompiledProgram:
    """A program compiled for one mesh: its schedule, MeshIR, modelled cost and C kernels.

    ``run(inputs, mesh=None, threads=None)`` executes it in the native emulator; with another ``mesh``
    the same schedule shape is re-instantiated for that mesh first. ``save(path)`` writes it to one file that
    :func:`load` reads back (and it pickles): the same program, ready to run.
    """

    program: Program
    target: Target
    schedule: Schedule
    mesh_program: MeshProgram
    cost: Cost
    timings: dict = field(default_factory=dict, compare=False)
    search_report: SearchReport | None = field(default=None, compare=False)

    @property
    def mesh(self) -> tuple[int, int]:
        return self.schedule.mesh

    @cached_property
    def pieces(self) -> Pieces | None:
        """The program cut into the pieces the schedule maps (what the mesh runs), or None."""
        return program_pieces(self.program, self.schedule)

    def operator_cycles(self) -> tuple["OperatorCycles", ...]:
        """Per operator of a plan that runs operators one after another (``schedule.phases``), its modelled
        cycles run alone: built from its phase of the schedule with its inputs already in the layouts the
        phase reads (what the earlier operators produced is not reloaded). Their sum leaves out the layout
        changes and hand-offs between operators, which :attr:`cost` counts: ``cost.total_cycles`` minus the
        sum is their share. Empty for a plan of one operator. Preserves the program."""
        if not self.schedule.phases:
            return ()
        prog = mapped_program(self.program, self.schedule)
        out, made = [], set()
        for k, (stmts, phase) in enumerate(zip(phase_operators(prog, self.schedule), self.schedule.phases)):
            sub = operator_program(prog, stmts, k)
            mp = build_mesh_program(sub, phase, self.target,
                                    resident=frozenset(made & {a.name for a in sub.arrays}))
            c = estimate(mp, self.target)
            writes = tuple(dict.fromkeys(s.write.array for s in stmts))
            out.append(OperatorCycles(k, tuple(s.name for s in stmts), writes, c.total_cycles, c.cores))
            made |= set(writes)
        return tuple(out)

    @cached_property
    def meshir(self) -> str:
        """The MeshIR as readable text."""
        return format_mesh_program(self.mesh_program)

    @cached_property
    def kernel_module(self) -> KernelModule:
        with isl_budget("C kernel generation"):
            return emit_kernel_module(self.mesh_program)

    @property
    def kernels(self) -> dict[str, str]:
        """Generated C, one function per region class."""
        return dict(self.kernel_module.sources)

    def explain(self) -> str:
        """Why this plan: the mapping decisions and, when it was searched, every candidate considered
        with its modelled cycles or the reason it was rejected; the chosen plan's modelled cycles by term
        (:meth:`mica.tiling.cost.Cost.breakdown`)."""
        out = self.schedule.explain() + "\n" + self._cores_line() + "\n" + self.cost.breakdown()
        mp = self.mesh_program
        loaded = {op.buffer for op in mp.body if isinstance(op, HostLoad)}
        for t in mp.tensors:
            if t.role == "mirror":
                how = ("loaded from the host in that layout" if t.name in loaded else
                       "transposed on the mesh block by block from the home an earlier operator left")
                out += (f"\n{t.array} is also read with its mesh axes swapped: a second home {t.name} "
                        f"[{', '.join(str(d) for d in t.box)}], {how}")
        for k in mp.kernels:
            if k.name.endswith("_deliver"):
                out += (f"\n{k.write.buffer} is written by {k.name[2:-len('_deliver')]} in blocks the mirror cores "
                        f"own: staged in {k.reads[0].buffer.removesuffix('_landed')}, transposed across the mesh "
                        f"after the operator and copied into the elements written")
        if self.search_report is not None:
            out += "\n" + self.search_report.table()
        return out

    def _cores_line(self) -> str:
        """How many cores compute, of the mesh and of the cores the plan allocates, and why the rest idle."""
        w, h = self.mesh
        c = self.cost
        line = f"cores that compute: {c.cores:,} of the {w}x{h} mesh's {w * h:,}"
        if c.allocated > c.cores:
            line += (f"; {c.allocated - c.cores:,} more of the {c.allocated:,} the plan allocates only hold data, "
                     f"relay or combine nothing (their tiles of the domain are empty)")
        if c.allocated < w * h:
            line += f"; {w * h - c.allocated:,} are not used by the plan (it has fewer blocks than the mesh has cores)"
        return line

    def retarget(self, mesh) -> "CompiledProgram":
        """The same schedule shape re-instantiated for ``mesh`` (single-buffered where the new mesh leaves a
        double-buffered step loop nothing to receive); when its decisions do not carry over to ``mesh``, the
        program searched anew there, with a reason saying so."""
        mesh = check_mesh(mesh, self.target)
        if mesh == self.mesh:
            return self
        try:
            sched = retarget_schedule(self.program, self.schedule, mesh)
            try:
                return compile_affine(self.program, mesh=mesh, target=self.target, schedule=sched)
            except ScheduleError as exc:
                if exc.cause != "nothing-to-prefetch":
                    raise
            # On the new mesh a double-buffered step loop receives nothing (its panels are local, e.g. on
            # one core): the same plan single-buffered.
            return compile_affine(self.program, mesh=mesh, target=self.target, schedule=with_buffers(sched, 1))
        except SramError:
            raise
        except MicaError as exc:
            # The decisions do not carry over (an operator's tiles no longer meet the layout an earlier one
            # left, a grid of blocks larger than the mesh): the program is searched anew for ``mesh``.
            why = str(exc).splitlines()[0]
        fresh = compile_affine(self.program, mesh=mesh, target=self.target)
        note = f"searched anew for {mesh[0]}x{mesh[1]}: the {self.mesh[0]}x{self.mesh[1]} plan does not carry over ({why})"
        return replace(fresh, schedule=fresh.schedule.copy(reasons=fresh.schedule.reasons + (note,)))

    def emit(self, kind: str, out_dir) -> list:
        """Writes the program for a real machine into ``out_dir`` and returns the written paths.

        ``kind`` is ``"c"`` (the per-class C kernels the emulator runs), ``"csl"`` (Cerebras: layout, PE
        programs, host script) or ``"metalium"`` (Tenstorrent: host C++ and reader/compute/writer kernels).
        Every back end renders this program's MeshIR, so what it writes is the plan the emulator runs."""
        return emit(self, kind, out_dir)

    def run(self, inputs, mesh=None, threads: int | None = None, progress: bool | None = None, *,
            trace=False, trace_events: int | None = None, timing: str = "event"):
        """Runs in the emulator; returns a :class:`mica.native_sim.execute.RunResult`. ``progress``: a
        progress bar on stderr for long runs (default: only when stderr is a terminal). ``trace``: record
        per-core timelines for ``res.trace(path)``: True (every core) or a rectangle of cores
        ``(x0, x1, y0, y1)``; off by default. ``timing``: ``"event"`` (default, the event-level link model)
        or ``"wavelet"`` (a cycle-stepped wavelet-level fabric simulation: finite per-link, per-colour queues,
        back-pressure; its figures in ``res.stats.summary()["wavelet"]``). See
        :func:`mica.native_sim.execute.execute`."""
        prog = self.retarget(mesh) if mesh is not None else self
        return execute(prog, inputs, threads=threads, progress=progress, trace=trace, trace_events=trace_events,
                       timing=timing)

    def load(self, arrays, *, threads: int | None = None, timing: str = "event"):
        """Loads this program on an emulated mesh that stays up between runs, with the arrays that stay on it
        (compiled with ``resident=``: weights, a KV cache) given once in ``arrays``; returns a
        :class:`mica.native_sim.resident.Resident` whose ``run(inputs)`` takes only the other inputs, whose
        ``read(name)`` / ``write(name, value)`` read and replace an array on the mesh, and which ``close()`` (or
        a ``with`` block) frees. (:func:`mica.load` reads a saved program from a file.)"""
        return Resident(self, arrays, threads=threads, timing=timing)

    def __str__(self) -> str:
        return f"{self.schedule}\n{self.cost}"

    def __getstate__(self) -> dict:
        """The fields only: what the cached properties hold (pieces, MeshIR text, the generated C) is built
        again on first use after loading; the kernel library is compiled (or found in the content-hash cache)
        when the loaded program first runs."""
        return {f.name: self.__dict__[f.name] for f in fields(self)}

    def save(self, path):
        """Writes this program to the single file ``path`` (a header with the format version, then a pickle);
        :func:`load` reads it back, and the loaded program has the same schedule, MeshIR, cost and C kernels
        and runs to the same outputs. Returns the path. Loading unpickles: load only files you trust."""
        return save_file(self, path)


def load(path) -> CompiledProgram:
    """The :class:`CompiledProgram` that :meth:`CompiledProgram.save` wrote to ``path``.

    Loading runs pickle, and a pickle can run code: load only files you (or someone you trust) wrote. A file
    that is not a saved program, was saved in another format version or by a MICA whose records differ, or
    is damaged raises :class:`~mica.errors.LoadError` naming the file (see :mod:`mica.saved`)."""
    return load_file(path, CompiledProgram)


def _analysed(prog: Program) -> None:
    """The dependence analyses the search reads (kept per program), run under their own isl budget."""
    with isl_budget("dependence analysis"):
        loop_kinds(prog)
        reductions(prog)


def _search_privatised(op: Program, written: Program, mesh, tgt, side_by_side: bool, progress):
    """:func:`search_expanded` of the privatised program ``op``; when it has no plan for want of SRAM and
    privatisation changed the program, of the program as ``written`` (its temporaries take less memory, so it
    may still fit, on fewer cores: durbin's ``z`` expanded along ``k`` is ``n`` times larger). Raises the
    privatised program's error when neither has a plan."""
    try:
        return search_expanded(op, mesh, tgt, LOWERING, side_by_side, progress=progress)
    except SramError as exc:
        if written is op:
            raise
        error = exc
    _analysed(written)
    try:
        found = search_expanded(written, mesh, tgt, LOWERING, side_by_side, progress=progress)
    except MicaError:
        raise error from None
    why = "the temporaries as written (privatised, the program has no plan on this mesh)"
    return found[0], found[1].copy(reasons=found[1].reasons + (why,)), found[2]


#: Python's collector thresholds while a program compiles: a compile allocates millions of short-lived
#: objects (isl wrappers, IR records) and, at the default thresholds, spends about 15% of its time in
#: collections of the older generations that find little (the LLM decode layer at width 1024 on 750x994:
#: 18 s -> 15 s, the same peak memory).
COMPILE_GC_THRESHOLD = (100_000, 50, 100)


def _fewer_collections(fn):
    """``fn`` run with :data:`COMPILE_GC_THRESHOLD` (the caller's thresholds restored after it)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        saved = gc.get_threshold()
        gc.set_threshold(*COMPILE_GC_THRESHOLD)
        try:
            return fn(*args, **kwargs)
        finally:
            gc.set_threshold(*saved)
    return run


@_fewer_collections
def compile_affine(op: Program, mesh=None, target: str | Target = "wse2", *,
                   schedule: Schedule | None = None, search: bool = True, params=None,
                   side_by_side: bool = True, progress: bool | None = None, runtime=None,
                   resident=()) -> CompiledProgram:
    """Compiles ``op`` for ``mesh = (width, height)`` cores of ``target`` (default: the target's whole
    grid, 750x994 for ``"wse2"``).

    By default the plan is searched (:func:`mica.tiling.search.search`); ``search=False`` takes the
    derived default plan; ``schedule`` forces a plan (e.g. ``mica.plans.cannon(op, mesh)`` or one read
    back with :meth:`Schedule.from_json`) whose mesh must be ``mesh``. ``op`` may also be the text of a C
    function (see :func:`mica.affine.from_c.from_c`), whose ``int`` size parameters ``params`` binds and whose
    runtime parameters ``runtime`` declares with their ranges (``{"pos": (0, 4096)}``: given to every
    ``run``, used in subscripts and bounds; one plan serves every value: :mod:`mica.affine.runtime`).
    ``resident`` names arrays that stay on the mesh between runs (weights, a KV cache updated in place):
    the search keeps only plans that hold each in one buffer nothing else overwrites
    (:mod:`mica.meshir.on_mesh`); :meth:`CompiledProgram.load` then loads them once and runs many steps.
    With ``side_by_side=False`` the search runs the operators of a program one after another only, never
    on disjoint rectangles at the same time, nor cut into pieces streamed from slab to slab, nor with a
    sequential loop run around its body's operators (a phase loop, :mod:`mica.affine.repeat`; ``mica compile
    --emit csl|metalium`` falls back to it when the back end refuses the searched plan).
    Temporaries (arrays neither input nor output) are first expanded along the loops within whose
    iterations their values live (:func:`mica.affine.privatise.privatise`); the compiled program's
    ``program`` is the expanded one, whose statements a forced schedule names (expansion is deterministic
    and idempotent, so a schedule saved from an earlier compile replays). When the expanded program has no
    plan on the mesh (an expanded temporary too large for the cores that can run it), the program as written
    is searched instead and is the compiled ``program``; its schedule says so in its reasons (a forced
    schedule is always applied to the expanded program).
    When the searched plan runs on one core, the search also tries the program with its main nest aligned
    (:mod:`mica.tiling.aligned`: another loop of its deepest statement outermost, computing exactly the same
    values); the compiled program's ``program`` is then the aligned one. When it spreads a long loop along one
    mesh axis while the other idles, the search also tries that loop folded over both axes
    (:mod:`mica.tiling.folded`); the compiled ``program`` is then the folded one, whose reshaped arrays
    ``run()`` still takes and gives in the C's shapes (:attr:`Program.folded`), and a forced schedule whose
    ``folds`` name loops the given program does not have yet is applied to the program folded alike.
    ``progress``: a line on stderr while a long search runs (default: only on a terminal, or as
    ``$MICA_PROGRESS`` says; see :mod:`mica.progress`), as ``run(progress=...)`` does for the emulator.
    """
    if isinstance(op, str):
        op = from_c(op, params=params, runtime=runtime)
    elif runtime is not None:
        raise ArgumentError("runtime= declares parameters of C source text; a Program carries its own "
                            "(Program.runtime)")
    if not isinstance(op, Program):
        raise ArgumentError(f"compile_affine expects a mica Program (mica.ops.matmul(...), "
                            f"mica.affine.from_c(...)) or C source text, got {type(op).__name__}")
    if resident:
        names = (resident,) if isinstance(resident, str) else tuple(resident)
        try:
            op = op.replace(on_mesh=tuple(dict.fromkeys(names)))
        except (AffineError, TypeError) as exc:
            raise ArgumentError(f"resident: {exc}") from None
    tgt = get_target(target)
    mesh = check_mesh(mesh, tgt)
    timings = {}
    t0 = time.perf_counter()
    written = op
    with isl_budget("privatisation"):
        op = privatise(op)
    _analysed(op)
    report = None
    if schedule is None and search:
        try:
            with isl_budget("schedule search"):
                reporter = search_reporter(progress)
                found = _search_privatised(op, written, mesh, tgt, side_by_side, reporter)
                op, sched, report = search_folded(found, mesh, tgt, LOWERING, side_by_side, progress=reporter)
        except SramError as exc:
            _explain_sram(exc, op, mesh, tgt)
            raise
    elif schedule is None:
        sched = derive_schedule(op, mesh)
    else:
        if tuple(schedule.mesh) != mesh:
            raise ScheduleError(f"the forced schedule is for mesh {schedule.mesh}, not {mesh}; "
                                f"use mica.tiling.mapping.derive_schedule(program, mesh, like=schedule)")
        sched = schedule
        if schedule.folds and _names_missing_loops(op, schedule):
            # a plan searched for a folded program (saved, or taken from an earlier compile): fold alike
            try:
                op = refold(op, schedule.folds)
            except AffineError as exc:
                raise ScheduleError(f"the forced schedule was made for a folded program: {exc}") from None
            _analysed(op)
    timings["schedule"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        with isl_budget("MeshIR build"):
            mp = build_program(op, sched, tgt)
    except SramError as exc:
        _explain_sram(exc, op, mesh, tgt)
        raise
    timings["meshir"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with isl_budget("MeshIR verification"):
        verify(mp, tgt)
    timings["verify"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with isl_budget("cost model"):
        cost = estimate(mp, tgt)
    timings["cost"] = time.perf_counter() - t0
    return CompiledProgram(op, tgt, sched, mp, cost, timings, report)


def _names_missing_loops(op: Program, sched: Schedule) -> bool:
    """Whether ``sched`` (or one of its operators) orders a loop that its statement in ``op`` does not have."""
    loops = {s.name: set(s.loops) for s in op.statements}
    return any(name in loops and not set(order) <= loops[name] for name, order in sched.local_order) or \
        any(_names_missing_loops(op, p) for p in sched.phases)


def _explain_sram(exc: SramError, op: Program, mesh, tgt: Target) -> None:
    """Adds to an SRAM error whether the program would fit on the target's full grid."""
    fits_full = False
    if mesh != tgt.grid:
        try:
            full = derive_schedule(op, tgt.grid)
            if not full.space and full.step is None:
                # Nothing spreads: more cores would not hold the data either, so no claim about the grid.
                exc.args = (f"{exc.args[0]}; no loop of {op.name} spreads over cores (prog.explain() on a smaller "
                            f"size says why), so one core holds all its data: a larger mesh does not help",)
                return
            build_program(op, full, tgt)
            fits_full = True
        except SramError:
            pass
        except MicaError:
            return                   # the default plan does not apply (several operators): no claim
    where = f"the full {tgt.grid[0]}x{tgt.grid[1]} grid"
    exc.args = (f"{exc.args[0]}; " + (f"it fits on {where}" if fits_full
                                      else f"it does not fit even on {where}"),)
