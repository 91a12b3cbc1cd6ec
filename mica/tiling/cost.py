"""The PLMR cost model: modelled cycles of a mesh program on a target.

* Compute: per :class:`~mica.meshir.ir.Compute`, the busiest core's cycles, counted exactly by isl over its
  kernel class. A kernel call costs (:func:`call_cycles`):

  - ``call_cycles`` once if it runs at least one instance (a task activation on WSE, a compute step's
    circular-buffer handshakes on Tenstorrent);
  - per statement, ``vector_op_cycles`` for every run of its innermost loop (one vector operation: a DSD
    operation's setup, a loop start), counted as the points of the domain with that loop projected out;
  - per run of n elements, ``ceil(n / lanes)`` issues of ``lanes`` elements (the target's ``vector_width`` for
    the written dtype: a remainder pays a whole issue), each element at :func:`element_cycles` -- its FLOP at
    the target's FLOP/cycle, or more where the operands it streams from SRAM (the accesses that move with the
    innermost loop; an invariant one is a register scalar) exceed the SRAM read or write bandwidth.

  On a target without these constants (``generic``) this is instances × FLOP ÷ FLOP/cycle, as before. The
  emulator's work functions (:mod:`mica.emit_c.work`) count the same isl sets per call
  (:func:`vector_sets`), so model and emulator charge the same compute. :class:`Cost` reports the arithmetic
  part (the same ops on :meth:`~mica.targets.Target.without_compute_overheads`) and the overheads apart. A
  kernel parameter naming a loop the kernel is not inside (``__t`` outside the step loop) is 0, as in the
  emulator. When the op's rectangle moves with its loop (the stages of a chain or tree reduction, each run
  by other cores) the stages are on the critical path one after another, so the busiest core is taken per
  iteration and the iterations add. So do the iterations of a kernel that runs only on the root of a
  *step-owner chain* — a multicast whose root moves with the step and sends what a kernel of the step wrote
  (trisolv's ``x[j]``): the next root packs only after this step's message brought its update
  (:func:`_chain_roots`).
* Communication: per multicast, ``hops × hop_latency + bytes ÷ link_bytes_per_cycle`` (a pipelined wavelet
  stream); patterns of one exchange run on distinct colours and links, so the exchange costs its slowest
  pattern — or more where one core takes in (or sends) several patterns' streams: they share its ramp, the
  core's one port to its router, which carries a link's bandwidth (one flit per cycle, ``ramp_bandwidth``
  in :mod:`mica.targets`), so that core needs the first stream's latency plus all their bytes at link
  bandwidth (:func:`_ramp_cycles`; the emulator charges the same at both timing levels). Shifts are routed
  by hardware like every other pattern: no MeshIR route passes a message through a core's processor, so no
  software relay cost arises (a chain stage pays its hop, its bytes and the accumulate that follows it, the
  last as compute).
* Latency: cores proceed as their data arrives, with no barrier per step (the emulator's timing model
  does the same), so in a loop only the hop latency a dependence chain carries from one step to the next
  adds up (a multicast root's move, a ring's mean hop distance, a shift's whole distance); the rest of
  the longest path is paid once, at the first step. Likewise a skewed plan's kernel pays its busiest
  block every step (the chain keeps its block from core to core).
* Operators placed side by side (disjoint rectangles of cores, :mod:`mica.lower.place`) run at the same
  time: a top-level op starts when the latest earlier op that shares a core with it ends (see
  :func:`estimate`); every other program's top-level ops all share cores and add up.
* Phases do not overlap, except a prefetched (double-buffered) exchange: the exchange for step t+1 is
  issued when step t's compute starts, so after the loop's first active step it adds only what its
  pattern's cycles exceed one step's compute, ``max(0, comm - compute per step)`` (a step costs about
  max(compute, comm)); the first step pays its whole exchange (it overlaps nothing, as in the emulator).
  Otherwise total = compute + communication. ``comm_cycles`` and ``per_tensor`` count the exposed
  communication (what is on the critical path), the hidden part is ``hidden_cycles``.

* Device DRAM (Tenstorrent): a :class:`~mica.meshir.ir.DramLoad` costs its busiest core
  ``latency + bytes ÷ min(one core's rate, the chip's bandwidth ÷ the cores reading)``
  (:meth:`mica.targets.Target.dram_read_cycles`), the formula the emulator's DRAM op charges; a core's loads of
  one step run one after another, followed by the multicast of what line roots read (``dram_roots``: its whole
  path every step, as each step's panels start at the root). Prefetched, they hide behind the previous step's
  compute: after the first step a step pays ``max(0, loads + multicast - that compute)`` (:func:`_dram_costs`;
  exact against the emulator when every core reads its own panels, within 2 % with root multicasts).

Everything is evaluated from closed forms at a few representative loop iterations, never per core and
never per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from itertools import product

from math import prod

import islpy as isl

from ..affine.expr import Bin, Call, Neg
from ..affine.isl_names import CTX, count_param_values, count_points, fix_params, iset
from ..affine.runtime import kernel_param
from ..meshir.on_mesh import host_bytes
from ..meshir.busy import computing_cores
from ..meshir.ir import (Compute, DramLoad, Exchange, HostLoad, HostStore, Loop, MeshProgram, Multicast, RingShift,
                         Shift)
from ..targets import DTYPE_BYTES, Target
from .schedule import loop_name


@dataclass(frozen=True)
class Cost:
    """Modelled cycles of one mesh program, with the breakdown and the budgets it was checked against.

    ``cores`` counts the cores that compute (run at least one kernel instance,
    :func:`mica.meshir.busy.computing_cores`); ``allocated`` the cores of the program's region, which also
    holds cores that only keep data, relay, or sit in tiles a triangular or partial domain leaves empty.
    ``host_bytes_in`` / ``host_bytes_out`` are the bytes one run sends to and reads back from the mesh
    (:func:`mica.meshir.on_mesh.host_bytes`): the arrays of ``on_mesh`` stay there between runs and do not
    count. ``dram_bytes`` are the bytes one run's cores read from device DRAM (:class:`DramLoad`)."""

    target: str
    clock_ghz: float
    total_cycles: float
    compute_cycles: float
    comm_cycles: float
    per_tensor: tuple[tuple[str, float], ...]
    sram_bytes: int
    sram_budget: int
    colours: int
    colour_budget: int
    cores: int
    hidden_cycles: float = 0.0
    allocated: int = 0
    host_bytes_in: int = 0
    host_bytes_out: int = 0
    on_mesh: tuple[str, ...] = ()
    dram_bytes: int = 0
    arith_cycles: float = 0.0
    dram_cycles: float = 0.0

    def _cores_text(self) -> str:
        if self.allocated and self.allocated != self.cores:
            return f"{self.cores:,} of {self.allocated:,} allocated cores compute"
        return f"{self.cores:,} cores compute"

    @property
    def overhead_cycles(self) -> float:
        """The part of ``compute_cycles`` that is not arithmetic at the peak rate: kernel-call and vector-op
        overheads, vector remainders and SRAM-bandwidth limits (the target's compute model, :mod:`mica.targets`)."""
        return max(0.0, self.compute_cycles - self.arith_cycles)

    @property
    def fabric_cycles(self) -> float:
        """The part of ``comm_cycles`` spent on the fabric (messages between cores), DRAM reads excluded."""
        return max(0.0, self.comm_cycles - self.dram_cycles)

    def terms(self) -> tuple[tuple[str, float], ...]:
        """The modelled cycles by term, in the order they are printed: compute (arithmetic, overheads),
        exposed communication (fabric, DRAM), and what double buffering hid behind compute. The first two
        terms add up to ``total_cycles`` (the ops on the critical path); the hidden term is not in it."""
        return (("compute", self.compute_cycles), ("  arithmetic", self.arith_cycles),
                ("  overheads", self.overhead_cycles), ("communication", self.comm_cycles),
                ("  fabric", self.fabric_cycles), ("  DRAM", self.dram_cycles),
                ("hidden behind compute", self.hidden_cycles))

    def breakdown(self) -> str:
        """The modelled cycles per term as an aligned table, each with its share of the total."""
        lines = [f"modelled cycles by term (total {self.total_cycles:,.0f}):"]
        for name, cy in self.terms():
            share = f"{100 * cy / self.total_cycles:5.1f}%" if self.total_cycles else "    -"
            note = "  (not on the critical path)" if name.startswith("hidden") else ""
            lines.append(f"  {name:<24s}{cy:>16,.0f}  {share}{note}")
        return "\n".join(lines)

    @property
    def idle_cycles(self) -> float:
        """Cycles the busiest core spends not computing (waiting for data)."""
        return self.total_cycles - self.compute_cycles

    @property
    def seconds(self) -> float:
        return self.total_cycles / (self.clock_ghz * 1e9)

    def as_dict(self) -> dict:
        return {"target": self.target, "total_cycles": self.total_cycles, "seconds": self.seconds,
                "compute_cycles": self.compute_cycles, "comm_cycles": self.comm_cycles,
                "idle_cycles": self.idle_cycles, "per_tensor": dict(self.per_tensor),
                "sram_bytes": self.sram_bytes, "sram_budget": self.sram_budget,
                "colours": self.colours, "colour_budget": self.colour_budget, "cores": self.cores,
                "allocated": self.allocated, "hidden_cycles": self.hidden_cycles,
                "host_bytes_in": self.host_bytes_in, "host_bytes_out": self.host_bytes_out,
                "arith_cycles": self.arith_cycles, "overhead_cycles": self.overhead_cycles,
                "dram_cycles": self.dram_cycles}

    def __str__(self) -> str:
        per = ", ".join(f"{n} {c:,.0f}" for n, c in self.per_tensor) or "none"
        return (f"modelled {self.total_cycles:,.0f} cycles = {self.seconds * 1e6:,.2f} us at "
                f"{self.clock_ghz} GHz on {self.target} ({self._cores_text()})\n"
                f"  compute {self.compute_cycles:,.0f} cycles (arithmetic {self.arith_cycles:,.0f}, overheads "
                f"{self.overhead_cycles:,.0f}), communication {self.comm_cycles:,.0f} cycles"
                + (f" (fabric {self.fabric_cycles:,.0f}, DRAM {self.dram_cycles:,.0f})" if self.dram_cycles else "")
                + f" (idle while waiting {self.idle_cycles:,.0f})"
                + (f"; {self.hidden_cycles:,.0f} more hidden behind compute by double buffering"
                   if self.hidden_cycles else "") + "\n"
                f"  communication by tensor, each alone (tensors moved together overlap): {per}\n"
                f"  SRAM {self.sram_bytes:,} of {self.sram_budget:,} B per core, "
                f"colours {self.colours} of {self.colour_budget}"
                + (f"\n  host traffic per run: {self.host_bytes_in:,} B in, {self.host_bytes_out:,} B out "
                   f"({', '.join(self.on_mesh)} stay on the mesh)" if self.on_mesh else "")
                + (f"\n  device DRAM read by the cores: {self.dram_bytes:,} B" if self.dram_bytes else ""))


def at_longest(mp: MeshProgram) -> dict[str, int]:
    """The values of the runtime parameters (:mod:`mica.affine.runtime`) the model counts kernel instances at:
    the last of each declared range (the longest context of a decode step), as kernel parameters
    ``__rp_<name>``. Running the emulator with these values gives the modelled work exactly."""
    return {kernel_param(n): hi - 1 for n, _, hi in mp.runtime}


def instance_cycles(mp: MeshProgram, part, target: Target) -> float:
    """Arithmetic cycles of one instance of kernel statement ``part`` on ``target``: its FLOP (at least one
    operation, e.g. a copy or a zero fill) at the target's FLOP/cycle for the written tensor's dtype. This is
    the whole cost of an instance on a target without compute overheads (:attr:`Target.has_compute_overheads`);
    otherwise :func:`part_cycles` adds them (see "Compute" in the module docstring)."""
    return max(part.flops_per_instance, 1) / target.flops(mp.tensor(part.write.buffer).dtype)


def innermost_loop(part) -> str | None:
    """The loop a kernel statement runs innermost (the last of its ``order``): one run of it is one vector
    operation (a DSD operation on WSE, a tile operation on Tenstorrent). None for a statement without loops."""
    order = part.order or part.loops
    return loop_name(order[-1]) if order else None


def element_cycles(mp: MeshProgram, part, target: Target) -> float:
    """Cycles per element of a vector operation of ``part`` at full vector width: the larger of its arithmetic
    (:func:`instance_cycles`) and the SRAM traffic it needs, reads at ``sram_read_bytes_per_cycle`` and
    writes at ``sram_write_bytes_per_cycle`` (0: not limiting). Only accesses whose index moves with the
    innermost loop stream through SRAM per element; an access invariant in it is a scalar held in a register
    (the ``scalar`` operand of ``@fmacs``, or a reduction's accumulator)."""
    return _streamed_cycles(instance_cycles(mp, part, target), innermost_loop(part),
                            [(r.index, mp.tensor(r.buffer).dtype) for r in part.reads],
                            (part.write.index, mp.tensor(part.write.buffer).dtype), target)


def _streamed_cycles(cy: float, inner: str | None, reads, write, target: Target) -> float:
    """``cy`` (an element's arithmetic cycles) raised to the SRAM traffic of the accesses ((index, dtype) pairs)
    whose index moves with loop ``inner`` (see :func:`element_cycles`)."""
    if inner is None:
        return cy

    def streams(index) -> bool:
        return any(name == inner for aff in index for name, _ in aff.coeffs)
    if target.sram_read_bytes_per_cycle:
        rb = sum(DTYPE_BYTES[dt] for index, dt in reads if streams(index))
        cy = max(cy, rb / target.sram_read_bytes_per_cycle)
    if target.sram_write_bytes_per_cycle and streams(write[0]):
        cy = max(cy, DTYPE_BYTES[write[1]] / target.sram_write_bytes_per_cycle)
    return cy


@lru_cache(maxsize=8192)
def vector_sets(domain: str, inner: str | None, width: int) -> tuple[isl.Set, isl.Set]:
    """(vector operations, vector chunks) of a kernel statement with domain ``domain`` (isl text) whose
    innermost loop is ``inner``, on vectors of ``width`` elements, as sets with the domain's tuple name and
    parameters: a point of the first is one run of the innermost loop (the domain with that loop projected
    out), a point of the second one instruction issue of ``width`` elements -- the points of a run that start a
    chunk counted from the run's first element, so a run of n elements has ceil(n / width) of them and its
    remainder pays a whole issue. Without loops, every instance is an operation and a chunk. The emulator's work
    functions (:mod:`mica.emit_c.work`) count the same sets."""
    dom = iset(domain)
    name = dom.get_tuple_name()
    pos = dom.find_dim_by_name(isl.dim_type.set, inner) if inner is not None else -1
    if pos < 0:
        return dom, dom
    ops = dom.project_out(isl.dim_type.set, pos, 1).set_tuple_name(name)
    if width <= 1:
        return ops, dom
    runs = isl.Map.from_domain(dom).move_dims(isl.dim_type.out, 0, isl.dim_type.in_, pos, 1)
    starts = runs.lexmin().apply_range(isl.Map(f"{{ [l] -> [j] : exists q : j = l + {width} * q }}"))
    chunks = runs.intersect(starts).move_dims(isl.dim_type.in_, pos, isl.dim_type.out, 0, 1).domain()
    return ops, chunks.set_tuple_name(name)


def _fix_free(dom: isl.Set, fix: dict, drop=()) -> dict:
    """``fix`` with every loop parameter of ``dom`` (``__t``: a kernel's step) that is neither fixed nor dropped set
    to 0: a kernel outside the loop it names runs at its value 0, as the emulator calls it (a loop variable is 0
    outside its loop, rt_interp.c). Left free, isl would count the parameter's values as a dimension: 0 points
    for a domain that does not bound it (a kernel charged no compute)."""
    for i in range(dom.dim(isl.dim_type.param)):
        n = dom.get_dim_name(isl.dim_type.param, i)
        if n not in fix and n not in drop and n not in ("__x", "__y", "__kb") and not n.startswith("__rp_"):
            fix = {**fix, n: 0}
    return fix


def part_cycles(mp: MeshProgram, part, target: Target, fix: dict, drop=()) -> tuple[float, int]:
    """(cycles, instances) of kernel statement ``part`` at the core and loop values ``fix`` (parameters
    ``drop`` projected out: the union over their values): every vector operation's setup
    (``vector_op_cycles``) plus every chunk of ``lanes`` elements at ``lanes`` × :func:`element_cycles`
    (:func:`vector_sets`); on a target without compute overheads, instances × :func:`instance_cycles`. The
    per-call overhead is :func:`call_cycles`' business."""
    dom = iset(part.domain)
    fix = _fix_free(dom, fix, drop)
    n = count_points(dom, fix, drop)
    if not n:
        return 0.0, 0
    if not target.has_compute_overheads:
        return n * instance_cycles(mp, part, target), n
    width = target.lanes(mp.tensor(part.write.buffer).dtype)
    ops, chunks = (per_call(s, [d for d in drop if d not in fix]) for s in vector_sets(part.domain, innermost_loop(part), width))
    n_ops = count_points(ops, fix) if target.vector_op_cycles else 0
    n_chunks = count_points(chunks, fix) if width > 1 else n
    return n_ops * target.vector_op_cycles + n_chunks * width * element_cycles(mp, part, target), n


def per_call(s: isl.Set, drop) -> isl.Set:
    """``s`` (vector operations or chunks of a kernel statement, :func:`vector_sets`) with the parameters
    ``drop`` (a kernel's step ``__t``, a ring block ``__kb``) made set dimensions: counted over all their values,
    an operation at two steps is two operations (two calls each run one), where projecting the parameter out
    would count one — a statement whose innermost loop the step pins (``j = __t``) would pay one vector
    operation per row over the whole loop instead of one per row and step, as the emulator charges. A
    parameter the set does not constrain (a kernel outside the ring, under ``__kb``) stays projected out."""
    for name in drop:
        pos = s.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0 and s.involves_dims(isl.dim_type.param, pos, 1):
            s = s.move_dims(isl.dim_type.set, s.dim(isl.dim_type.set), isl.dim_type.param, pos, 1)
        elif pos >= 0:
            s = s.project_out(isl.dim_type.param, pos, 1)
    return s


def call_cycles(mp: MeshProgram, k, target: Target, fix: dict, drop=()) -> float:
    """Cycles of one call of kernel ``k`` at the core and loop values ``fix``: its statements
    (:func:`part_cycles`) plus the target's ``call_cycles`` (a task activation) when the call runs at least one
    instance. The emulator charges exactly this per call (:mod:`mica.emit_c.work`)."""
    total, any_work = 0.0, False
    for part in k.statements:
        cy, n = part_cycles(mp, part, target, fix, drop)
        total += cy
        any_work = any_work or n > 0
    return total + (target.call_cycles if any_work else 0.0)


def _moves(rect) -> bool:
    """True when a rectangle depends on loop variables."""
    return any(b.terms for b in (*rect.x0, *rect.x1, *rect.y0, *rect.y1, rect.xp, rect.yp))


def _staged_compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target) -> float:
    """Sum over the iterations of ``scope`` (at representative values) of the busiest core's cycles at
    that iteration, for a Compute whose rectangle moves with the loop."""
    k = mp.kernel(op.kernel)
    total = 0.0
    for env, weight in _representatives(scope):
        best = 0.0
        cols, rows = op.rect.members(env)
        for cls in k.classes:
            r = cls.region
            xs = [x for x in cols if r.x0 <= x < r.x1][:1]
            ys = [y for y in rows if r.y0 <= y < r.y1][:1]
            if not xs or not ys:
                continue
            fix = {"__x": xs[0], "__y": ys[0], **{"__" + v: val for v, val in env.items()}, **at_longest(mp)}
            if mp.skew is not None and "t" in env:
                fix["__kb"] = int(mp.skew.block(xs[0], ys[0], env["t"]))
            best = max(best, call_cycles(mp, k, target, fix, drop=("__kb",)))
        total += weight * best
    return total


def _chain_roots(mp: MeshProgram, body) -> list[Multicast]:
    """The multicasts of a loop ``body`` (its direct ops) whose root moves with the loop and sends a buffer
    a kernel of the same body writes: a *step-owner* chain (trisolv's ``x[j]``, packed on the core that
    owns it and multicast from there), where the next step's root packs only after this step's message
    brought its update, so every step's work on the root lies on the critical path."""
    written = {part.write.buffer for op in body if isinstance(op, Compute)
               for part in mp.kernel(op.kernel).statements}
    return [c for op in body if isinstance(op, Exchange) for c in op.ops
            if isinstance(c, Multicast) and c.root.terms and c.src in written]


def _chained_compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target, casts: list) -> float:
    """A kernel inside the step loop of a step-owner chain (:func:`_chain_roots`). One that works only on the
    step's root (the pack of the panel, the statement producing what it sends: trisolv's ``x[j]``) is on the
    chain every step, so its steps add: the sum over the iterations (at representative values) of its cycles
    at the root. Any other (the updates every core makes) costs its busiest core's total, as outside a chain
    (:func:`_compute_cycles`): the cores make their updates as the panels arrive -- but at least its calls on
    the next step's root, which lie on the chain (:func:`_next_root_cycles`)."""
    k = mp.kernel(op.kernel)
    total = 0.0
    for env, weight in _representatives(scope):
        cols, rows = (set(m) for m in op.rect.members(env))
        roots, others = set(), set()
        for c in casts:
            r = c.root.evaluate(env)
            for cls in k.classes:
                reg = cls.region
                line = (reg.y0, (reg.y0 + reg.y1 - 1) // 2, reg.y1 - 1) if c.axis == "x" else \
                    (reg.x0, (reg.x0 + reg.x1 - 1) // 2, reg.x1 - 1)
                roots.update((r, v) if c.axis == "x" else (v, r) for v in line)
                others.update(xy for xy in _probe_cores(reg) if (xy[0] if c.axis == "x" else xy[1]) != r)

        def busiest(cores):
            out = 0.0
            for x, y in cores:
                if x in cols and y in rows and any(cls.region.x0 <= x < cls.region.x1 and
                                                   cls.region.y0 <= y < cls.region.y1 for cls in k.classes):
                    fix = {"__x": x, "__y": y, **{"__" + v: val for v, val in env.items()}, **at_longest(mp)}
                    out = max(out, call_cycles(mp, k, target, fix, drop=("__kb",)))
            return out
        if busiest(others) > 0:
            return max(_compute_cycles(mp, op, scope, target), _next_root_cycles(mp, k, scope, target, casts))
        total += weight * busiest(roots)
    return total


def _spread_steps(scope, samples: int = 9) -> list[tuple[dict, float]]:
    """Steps ``0 .. n-2`` of the innermost loop of ``scope`` (outer loops at 0, their counts as a factor) at up
    to ``samples`` evenly spaced values, each weighted by the steps it stands for (half the gap to each
    neighbour): the work of a sweep's step shrinks or grows with it (a triangle), which the first, second and
    last steps of :func:`_representatives` would take as flat."""
    var, n = scope[-1]
    outer = prod(c for _, c in scope[:-1])
    last = n - 2
    if last < 0:
        return []
    pts = sorted({round(i * last / (samples - 1)) for i in range(samples)}) if last >= samples else list(range(last + 1))
    out = []
    for i, p in enumerate(pts):
        lo = (p + pts[i - 1]) / 2 if i else -0.5
        hi = (p + pts[i + 1]) / 2 if i + 1 < len(pts) else last + 0.5
        out.append(({**{v: 0 for v, _ in scope[:-1]}, var: p}, outer * (hi - lo)))
    return out


def _next_root_cycles(mp: MeshProgram, k, scope, target: Target, casts: list) -> float:
    """A lower bound on what an update kernel ``k`` of a step-owner chain adds to its critical path: the next
    step's root makes its update of this step before it can pack and send (LU's pivot core updates its
    element, then divides its column), so at every step but the last the call on the core where the next
    step's roots meet (the root column of a row multicast, the root row of a column multicast; a whole line
    where only one axis has one) is on the chain: the sum over the steps (at the values of
    :func:`_spread_steps`) of the busiest such call."""
    var, n = scope[-1]
    total = 0.0
    for env, weight in _spread_steps(scope):
        nxt = {**env, var: env[var] + 1}
        rx = {c.root.evaluate(nxt) for c in casts if c.axis == "x"}
        ry = {c.root.evaluate(nxt) for c in casts if c.axis == "y"}
        best = 0.0
        for cls in k.classes:
            reg = cls.region
            xs = [x for x in rx if reg.x0 <= x < reg.x1] if rx else [p for p, _ in _probe_cores(reg)]
            ys = [y for y in ry if reg.y0 <= y < reg.y1] if ry else [q for _, q in _probe_cores(reg)]
            for x in set(xs):
                for y in set(ys):
                    fix = {"__x": x, "__y": y, **{"__" + v: val for v, val in env.items()}, **at_longest(mp)}
                    best = max(best, call_cycles(mp, k, target, fix, drop=("__kb",)))
        total += weight * best
    return total


def _skewed_compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target) -> float:
    """A kernel that works on block ``kb`` (a skewed ring plan) inside its step loop: a dependence chain
    keeps its block from core to core (Cannon's shifts move the block with the data), so the critical
    path pays, every step, the busiest block — the full one even when the last block is partial. Blocks
    other than the last are equal, so the first and the last stand for all."""
    k = mp.kernel(op.kernel)
    n = mp.skew.n
    best = 0.0
    for cls in k.classes:
        cycles = 0.0
        for env, weight in _representatives(scope):
            step = 0.0
            for kb in sorted({0, n - 1}):
                fix = {"__x": cls.region.x0, "__y": cls.region.y0, "__kb": kb,
                       **{"__" + v: val for v, val in env.items()}, **at_longest(mp)}
                step = max(step, call_cycles(mp, k, target, fix))
            cycles += weight * step
        best = max(best, cycles)
    return best


def _uses_kb(k) -> bool:
    """True when a kernel's domain depends on the block parameter ``__kb`` of a skewed plan."""
    return _uses_var(k, "kb")


def _probe_cores(r) -> list[tuple[int, int]]:
    """The cores of region ``r`` where the busiest one is looked for: tiles are equal inside a kernel class
    but the domain may clip them, so the busiest core is at a corner or at the centre of the class (a
    stencil's first and last cores skip the boundary)."""
    return sorted({(x, y) for x in (r.x0, (r.x0 + r.x1 - 1) // 2, r.x1 - 1)
                   for y in (r.y0, (r.y0 + r.y1 - 1) // 2, r.y1 - 1)})


def _compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target) -> float:
    """Cycles of the busiest core over all iterations of the enclosing loops ``scope`` ((var, count)
    pairs): a kernel whose domain has the loop variable as a parameter runs part of its instances at each
    iteration (counted once over all of them); one without it (a halo strip copy) runs whole every time.

    Memoised on everything the count reads: the kernel (its statements, domains and classes), the dtypes of
    the buffers it touches, the runtime parameters' ranges, ``scope`` and ``target`` -- the search costs the
    same kernel of an operator in many candidate programs."""
    k = mp.kernel(op.kernel)
    buffers = sorted({a.buffer for part in k.statements for a in (part.write, *part.reads)})
    key = (k, tuple(scope), tuple(mp.runtime), _target_key(target), tuple(mp.tensor(b).dtype for b in buffers))
    if key not in _COMPUTE_MEMO:
        if len(_COMPUTE_MEMO) >= _COMPUTE_MEMO_SIZE:
            _COMPUTE_MEMO.pop(next(iter(_COMPUTE_MEMO)))
        _COMPUTE_MEMO[key] = _busiest_core_cycles(mp, k, scope, target)
    return _COMPUTE_MEMO[key]


#: :func:`_compute_cycles`' memo (oldest entry dropped first) and its size.
_COMPUTE_MEMO: dict = {}
_COMPUTE_MEMO_SIZE = 16384


def _target_key(target: Target) -> tuple:
    """Every field of ``target`` as a hashable value (its tables as sorted items)."""
    return tuple((f.name, repr(sorted(v.items())) if isinstance(v, Mapping) else v)
                 for f in fields(target) for v in (getattr(target, f.name),))


def _busiest_core_cycles(mp: MeshProgram, k, scope, target: Target) -> float:
    """:func:`_compute_cycles` of kernel ``k``, uncached."""
    loop_vars = tuple(v for v, _ in scope)
    drop = tuple("__" + v for v in loop_vars) + ("__kb",)
    parts = []                          # (statement, domain, repeats per enclosing iterations)
    for part in k.statements:
        dom = iset(part.domain)
        repeats = prod(n for v, n in scope if dom.find_dim_by_name(isl.dim_type.param, "__" + v) < 0)
        parts.append((part, dom, repeats))
    best = 0.0
    for cls in k.classes:
        for x, y in _probe_cores(cls.region):
            fix = {"__x": x, "__y": y, **at_longest(mp)}
            cycles = 0.0
            for part, dom, repeats in parts:
                cycles += repeats * part_cycles(mp, part, target, fix, drop)[0]
            if target.call_cycles:
                cycles += target.call_cycles * _calls(mp, [dom for _, dom, _ in parts], fix, scope)
            best = max(best, cycles)
    return best


def _calls(mp: MeshProgram, doms, fix: dict, scope) -> int:
    """How many calls over all iterations of ``scope`` run at least one instance of the statements ``doms``
    at the core ``fix``: every iteration when a statement without the step parameter ``__t`` has work there,
    else the steps at which one of them has (the union over the statements), times the other loops'
    iterations."""
    loops = dict(scope)
    steps = loops.get("t")
    others = prod(n for v, n in scope if v != "t")
    drop = tuple("__" + v for v in loops if v != "t") + ("__kb",)
    active = None
    for dom in doms:
        pos = dom.find_dim_by_name(isl.dim_type.param, "__t")
        if steps is None or pos < 0:
            if count_points(dom, _fix_free(dom, fix, drop), drop):
                return prod(loops.values())
            continue
        s = fix_params(dom, fix)
        for name in drop:
            at = s.find_dim_by_name(isl.dim_type.param, name)
            if at >= 0:
                s = s.project_out(isl.dim_type.param, at, 1)
        at = s.find_dim_by_name(isl.dim_type.param, "__t")
        s = s.project_out(isl.dim_type.set, 0, s.dim(isl.dim_type.set))
        s = s.move_dims(isl.dim_type.set, 0, isl.dim_type.param, at, 1)
        s = s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param)).reset_space(
            isl.Space.set_alloc(CTX, 0, 1)).intersect(isl.Set(f"{{ [t] : 0 <= t < {steps} }}"))
        active = s if active is None else active.union(s)
    return others * (count_points(active.coalesce(), {}) if active is not None else 0)


def _pattern_bytes(mp: MeshProgram, c, env: dict[str, int]) -> int:
    """Bytes one core of pattern ``c`` sends (and each of its receivers takes in) at iteration ``env``: a
    multicast's root box, a shift's or ring shift's largest box."""
    src = mp.tensor(c.src)
    if isinstance(c, Multicast):
        r = c.root.evaluate(env)
        return src.bytes_at(*((r, 0) if c.axis == "x" else (0, r)), env.get("t", 0))
    if isinstance(c, RingShift) and not c.groups:
        return 0
    return src.max_bytes


def _pattern_cycles(mp: MeshProgram, c, env: dict[str, int], target: Target,
                    prev: dict[str, int] | None = None) -> float:
    """Cycles pattern ``c`` adds to the critical path at iteration ``env``: its bytes at link bandwidth
    plus the hop latency that lies on the path. ``prev`` is the previous iteration of the enclosing loop
    (None at the first): cores proceed as their data arrives, without a barrier per step (as the
    emulator's timing model does), so in a loop only the latency that a chain of dependences carries
    from step to step adds up; the rest of the longest path is paid once, at the first iteration:

    * a multicast: the distance its root moved since the previous step (the new root got its data from
      the old one), all ``max_hops`` at the first step;
    * a ring shift: the mean hop distance over the ring (a dependence chain goes round the ring, one
      core per step), ``max_hops`` at the first step;
    * a shift: its whole distance every time (chain stages follow one another).
    """
    lat = target.hop_latency
    nbytes = _pattern_bytes(mp, c, env)
    if isinstance(c, Multicast):
        hops = c.max_hops if prev is None else min(c.max_hops, abs(c.root.evaluate(env) - c.root.evaluate(prev)))
        return hops * lat + nbytes / target.link_bytes_per_cycle if nbytes else 0.0
    if isinstance(c, Shift):
        return c.distance * lat + nbytes / target.link_bytes_per_cycle
    if isinstance(c, RingShift):
        if not c.groups:
            return 0.0
        if prev is None:
            hops = max(abs(g.offset) for g in c.groups)
        else:
            counts = [len(cols) * len(rows) for cols, rows in (g.senders.members(env) for g in c.groups)]
            total = sum(counts)
            hops = sum(abs(g.offset) * n for g, n in zip(c.groups, counts)) / total if total else 0.0
        return hops * lat + nbytes / target.link_bytes_per_cycle
    return 0.0


def _nearest_hops(c) -> int:
    """Hops from a sender of pattern ``c`` to its nearest receiver: one for a multicast (its root's
    neighbour), a shift's distance, a ring shift's shortest move."""
    if isinstance(c, Shift):
        return c.distance
    if isinstance(c, RingShift):
        return min((abs(g.offset) for g in c.groups), default=0)
    return 1


def _ends(c, side: str) -> list:
    """The rectangles of the cores that send (``side`` = "senders") or receive in pattern ``c``."""
    if isinstance(c, RingShift):
        return [getattr(g, side) for g in c.groups]
    return [getattr(c, side)]


def _ramp_cycles(mp: MeshProgram, op: Exchange, env: dict[str, int], target: Target,
                 costs: list[float]) -> float:
    """The least cycles ``op`` takes at ``env`` through the busiest core's ramp (the port between a core and
    its router, which carries one link's worth of bytes per cycle each way): every stream a core takes in,
    or sends, during the exchange passes its one ramp, so the core is done no earlier than the first
    stream's latency plus the sum of those streams' bytes at link bandwidth — the
    four strips of a halo, Cannon's two panels, SUMMA's row and column panels serialise there. The
    emulator charges the same (``finish_timing`` and ``sender_done`` in rt_timing.c); the wavelet-level
    mode shows it flit by flit (one flit per ramp per cycle). A stream's latency here is the least of the
    latency part of its pattern's cycles (``costs``, from :func:`_pattern_cycles`: what exceeds its bytes
    at link bandwidth) and its nearest receiver's hops (:func:`_nearest_hops`): the core whose ramp is
    busiest need not be at the end of the longest path. The busiest core is looked for at the first,
    middle and last member columns and rows of every pattern's senders and receivers."""
    bw = target.link_bytes_per_cycle
    pats = [(c, _pattern_bytes(mp, c, env), cy) for c, cy in zip(op.ops, costs)]
    pats = [(c, n, min(cy - n / bw, _nearest_hops(c) * target.hop_latency))
            for c, n, cy in pats if n and cy]
    if len(pats) < 2:
        return 0.0
    best = 0.0
    for side in ("receivers", "senders"):
        rects = [(r.members(env), n, lat) for c, n, lat in pats for r in _ends(c, side)]
        xs, ys = set(), set()
        for (cols, rows), _, _ in rects:
            xs.update(cols[i] for i in (0, len(cols) // 2, -1) if cols)
            ys.update(rows[i] for i in (0, len(rows) // 2, -1) if rows)
        held = [((set(cols), set(rows)), n, lat) for (cols, rows), n, lat in rects]
        for x in xs:
            for y in ys:
                at = [(n, lat) for (cols, rows), n, lat in held if x in cols and y in rows]
                if len(at) > 1:
                    best = max(best, min(lat for _, lat in at) + sum(n for n, _ in at) / bw)
    return best


def _with_ramp(mp: MeshProgram, op: Exchange, env, target: Target, out: list[tuple[str, float]]):
    """``out`` ((array, cycles) per pattern) with the slowest pattern raised to the exchange's ramp cycles
    (:func:`_ramp_cycles`) where those are longer: the exchange costs the larger of its slowest pattern
    and its busiest ramp, attributed to the slowest pattern's array."""
    if len(out) < 2:
        return out
    ramp = _ramp_cycles(mp, op, env, target, [cy for _, cy in out])
    i = max(range(len(out)), key=lambda k: out[k][1])
    if ramp > out[i][1]:
        out = [*out[:i], (out[i][0], ramp), *out[i + 1:]]
    return out


def _exchange_costs(mp: MeshProgram, op: Exchange, env, target: Target, prev) -> list[tuple[str, float]]:
    """(array, cycles) of every pattern of ``op`` at ``env``, the slowest raised to the exchange's ramp
    cycles (:func:`_with_ramp`). After the first step (``prev`` given) the
    multicasts of one exchange share their latency: a core's next root got its data through the roots of
    every multicast of the step before (SUMMA: a row root's new panel came down its column), so the
    distances their roots moved add up (see :func:`_wave_cycles` for multicasts along both axes)."""
    if prev is None:
        return _with_ramp(mp, op, env, target, [(c.array, _pattern_cycles(mp, c, env, target)) for c in op.ops])
    casts = [c for c in op.ops if isinstance(c, Multicast)]
    moved = sum(min(c.max_hops, abs(c.root.evaluate(env) - c.root.evaluate(prev))) for c in casts)
    out = []
    for c in op.ops:
        cy = _pattern_cycles(mp, c, env, target, prev)
        if isinstance(c, Multicast) and cy:
            own = min(c.max_hops, abs(c.root.evaluate(env) - c.root.evaluate(prev)))
            cy += (moved - own) * target.hop_latency
        out.append((c.array, cy))
    return _with_ramp(mp, op, env, target, out)


WAVE_STEPS = 4


def _wave_cycles(op: Exchange, scope, target: Target) -> float:
    """Extra latency of a stepped exchange with multicasts along both axes (SUMMA). Once the first step's
    wave has passed, a dependence chain alternates between the row and the column multicast, which costs
    one more of the longest root move per step. Fitted to the emulator's dataflow timing: from about the
    ``WAVE_STEPS``-th step on, SUMMA steps carry 3 hops, not 2 (measured from 8x8 to 128x128 meshes)."""
    casts = [c for c in op.ops if isinstance(c, Multicast)]
    if not scope or len({c.axis for c in casts}) < 2:
        return 0.0
    var, n = scope[-1]
    outer = {v: 0 for v, _ in scope[:-1]}
    active = [t for t in range(n) if op.active({**outer, var: t})]
    extra = 0.0
    for t in active[WAVE_STEPS:]:
        env, prev = {**outer, var: t}, {**outer, var: t - 1}
        extra += max(min(c.max_hops, abs(c.root.evaluate(env) - c.root.evaluate(prev))) for c in casts)
    return extra * target.hop_latency


def _representatives(scope):
    """(loop values, how many iterations they stand for) covering every iteration of ``scope``.

    A pattern's cost changes with the loop variable only at the first iteration (guards) and the last
    (the partial last block of a tiling), so one loop of n iterations is costed at 0, 1 and n - 1, the
    middle value standing for the n - 2 iterations in between. Nested loops are enumerated.
    """
    if not scope:
        return [({}, 1)]
    if len(scope) > 1:
        names = [v for v, _ in scope]
        return [(dict(zip(names, values)), 1) for values in product(*(range(n) for _, n in scope))]
    (var, n), = scope
    if n <= 3:
        return [({var: i}, 1) for i in range(n)]
    return [({var: 0}, 1), ({var: 1}, n - 2), ({var: n - 1}, 1)]


def _wave_compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target) -> float:
    """A kernel inside the step loop of a wavefront (:attr:`Loop.wave`): a core works only at the steps its
    coordinates select, and every step's block waits for the block of the step before on a neighbour, so
    the critical path pays one busy core's block at every step, fill and drain included:
    ``steps x max over cores (work / steps it works)``. The busiest core is looked for where
    :func:`_compute_cycles` looks (corners and centre of each class)."""
    k = mp.kernel(op.kernel)
    var, steps = scope[-1]
    outer = prod(n for _, n in scope[:-1])
    others = tuple("__" + v for v, _ in scope[:-1]) + ("__kb",)
    best = 0.0
    for cls in k.classes:
        for x, y in _probe_cores(cls.region):
            fix = {"__x": x, "__y": y, **at_longest(mp)}
            # Every part of the kernel (the statements of a fused body) runs at the core's steps, in one call.
            work, active = 0.0, 0
            for part in k.statements:
                w = part_cycles(mp, part, target, fix, drop=("__" + var,) + others)[0]
                if w:
                    work += w
                    active = max(active, count_param_values(iset(part.domain), "__" + var, fix, drop=others))
            if work:
                best = max(best, work / max(active, 1) + target.call_cycles)
    return outer * steps * best


def _uses_var(k, var: str) -> bool:
    """True when a kernel's domain depends on the loop variable ``var`` (a parameter ``__var``)."""
    return any(iset(part.domain).find_dim_by_name(isl.dim_type.param, "__" + var) >= 0 for part in k.statements)


def _op_compute_cycles(mp: MeshProgram, op: Compute, scope, target: Target, wave: bool = False) -> float:
    """Cycles one Compute adds over every iteration of its enclosing loops ``scope`` (``wave``: the
    innermost is a wavefront's step loop, :func:`_wave_compute_cycles`)."""
    if wave and scope and _uses_var(mp.kernel(op.kernel), scope[-1][0]):
        return _wave_compute_cycles(mp, op, scope, target)
    if scope and _moves(op.rect):
        return _staged_compute_cycles(mp, op, scope, target)
    if scope and mp.skew is not None and _uses_kb(mp.kernel(op.kernel)):
        return _skewed_compute_cycles(mp, op, scope, target)
    return _compute_cycles(mp, op, scope, target)


def _walk_loops(ops, scope=(), loops=()):
    """Like :meth:`MeshProgram.walk`, with the enclosing :class:`Loop` records, outermost first."""
    for op in ops:
        yield op, scope, loops
        if isinstance(op, Loop):
            yield from _walk_loops(op.body, scope + ((op.var, op.count),), loops + (op,))


def _span(lins, scope: dict[str, int], low: bool) -> int:
    """A bound of a rectangle edge over every iteration of ``scope``: for a lower edge (the max of
    ``lins``) the max of their minima, for an upper edge the min of their maxima — never inside the
    true extent of the edge's sweep (a footprint from these bounds holds every core the rectangle does)."""
    def extreme(v):
        return (v.const + sum((min if low else max)(0, c * (scope.get(n, 1) - 1)) for n, c in v.terms)) // v.div
    return max(extreme(v) for v in lins) if low else min(extreme(v) for v in lins)


def _rects(op):
    if isinstance(op, (Compute, DramLoad)):
        yield op.rect
    elif isinstance(op, Exchange):
        for c in op.ops:
            if isinstance(c, RingShift):
                for g in c.groups:
                    yield g.senders
                    yield g.receivers
            else:
                yield c.senders
                yield c.receivers
    elif isinstance(op, Loop):
        for o in op.body:
            yield from _rects(o)


def footprint(op, mesh: tuple[int, int]) -> tuple[int, int, int, int] | None:
    """The bounding rectangle ``(x0, x1, y0, y1)`` of every core a top-level op computes on, sends from or
    delivers to (the cores a message passes lie between a sender and its receivers), over all its loop
    iterations; None when it touches no core."""
    scope: dict[str, int] = {}

    def loops(o):
        if isinstance(o, Loop):
            scope[o.var] = max(scope.get(o.var, 1), o.count)
            for b in o.body:
                loops(b)
    loops(op)
    box = None
    for r in _rects(op):
        x0, x1 = max(0, _span(r.x0, scope, True)), min(mesh[0], _span(r.x1, scope, False))
        y0, y1 = max(0, _span(r.y0, scope, True)), min(mesh[1], _span(r.y1, scope, False))
        if x0 >= x1 or y0 >= y1:
            continue
        box = (x0, x1, y0, y1) if box is None else (min(box[0], x0), max(box[1], x1), min(box[2], y0),
                                                    max(box[3], y1))
    return box


def _meets(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def estimate(mp: MeshProgram, target: Target) -> Cost:
    """The modelled cycles of ``mp`` on ``target`` (see the module docstring); pure, per core class.

    Top-level ops run in program order, except that an op whose cores (:func:`footprint`) are disjoint
    from every earlier op's starts at once: operators placed side by side run at the same time, as in
    the emulator, whose clocks are per core. An op starts when the latest earlier op it shares a core
    with ends; the total is the latest end, and the breakdown is that of the chain of ops leading to it."""
    chains: list[tuple] = []     # (box, total, compute, comm, hidden, per_tensor, arithmetic, dram)
    for op in mp.body:
        if isinstance(op, (HostLoad, HostStore)):
            continue
        box = footprint(op, mp.mesh)
        compute, comm, hidden, per_tensor, arith, dram = _estimate_top(mp, op, target)
        before = max((c for c in chains if _meets(c[0], box)), key=lambda c: c[1], default=None)
        if before is not None:
            compute, comm, hidden = compute + before[2], comm + before[3], hidden + before[4]
            arith, dram = arith + before[6], dram + before[7]
            per_tensor = {k: before[5].get(k, 0.0) + per_tensor.get(k, 0.0) for k in {*before[5], *per_tensor}}
        chains.append((box, compute + comm, compute, comm, hidden, per_tensor, arith, dram))
    _, total, compute, comm, hidden, per_tensor, arith, dram = max(
        chains, key=lambda c: c[1], default=(None, 0.0, 0.0, 0.0, 0.0, {}, 0.0, 0.0))
    return Cost(target.name, target.clock_ghz, total, compute, comm,
                tuple(sorted(per_tensor.items())), mp.arena_bytes, target.sram_bytes, mp.colours,
                target.colours, computing_cores(mp), hidden, mp.region.cores, *host_bytes(mp), mp.on_mesh,
                dram_read_bytes(mp, target), min(arith, compute), dram)


def _estimate_top(mp: MeshProgram, op, target: Target) -> tuple[float, float, float, dict[str, float], float, float]:
    """:func:`_estimate_ops` of one top-level op; a phase loop (:attr:`Loop.phase`) is ``count`` times its body
    estimated as a program of its own (nothing in it reads the loop's variable, so every iteration costs the
    same; an iteration starts when the previous one has ended on every core, which the emulator's per-core
    clocks may beat by overlapping the end of one with the start of the next)."""
    if not (isinstance(op, Loop) and op.phase):
        return _estimate_ops(mp, [op], target)
    one = estimate(replace(mp, body=op.body), target)
    n = op.count
    return (n * one.compute_cycles, n * (one.total_cycles - one.compute_cycles), n * one.hidden_cycles,
            {k: n * v for k, v in one.per_tensor}, n * one.arith_cycles, n * one.dram_cycles)


def dram_read_bytes(mp: MeshProgram, target: Target) -> int:
    """Bytes every :class:`DramLoad` of ``mp`` reads over one run (what the emulator's ``dram_bytes`` counts)."""
    total = 0
    for op, scope in mp.walk():
        if isinstance(op, DramLoad):
            for env, weight in _representatives(scope):
                total += weight * dram_load_cycles(mp, op, env, target)[1]
    return int(total)


def dram_load_cycles(mp: MeshProgram, op: DramLoad, env: dict[str, int], target: Target) -> tuple[float, int]:
    """(cycles of the busiest core, bytes all cores read) of DRAM load ``op`` at loop values ``env``: every core of
    its rectangle with a non-empty box of ``op.dst`` reads it, sharing the chip's DRAM bandwidth
    (:meth:`Target.dram_read_cycles`), exactly as the emulator's DRAM op charges. Box sizes are separable per
    axis, so the readers are counted per column and per row, never per core."""
    t = mp.tensor(op.dst)
    cols, rows = op.rect.members(env)
    step = env.get("t", 0)

    def along(axis, cs):
        sizes = [(c, prod(d.size(c) for d in t.box if d.coord == axis)) for c in cs]
        return [c for c, n in sizes if n > 0]
    xs, ys = along("x", cols), along("y", rows)
    rest = prod(d.size(step) if d.coord == "t" else d.size(0) for d in t.box if d.coord not in ("x", "y"))
    readers = len(xs) * len(ys) if rest else 0
    if not readers:
        return 0.0, 0
    per = [t.bytes_at(x, y, step) for x in (xs[0], xs[-1]) for y in (ys[0], ys[-1])]
    total = sum(t.bytes_at(x, ys[0], step) for x in xs) * sum(t.bytes_at(xs[0], y, step) for y in ys) \
        // max(t.bytes_at(xs[0], ys[0], step), 1)
    return target.dram_read_cycles(max(per), readers), total


def _dram_casts(ops) -> set[int]:
    """Ids of the exchanges that multicast panels a DRAM load of the same loop body just read (``dram_roots``:
    every pattern sends a load's buffer into itself): :func:`_dram_costs` costs them with their loads."""
    loaded: dict[int, set[str]] = {}
    for op, _, loops in ops:
        if isinstance(op, DramLoad) and loops:
            loaded.setdefault(id(loops[-1]), set()).add(op.dst)
    return {id(op) for op, _, loops in ops if isinstance(op, Exchange) and loops and op.ops
            and all(isinstance(c, Multicast) and c.src == c.dst and c.dst in loaded.get(id(loops[-1]), ())
                    for c in op.ops)}


def _dram_costs(mp: MeshProgram, ops, target: Target) -> tuple[float, float, dict[str, float]]:
    """Exposed cycles, hidden cycles and cycles per array of the DRAM loads among ``ops`` (``_walk_loops``
    triples). The loads of one loop body run one after another on a core, so per iteration they add up; a
    prefetched one after its loop's first iteration hides behind the previous iteration's compute
    (:func:`_iteration_compute`), as the emulator times it (issued when the core started that compute)."""
    exposed = hidden = 0.0
    per_array: dict[str, float] = {}
    groups: dict[int, list] = {}
    casts = _dram_casts(ops)
    for op, scope, loops in ops:
        if isinstance(op, DramLoad) or id(op) in casts:
            groups.setdefault(id(loops[-1]) if loops else id(op), []).append((op, scope, loops))
    for members in groups.values():
        _, scope, loops = members[0]
        for env, weight in _representatives(scope):
            # The loads of a core one after another, then the multicast of what the roots read: its whole
            # path every step (each step's panels start at the root, after its read).
            costs = [(op, dram_load_cycles(mp, op, env, target)[0]) for op, _, _ in members if isinstance(op, DramLoad)]
            costs += _cast_costs(mp, [op for op, _, _ in members if isinstance(op, Exchange)], env, target)
            full = sum(cy for _, cy in costs)
            later = [op.prefetch for op, _, _ in members]
            var = scope[-1][0] if scope else None
            hides = loops and all(later) and env.get(var, 0) > 0
            # Issued when the core started the previous iteration's compute: hidden behind that iteration.
            step = _iteration_compute(mp, loops[-1], {**env, var: env[var] - 1}, target) if hides else 0.0
            shown = max(0.0, full - step) if hides else full
            share = shown / full if full else 0.0
            exposed += weight * shown
            hidden += weight * (full - shown)
            for op, cy in costs:
                per_array[op.array] = per_array.get(op.array, 0.0) + weight * cy * share
    return exposed, hidden, per_array


def _cast_costs(mp: MeshProgram, exchanges: list, env: dict[str, int], target: Target) -> list:
    """(pattern, cycles) of the slowest multicast of each of ``exchanges`` (root multicasts of DRAM panels) at
    ``env``: the patterns of one exchange run at once on their own colours, but the panels a core takes in
    (or sends) share its ramp, so the slowest is raised to the exchange's ramp cycles (:func:`_with_ramp`)."""
    out = []
    for ex in exchanges:
        cys = _with_ramp(mp, ex, env, target, [(c, _pattern_cycles(mp, c, env, target)) for c in ex.ops])
        if cys:
            out.append(max(cys, key=lambda p: p[1]))
    return out


def _iteration_compute(mp: MeshProgram, loop: Loop, env: dict[str, int], target: Target) -> float:
    """Cycles of the busiest core in one iteration ``env`` of ``loop``: the Computes of its body, each at the
    busiest of the cores :func:`_compute_cycles` probes, added up (the kernels of one step run one after
    another on a core)."""
    total = 0.0
    fix = {"__" + v: val for v, val in env.items()}
    for op in loop.body:
        if not isinstance(op, Compute):
            continue
        k = mp.kernel(op.kernel)
        best = 0.0
        for cls in k.classes:
            for x, y in _probe_cores(cls.region):
                best = max(best, call_cycles(mp, k, target, {"__x": x, "__y": y, **fix, **at_longest(mp)},
                                             drop=("__kb",)))
        total += best
    return total


def _estimate_ops(mp: MeshProgram, body, target: Target) -> tuple[float, float, float, dict[str, float], float, float]:
    """Compute, exposed communication, hidden communication and per-tensor cycles of ``body`` (ops of
    ``mp``) run one after another, then the arithmetic part of that compute (the same ops costed on
    :meth:`Target.without_compute_overheads`) and the exposed DRAM part of that communication."""
    arith = 0.0
    ideal = target.without_compute_overheads() if target.has_compute_overheads else None
    compute = 0.0
    comm = 0.0
    hidden = 0.0
    per_tensor: dict[str, float] = {}
    # id(loop) -> (compute cycles of one busy iteration of its body, fraction of iterations that are busy)
    step_compute: dict[int, tuple[float, float]] = {}
    ops = list(_walk_loops(body))
    prefetching = {id(lp) for op, _, loops in ops if isinstance(op, Exchange) and op.prefetch and loops
                   for lp in loops[-1:]}
    chains = {id(op): casts for op, _, _ in ops if isinstance(op, Loop) and not op.wave
              for casts in [_chain_roots(mp, op.body)] if casts}
    for op, scope, loops in ops:
        if isinstance(op, Compute):
            full = None
            chain = chains.get(id(loops[-1])) if loops and mp.skew is None and not _moves(op.rect) else None
            wave = bool(loops) and loops[-1].wave
            if chain:
                # A step-owner chain: every step's root work is on the critical path (_chain_roots).
                def cycles_on(t):
                    return _chained_compute_cycles(mp, op, scope, t, chain)
            elif loops and id(loops[-1]) in prefetching and mp.skew is not None and _uses_kb(mp.kernel(op.kernel)) \
                    and not _moves(op.rect):
                # Double-buffered rings: a core's next panels travel while it computes, so no dependence
                # chain carries a full block from core to core; each core runs its own blocks back to back
                # (steps on the blocks past the end of a partial tiling are empty: nothing to hide behind).
                full = _skewed_compute_cycles(mp, op, scope, target)

                def cycles_on(t):
                    return _compute_cycles(mp, op, scope, t)
            else:
                def cycles_on(t):
                    return _op_compute_cycles(mp, op, scope, t, wave)
            cy = cycles_on(target)
            compute += cy
            arith += cy if ideal is None else cycles_on(ideal)
            # Its share of one iteration of every enclosing loop (the overlap a prefetch can hide behind).
            for d, lp in enumerate(loops):
                per = prod(n for _, n in scope[:d + 1]) or 1
                step, busy = step_compute.get(id(lp), (0.0, 1.0))
                if full is not None and d == len(loops) - 1 and full > 0:
                    step_compute[id(lp)] = (step + full / per, min(busy, cy / full))
                else:
                    step_compute[id(lp)] = (step + cy / per, busy)
    casts = _dram_casts(ops)
    for op, scope, loops in ops:
        if isinstance(op, Exchange) and id(op) not in casts:
            inner = scope[-1][0] if scope else None
            # A prefetched exchange after its loop's first active step hides behind one step's compute.
            overlap = step_compute.get(id(loops[-1]), (0.0, 1.0)) if (op.prefetch and loops) else None
            wave = _wave_cycles(op, scope, target)
            per_wave = 0.0
            if overlap is not None and wave:
                # Spread the wave's extra latency over the later steps, which each hide behind compute.
                var, n = scope[-1]
                outer = {v: 0 for v, _ in scope[:-1]}
                n_later = sum(op.active({**outer, var: t}) for t in range(n)) - 1
                per_wave = wave / n_later if n_later > 0 else 0.0
            for env, weight in _representatives(scope):
                if not op.active(env) or not op.ops:
                    continue
                # The first active iteration pays the whole longest path; the ones after it only the
                # latency a dependence chain carries from one step to the next (see _pattern_cycles).
                first = inner is None or not any(op.active({**env, inner: k}) for k in range(env[inner]))
                later = _exchange_costs(mp, op, env, target, {**env, inner: env[inner] - 1}) \
                    if inner is not None and (weight > 1 or not first) else None
                # Only a step after the loop's first iteration has an earlier compute to hide behind.
                runs = [(_exchange_costs(mp, op, env, target, None), 1, bool(inner and env[inner] > 0))] \
                    if first else []
                if later is not None:
                    runs.append((later, weight - 1 if first else weight, True))
                for costs, w, hides in runs:
                    if overlap is not None and hides:
                        casts = {c.array for c in op.ops if isinstance(c, Multicast)}
                        costs = [(name, cy + (per_wave if name in casts and cy else 0.0)) for name, cy in costs]
                        full = max(cy for _, cy in costs)
                        step, busy = overlap
                        exposed = busy * max(0.0, full - step) + (1.0 - busy) * full
                        share = exposed / full if full else 0.0
                        comm += w * exposed
                        hidden += w * (full - exposed)
                        for name, cy in costs:
                            per_tensor[name] = per_tensor.get(name, 0.0) + w * cy * share
                        continue
                    comm += w * max(cy for _, cy in costs)
                    for name, cy in costs:
                        per_tensor[name] = per_tensor.get(name, 0.0) + w * cy
            if wave and overlap is None:
                comm += wave
                for c in op.ops:
                    if isinstance(c, Multicast):
                        per_tensor[c.array] = per_tensor.get(c.array, 0.0) + wave
    d_exposed, d_hidden, d_arrays = _dram_costs(mp, ops, target)
    comm += d_exposed
    hidden += d_hidden
    for name, cy in d_arrays.items():
        per_tensor[name] = per_tensor.get(name, 0.0) + cy
    return compute, comm, hidden, per_tensor, arith, d_exposed


def expr_flops(expr) -> int:
    """Arithmetic operations one evaluation of ``expr`` performs (binary operators, negations, calls)."""
    return sum(1 for e in expr.walk() if isinstance(e, (Bin, Neg, Call)))


def one_core_cycles(prog, target: Target) -> float:
    """Modelled cycles of ``prog`` run whole on one core: every statement instance at ``target``'s rate for
    its written array's dtype (at least one operation each, as :func:`instance_cycles` charges), plus the
    target's compute overheads as :func:`call_cycles` charges them (one call, the one-core plan's one sequence
    kernel; a vector operation per run of a statement's innermost loop in the program's order, its issues of
    ``lanes`` elements), with no
    communication. This is what the one-core plan costs, computed from the program alone, so it exists even
    when the data could never fit one core's SRAM (the baseline of a speedup at wafer scale)."""
    total, called = 0.0, False
    for s in prog.statements:
        n = count_points(s.domain_set, {})
        dtype = prog.array(s.write.array).dtype
        arith = max(expr_flops(s.expr), 1) / target.flops(dtype)
        if not target.has_compute_overheads or not n:
            total += n * arith
            continue
        inner = s.loops[-1] if s.loops else None
        width = target.lanes(dtype)
        ops, chunks = vector_sets(s.domain, inner, width)
        elem = _streamed_cycles(arith, inner, [(r.index, prog.array(r.array).dtype) for r in s.reads],
                                (s.write.index, dtype), target)
        total += (count_points(ops, {}) * target.vector_op_cycles
                  + (count_points(chunks, {}) if width > 1 else n) * width * elem)
        called = True
    return total + (target.call_cycles if called else 0.0)
