"""Running a compiled program in the native emulator: numpy in, numpy out, stats as a record.

:func:`execute` checks the inputs against the program's arrays and scalars, builds (or reuses from the
cache) the kernel library, lowers the MeshIR to op code, loads every input into the arenas of the cores
that own it, runs, and reads every output back from its owners.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..emit_c.build import compile_shared
from ..emit_c.work import emit_work_module
from ..affine.runtime import check_values
from ..errors import InputError, SimError
from ..meshir.ir import MeshProgram
from ..targets import NP_DTYPES, Target
from .lower import box, lower, rect
from .plot import PICTURES, plot_result, write_trace
from .runtime import MeshStats, NativeMesh, TraceRecord, load_kernels
from .staging import load_staged, needs_staging, staged_store

#: numpy's dtype of each MICA dtype (:data:`mica.targets.NP_DTYPES`: bf16 arrays are ``ml_dtypes.bfloat16``).
NP_DTYPE = dict(NP_DTYPES)

#: How to make an array of each dtype whose numpy spelling is not ``np.<name>`` (the InputError's advice).
CONVERT_HINT = {"bf16": ".astype(ml_dtypes.bfloat16) (import ml_dtypes; numpy has no bfloat16 of its own)"}


def rounded_scalar(value: float, dtype: str) -> float:
    """A scalar argument of a 16-bit dtype rounded to it via f32 (as the sequential reference rounds it,
    :mod:`mica.codeprint.half`); other scalars unchanged (kernels convert those themselves)."""
    if dtype in ("f16", "bf16"):
        return float(np.float32(value).astype(NP_DTYPE[dtype]))
    return value


#: The timing modes :func:`execute` accepts: the event-level link model (the default) and the wavelet-level
#: fabric simulation (mica_rt.h "Wavelet-level fabric mode").
TIMINGS = ("event", "wavelet")

#: Events recorded in all (the per-core cap is this over the traced cores, at least 1, unless
#: ``trace_events`` says otherwise): 32 bytes each, so at most 128 MB.
TRACE_BUDGET = 1 << 22


@dataclass(frozen=True, eq=False)
class RunResult:
    """``outputs`` maps every written array's name to its value; ``stats`` holds the emulator's counters.

    ``program`` is the MeshIR the mesh ran, ``ops`` its EXCHANGE / COMPUTE ops by emulator op id and
    ``kernel_names`` the C function of each kernel table index (for pictures and traces);
    ``trace_record`` the per-core events the emulator recorded (None when the run was not traced; see
    :func:`execute`). :meth:`plot` writes PNG heatmaps, :meth:`trace` a Chrome / Perfetto trace."""

    outputs: dict[str, np.ndarray]
    stats: "RunStats"
    program: MeshProgram | None = None
    ops: tuple = ()
    kernel_names: tuple[str, ...] = ()
    trace_record: TraceRecord | None = None

    def plot(self, path, what: Sequence[str] = PICTURES, *, dpi: int = 100) -> list[Path]:
        """Writes PNG heatmaps of this run and returns their paths: ``compute``, ``idle`` (and ``comm``)
        cycles per core, ``traffic`` (bytes per out-link, one panel per direction), ``sram`` (arena bytes
        in use per core) and ``placement`` (which operator's kernels run on each core). ``path`` is a
        directory (one ``<what>.png`` each) or a ``.png`` file (with several pictures, ``<stem>_<what>.png``).
        See :func:`mica.native_sim.plot.plot_result`."""
        return plot_result(self, path, what, dpi=dpi)

    def trace(self, path, cores=None, *, time: str = "us") -> Path:
        """Writes the per-core timelines of this run to ``path`` as Chrome trace-event JSON (open it in
        https://ui.perfetto.dev or chrome://tracing) and returns the path: one track per core, one complete
        event per kernel call or exchange wait, timed by the emulator's modelled clocks. ``cores``: a
        rectangle ``(x0, x1, y0, y1)`` or a list of ``(x, y)`` (default: every traced core); ``time``:
        ``"us"`` (the target's clock) or ``"cycles"`` (one cycle drawn as one microsecond). Needs a traced
        run (``run(..., trace=True)``, or ``trace=(x0, x1, y0, y1)`` for a rectangle of cores). See
        :func:`mica.native_sim.plot.write_trace`."""
        return write_trace(self, path, cores=cores, time=time)


@dataclass(frozen=True, eq=False)
class RunStats:
    """The emulator's measured figures for one run (see :class:`mica.native_sim.runtime.MeshStats`).

    Timing model (``mica_rt.h``): ``cycles`` are the modelled cycles (the latest core's clock) and
    ``seconds`` the same at the target's clock; per core, ``core_compute`` / ``core_comm`` / ``core_idle``
    (float64 arrays ``[y, x]``, summing to ``core_clock``); per link, ``link_bytes`` and
    ``link_busy_cycles`` (``[y, x, link]``, out-links N, E, S, W); ``sram_peak`` the arena bytes of each
    core. Every array has a fixed small width per core, so a 745,500-core mesh costs a few tens of MB and no
    Python object per core. :meth:`summary` condenses them (hottest link, busiest core, utilisation).
    ``host_bytes_in`` / ``host_bytes_out``: the bytes of the arrays the host sent and read back in this run
    (arrays that stay on the mesh between runs cross only when loaded, written or read).
    """

    raw: MeshStats
    mesh: tuple[int, int]
    threads: int
    target: Target | None = None
    host_bytes_in: int = 0
    host_bytes_out: int = 0

    def __getattr__(self, name):
        if name == "raw":                       # not yet set (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.raw, name)

    @property
    def link_bytes(self) -> np.ndarray:
        """``[y, x, link]`` bytes sent on each out-link (N, E, S, W) of each core."""
        return self.raw.link_bytes

    @property
    def cycles(self) -> float:
        """Modelled cycles: the latest core's clock."""
        return float(self.raw.cycles)

    @property
    def seconds(self) -> float:
        """Modelled time at the target's clock."""
        return self.target.cycles_to_seconds(self.cycles) if self.target is not None else float("nan")

    @property
    def link_busy_cycles(self) -> np.ndarray:
        """``[y, x, link]`` cycles each link carried data: its bytes at the target's link bandwidth (every
        message occupies each link it crosses for bytes / bandwidth cycles)."""
        bw = self.target.link_bytes_per_cycle if self.target is not None else 1.0
        return self.raw.link_bytes / bw

    @property
    def sram_peak(self) -> np.ndarray:
        """``[y, x]`` bytes of SRAM each core holds (its arena: every buffer the program gives it)."""
        return self.raw.core_arena_bytes

    def summary(self) -> dict:
        """Scalar figures: traffic totals, modelled cycles and time, the compute / communication / idle
        breakdown (busiest core and mesh averages over the cores that did anything), utilisation (compute
        cycles over active cores x modelled cycles), the hottest link and the SRAM peak."""
        lb = self.raw.link_bytes
        hot = np.unravel_index(int(np.argmax(lb)), lb.shape) if lb.size else (0, 0, 0)
        comp = self.raw.core_compute
        comm = self.raw.core_comm
        idle = self.raw.core_idle
        clock = self.raw.core_clock
        active = clock > 0
        n_active = int(active.sum())
        busy = comp + comm
        bc = np.unravel_index(int(np.argmax(busy)), busy.shape) if busy.size else (0, 0)
        cycles = self.cycles
        return {
            "messages": int(self.raw.messages), "deliveries": int(self.raw.deliveries),
            "link_bytes": int(self.raw.link_bytes_total), "max_hops": int(self.raw.max_hops),
            "exchanges": int(self.raw.exchanges), "kernel_calls": int(self.raw.computes),
            "hottest_link": {"core": (int(hot[1]), int(hot[0])), "dir": "NESW"[int(hot[2])],
                             "bytes": int(lb.max()) if lb.size else 0,
                             "busy_cycles": float(self.link_busy_cycles.max()) if lb.size else 0.0},
            "arena_bytes_total": int(self.raw.arena_bytes), "arenas_spilled": self.raw.arenas_spilled,
            "threads": self.threads,
            "cycles": cycles, "seconds": self.seconds,
            "busiest_core": {"core": (int(bc[1]), int(bc[0])), "compute_cycles": float(comp[bc]),
                             "comm_cycles": float(comm[bc]), "idle_cycles": float(idle[bc])},
            "active_cores": n_active,
            "computing_cores": int((comp > 0).sum()),
            "mean_compute_cycles": float(comp[active].mean()) if n_active else 0.0,
            "mean_comm_cycles": float(comm[active].mean()) if n_active else 0.0,
            "mean_idle_cycles": float(idle[active].mean()) if n_active else 0.0,
            "utilisation": float(comp.sum() / (n_active * cycles)) if n_active and cycles > 0 else 0.0,
            "contended_messages": int(self.raw.contended_messages),
            "sram_peak_bytes": int(self.raw.core_arena_bytes.max()) if self.raw.core_arena_bytes.size else 0,
            "host_bytes_in": self.host_bytes_in, "host_bytes_out": self.host_bytes_out,
            **({"wavelet": self.wavelet_summary()} if self.raw.wavelet is not None else {}),
        }

    @property
    def timing(self) -> str:
        """The timing mode the run used: ``"event"`` or ``"wavelet"`` (see :data:`TIMINGS`)."""
        return "wavelet" if self.raw.wavelet is not None else "event"

    def wavelet_summary(self) -> dict | None:
        """Figures of the wavelet-level fabric mode (None when the run used the event-level timing): its
        totals (``mica_wave_totals``: flits, wavelet_hops, steps, stall cycles by cause ...), the busiest link
        (most flits; its utilisation = flits over modelled cycles) and the link with most stall cycles."""
        raw = self.raw
        if raw.wavelet is None:
            return None
        flits, stalls = raw.wave_link_flits, raw.wave_link_stalls

        def link(arr, what):
            if not arr.size:
                return {"core": (0, 0), "dir": "N", what: 0}
            y, x, d = np.unravel_index(int(np.argmax(arr)), arr.shape)
            return {"core": (int(x), int(y)), "dir": "NESW"[int(d)], what: int(arr[y, x, d])}
        busiest = link(flits, "flits")
        busiest["utilisation"] = busiest["flits"] / self.cycles if self.cycles > 0 else 0.0
        return {**raw.wavelet, "busiest_link": busiest, "most_stalled_link": link(stalls, "stall_cycles"),
                "stall_cycles": int(raw.wavelet["stall_contention"] + raw.wavelet["stall_backpressure"]
                                    + raw.wavelet["stall_receiver"])}

    def __str__(self) -> str:
        s = self.summary()
        h = s["hottest_link"]
        b = s["busiest_core"]
        return (f"emulator: {s['cycles']:,.0f} modelled cycles ({s['seconds'] * 1e6:,.2f} us), utilisation "
                f"{s['utilisation']:.1%} over {s['active_cores']:,} active cores ({s['computing_cores']:,} "
                f"computing); busiest core {b['core']}: "
                f"compute {b['compute_cycles']:,.0f}, communication {b['comm_cycles']:,.0f}, idle "
                f"{b['idle_cycles']:,.0f} cycles\n"
                f"  {s['messages']:,} messages ({s['deliveries']:,} deliveries, {s['contended_messages']:,} "
                f"delayed by a shared link), {s['link_bytes']:,} link bytes, longest path {s['max_hops']} hops, "
                f"{s['exchanges']:,} exchanges, {s['kernel_calls']:,} kernel calls; hottest link "
                f"core {h['core']} -> {h['dir']} with {h['bytes']:,} B ({h['busy_cycles']:,.0f} busy cycles); "
                f"SRAM peak {s['sram_peak_bytes']:,} B per core, arenas {s['arena_bytes_total']:,} B in all"
                f"{' (in a spill file)' if s['arenas_spilled'] else ''}; "
                f"host sent {s['host_bytes_in']:,} B, read back {s['host_bytes_out']:,} B; "
                f"{s['threads']} thread(s)" + self._wavelet_text(s.get("wavelet")))

    @staticmethod
    def _wavelet_text(w: dict | None) -> str:
        if w is None:
            return ""
        b, st = w["busiest_link"], w["most_stalled_link"]
        return (f"\n  wavelet level: {w['flits']:,} flits, {w['wavelet_hops']:,} wavelet-hops; busiest link core "
                f"{b['core']} -> {b['dir']} with {b['flits']:,} flits ({b['utilisation']:.1%} of the cycles); "
                f"stalls {w['stall_cycles']:,} cycles (contention {w['stall_contention']:,}, back-pressure "
                f"{w['stall_backpressure']:,}, receivers {w['stall_receiver']:,}), most on core {st['core']} -> "
                f"{st['dir']} ({st['stall_cycles']:,})")


def check_inputs(program, inputs: Mapping, kept: frozenset[str] = frozenset()) -> tuple[dict[str, np.ndarray], list[float]]:
    """The input arrays (C-contiguous) and scalar values, or :class:`InputError` naming the problem.

    Every array of the program's signature may be given, as a C caller passes them: the arrays whose
    initial contents matter (``program.inputs``) must be; an output-only array (``C`` of ``C = A @ B``) may
    be, and is checked for shape and dtype like an input, but its contents are ignored (the outputs come
    back in ``RunResult.outputs``). A runtime parameter (``program.runtime``) must be an integer in its declared
    range. The arrays of ``kept`` stay on the mesh (:class:`mica.native_sim.resident.Resident`): they are
    neither expected nor accepted."""
    if not isinstance(inputs, Mapping):
        raise InputError(f"inputs must be a mapping of names to arrays, got {type(inputs).__name__}")
    on_mesh = sorted(set(inputs) & kept)
    if on_mesh:
        raise InputError(f"{', '.join(on_mesh)} stay{'s' if len(on_mesh) == 1 else ''} on the mesh: change "
                         f"{'it' if len(on_mesh) == 1 else 'them'} with write(), not in a run's inputs")
    expected = (set(program.inputs) - kept) | {n for n, _ in program.scalars}
    accepted = expected | (set(program.outputs) - kept)
    unknown = sorted(set(inputs) - accepted)
    if unknown:
        raise InputError(f"unexpected inputs {unknown}; {program.name} takes {sorted(expected)}"
                         + (f" (and, ignored, its outputs {sorted(set(program.outputs) - expected)})"
                            if set(program.outputs) - expected else ""))
    arrays = {}
    for name in (*program.inputs, *(o for o in program.outputs if o in inputs and o not in program.inputs)):
        if name in kept:
            continue
        if name not in inputs:
            raise InputError(f"input {name!r} is missing; {program.name} takes {sorted(expected)}")
        val = check_array(program, name, inputs[name])
        if name in program.inputs:
            arrays[name] = val
    check_values(getattr(program, "runtime", ()), inputs)
    scalars = []
    for name, dtype in program.scalars:
        if name not in inputs:
            raise InputError(f"scalar {name!r} is missing")
        v = inputs[name]
        if isinstance(v, np.ndarray) and v.shape == ():
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"scalar {name!r} must be a number, got {type(v).__name__}")
        scalars.append(rounded_scalar(float(v), dtype))
    return arrays, scalars


def check_array(program, name: str, val) -> np.ndarray:
    """``val`` as the C-contiguous value of ``program``'s array ``name``, or :class:`InputError` naming what
    is wrong with it (type, shape, dtype and how to convert it)."""
    arr = program.array(name)
    user = user_shape(program, name)
    if not isinstance(val, np.ndarray):
        raise InputError(f"input {name!r} must be a numpy array, got {type(val).__name__}")
    if val.shape != arr.shape and val.shape != user:
        raise InputError(f"input {name!r} has shape {val.shape}, expected {user}")
    want = np.dtype(NP_DTYPE[arr.dtype])
    if val.dtype != want:
        raise InputError(f"input {name!r} has dtype {val.dtype}, expected {want} ({arr.dtype}); convert it "
                         f"with {CONVERT_HINT.get(arr.dtype, f'.astype(np.{want.name})')}")
    return np.ascontiguousarray(val).reshape(arr.shape)


def user_shape(program, name: str) -> tuple[int, ...]:
    """The shape ``run()`` takes and gives back array ``name`` in (:meth:`mica.affine.program.Program.user_shape`:
    a folded loop's arrays in the program's source shape)."""
    shape = getattr(program, "user_shape", None)
    return shape(name) if shape is not None else program.array(name).shape


def default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def trace_plan(trace, mesh: tuple[int, int], events: int | None) -> tuple[tuple[int, int, int, int], int] | None:
    """The traced rectangle and events per core ``execute(trace=..., trace_events=...)`` asks for, or None."""
    w, h = mesh
    if trace is None or trace is False:
        return None
    if trace is True:
        rect = (0, w, 0, h)
    else:
        try:
            rect = tuple(int(v) for v in trace)
        except (TypeError, ValueError):
            rect = ()
        if len(rect) != 4 or isinstance(trace, (str, bytes)):
            raise InputError(f"trace must be None, True, False or a rectangle of cores (x0, x1, y0, y1), "
                             f"got {trace!r}")
        x0, x1, y0, y1 = max(rect[0], 0), min(rect[1], w), max(rect[2], 0), min(rect[3], h)
        if x0 >= x1 or y0 >= y1:
            raise InputError(f"trace rectangle {trace!r} holds no core of the {w}x{h} mesh")
        rect = (x0, x1, y0, y1)
    n = (rect[1] - rect[0]) * (rect[3] - rect[2])
    if events is None:
        events = max(1, min(TRACE_BUDGET // n, 1 << 20))
    if isinstance(events, bool) or not isinstance(events, int) or not 1 <= events < 2**32:
        raise InputError(f"trace_events must be a positive integer below 2**32, got {events!r}")
    return rect, events


def execute(compiled, inputs: Mapping, *, threads: int | None = None, progress: bool | None = None,
            trace=False, trace_events: int | None = None, timing: str = "event") -> RunResult:
    """Runs ``compiled`` (a :class:`mica.CompiledProgram`) on its mesh in the emulator.

    ``progress``: a progress bar on stderr for runs longer than a few seconds (None: only when stderr is
    a terminal; see :class:`mica.native_sim.runtime.Progress`).

    ``trace``: record per-core timelines (mica_rt.h "Trace") for :meth:`RunResult.trace` -- True: every
    core; a rectangle ``(x0, x1, y0, y1)``: its cores; False or None (the default): none.
    ``trace_events``: events kept per core (default: :data:`TRACE_BUDGET` over the traced cores, at
    most 2**20); a core's later events are dropped and counted. Recording costs 32 bytes per event and a
    small record per traced core, and slows a run of small kernels down by up to about half (the events
    are written to memory); with tracing off the emulator holds nothing for it and runs as fast as
    before.

    ``timing``: ``"event"`` (the default) times messages with the event-level link model; ``"wavelet"``
    steps every message of every exchange through the fabric flit by flit (mica_rt.h "Wavelet-level fabric
    mode": per-link, per-colour queues of the target's ``queue_depth``, back-pressure, one flit per link and
    ramp per cycle, the target's ``hop_latency`` and ``ramp_latency``), slower but independent of the cost
    model's formulas; ``res.stats.summary()["wavelet"]`` then holds its figures (busiest link, stall cycles).
    The outputs are the same in both modes."""
    if timing not in TIMINGS:
        raise InputError(f"timing must be one of {', '.join(map(repr, TIMINGS))}, got {timing!r}")
    program = compiled.program
    mp = compiled.mesh_program
    target = compiled.target
    arrays, scalars = check_inputs(program, inputs)
    pieces = getattr(compiled, "pieces", None)       # a bare (program, MeshIR, kernels) bundle has none
    if pieces is not None:                  # the mesh runs the pieces: cut the inputs, paste the outputs
        program, arrays = pieces.program, pieces.split(arrays)
    if threads is None:
        threads = default_threads()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(f"threads must be a positive integer, got {threads!r}")
    km = compiled.kernel_module
    low, source = _prepared(mp, km, target)
    w, h = mp.mesh
    tracing = trace_plan(trace, (w, h), trace_events)
    # Both the kernel library and the mesh are released when the run ends: a long-lived process running
    # many programs must not accumulate mapped libraries.
    with load_kernels(compile_shared(source, name=f"kernels_{mp.name}", native=True)) as lib, \
            NativeMesh(w, h, target.colours, target.sram_bytes) as mesh:
        mesh.set_timing(target.hop_latency, target.link_bytes_per_cycle)
        if timing == "wavelet":
            mesh.set_wavelet(True, getattr(target, "ramp_latency", 0), getattr(target, "queue_depth", 8))
        mesh.set_host_threads(threads)
        r = mp.region
        mesh.reserve((r.x0, r.x1, r.y0, r.y1), mp.arena_bytes)
        mesh.commit()
        if tracing is not None:
            mesh.trace_start(*tracing)
        sent = host_loads(mesh, mp, low.loads, arrays)
        sent += dram_binds(mesh, mp, target, arrays)
        run_code(mesh, low, lib, scalars, threads, progress)
        outputs = host_stores(mesh, mp, program, low.stores)
        stats = mesh.stats()
        record = mesh.trace()
    if pieces is not None:
        outputs = pieces.join(outputs)
    recv = sum(v.nbytes for v in outputs.values())
    return RunResult(outputs, RunStats(stats, (w, h), threads, target, sent, recv), mp, low.ops, tuple(km.names),
                     record)


def host_loads(mesh, mp: MeshProgram, loads, arrays: Mapping[str, np.ndarray]) -> int:
    """Copies ``arrays`` into the buffers of the host loads ``loads`` (ops of ``mp``'s lowered code); returns
    the bytes the host sent (each load counts its array once)."""
    sent = 0
    for ld in loads:
        t = mp.tensor(ld.buffer)
        if needs_staging(t):
            load_staged(mesh, arrays[ld.array], t, ld.region, mp.skew)
        else:
            mesh.host_load(arrays[ld.array], box(t, {}), rect(ld.region.rect, {}))
        sent += arrays[ld.array].nbytes
    return sent


def dram_binds(mesh, mp: MeshProgram, target, arrays: Mapping[str, np.ndarray]) -> int:
    """Gives ``mesh`` the target's DRAM level and binds the arrays that live in device DRAM (``mp.dram``) to
    their slots (their index in ``mp.dram``), as a host program writes its input buffers to device DRAM;
    returns the bytes the host sent there. Nothing for a program without DRAM arrays."""
    if not mp.dram:
        return 0
    mesh.set_dram(target.dram_bytes, target.dram_bytes_per_cycle, target.dram_core_bytes_per_cycle,
                  target.dram_latency)
    for slot, name in enumerate(mp.dram):
        mesh.dram_bind(slot, arrays[name])
    return sum(arrays[name].nbytes for name in mp.dram)


def host_stores(mesh, mp: MeshProgram, program, stores) -> dict[str, np.ndarray]:
    """The arrays of the host stores ``stores`` (ops of ``mp``'s lowered code), read back from their owners."""
    outputs = {}
    for st in stores:
        t = mp.tensor(st.buffer)
        arr = program.array(st.array)
        if needs_staging(t):
            out = staged_store(mesh, t, st.region, arr.shape, NP_DTYPE[arr.dtype])
        else:
            out = mesh.host_store(box(t, {}), rect(st.region.rect, {}), arr.shape, NP_DTYPE[arr.dtype])
        outputs[st.array] = out.reshape(user_shape(program, st.array))
    return outputs


def run_code(mesh, low, lib, scalars, threads: int, progress) -> None:
    """Runs lowered op code ``low`` on ``mesh``; an emulator fault names the MeshIR op it happened in."""
    try:
        mesh.run(low.code, lib, scalars, threads, progress=progress)
    except SimError as exc:
        raise SimError(_name_op(str(exc), low.op_names)) from None


#: Lowered op code and kernel-module source of the programs run last: ids of (mesh program, kernel
#: module, target) -> (weak references to the three, Lowered, source). Running a program again (a benchmark,
#: a parameter sweep) then costs no lowering and no work-function generation (milliseconds each).
_PREPARED: dict = {}
_PREPARED_MAX = 8
_PREPARED_LOCK = threading.Lock()


def _prepared(mp, km, target):
    """(lowered op code, kernel module source with its work functions) of ``mp`` with ``km``."""
    key = (id(mp), id(km), id(target))
    with _PREPARED_LOCK:
        hit = _PREPARED.get(key)
        if hit is not None and hit[0]() is mp and hit[1]() is km and hit[2]() is target:
            return hit[3], hit[4]
    low = lower(mp, km)
    source = km.source + emit_work_module(mp, target, km.names)
    with _PREPARED_LOCK:
        while len(_PREPARED) >= _PREPARED_MAX:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = (weakref.ref(mp), weakref.ref(km), weakref.ref(target), low, source)
    return low, source


def _name_op(message: str, names: tuple[str, ...]) -> str:
    """Appends the MeshIR op an emulator message's ``op N`` refers to."""
    import re
    m = re.search(r"\bop (\d+)", message)
    if m and int(m.group(1)) < len(names):
        return f"{message} [{names[int(m.group(1))]}]"
    return message
