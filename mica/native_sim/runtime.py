"""Python binding of the native mesh emulator (``mica/runtime_c``), through cffi in ABI mode.

The runtime library is compiled once from the packaged ``mica_rt.c`` (a unity build of the parts in
``mica/runtime_c``) with :func:`mica.emit_c.build.compile_shared` (so it is cached across processes) and
opened lazily on first use. One module-level :data:`ffi` declares the API of ``mica_rt.h``, read from the
header itself (:func:`header_cdef`): the runtime's functions and what a generated kernel module exports::

    int32_t        mica_kernel_count(void);
    mica_kernel_fn mica_kernel_get(int32_t i);

:func:`load_kernels` opens such a module and builds the kernel table that :meth:`NativeMesh.run`
passes to the emulator.

:class:`NativeMesh` owns one emulated mesh: reserve arenas, commit, copy tensors in and out with
boxes, run op codes (see :mod:`mica.native_sim.opcode`) and read statistics. Every fault the emulator
reports raises :class:`mica.errors.SimError` with its one-line message.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Sequence

import cffi
import numpy as np

from mica.emit_c.build import compile_shared, runtime_sources_digest
from mica.errors import EmitError, SimError
from mica.progress import progress_wanted
from mica.native_sim.opcode import Box, RectLike, as_rect
from mica.native_sim.spill import should_spill, spill_file

#: Directory holding ``mica_rt.h``, ``mica_rt.c`` and the parts it includes (also the include directory for
#: kernel modules).
RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime_c"

#: Marks of the part of ``mica_rt.h`` that is also the cffi declaration of the API (see :func:`header_cdef`).
CDEF_BEGIN, CDEF_END = "/* cdef-begin", "/* cdef-end */"


def header_cdef(header: str) -> str:
    """The cffi declarations of the emulator's API, taken from the text of ``mica_rt.h``: the part between
    its ``cdef-begin`` and ``cdef-end`` comments, with comments removed. That part declares the runtime's
    functions, types and constants and what a kernel module exports; it may hold no preprocessor
    directive but ``#define MICA_<NAME> <integer>`` (cffi parses no other). Raises :class:`EmitError`
    otherwise."""
    start, end = header.find(CDEF_BEGIN), header.find(CDEF_END)
    if start < 0 or end < start:
        raise EmitError("mica_rt.h has no cdef-begin ... cdef-end section for cffi")
    text = re.sub(r"/\*.*?\*/", " ", header[start:end + len(CDEF_END)], flags=re.S)
    if "/*" in text or "*/" in text or "//" in text:
        raise EmitError("mica_rt.h: unbalanced comment in the cdef section")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#") and not re.fullmatch(r"#\s*define\s+MICA_\w+\s+-?\d+", line):
            raise EmitError(f"mica_rt.h: cffi cannot take {line!r} (integer #defines only)")
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip()) + "\n"


#: The declarations :data:`ffi` holds: every declaration of ``mica_rt.h``, read from the header.
CDEF = header_cdef((RUNTIME_DIR / "mica_rt.h").read_text())

ffi = cffi.FFI()
ffi.cdef(CDEF)

_ERR_LEN = 1024
_lib = None
_lib_lock = threading.Lock()


def include_flags() -> tuple[str, ...]:
    """Compiler flags that make ``#include "mica_rt.h"`` work (for kernel modules)."""
    return ("-I", str(RUNTIME_DIR))


def runtime_source() -> str:
    """The emulator source as compiled: ``mica_rt.c`` (a unity build that includes the other parts of
    :data:`RUNTIME_DIR`, found through :func:`include_flags`), tagged with a hash of every ``.c`` and ``.h``
    file there (:func:`mica.emit_c.build.runtime_sources_digest`) so that editing any part, or the header,
    changes the cache key."""
    source = (RUNTIME_DIR / "mica_rt.c").read_text()
    return f"/* mica runtime_c sha256 {runtime_sources_digest(RUNTIME_DIR)} */\n{source}"


def runtime_lib():
    """The opened runtime library, built (or fetched from the cache) on first use."""
    global _lib
    with _lib_lock:
        if _lib is None:
            path = compile_shared(runtime_source(), name="mica_rt", flags=include_flags())
            _lib = ffi.dlopen(str(path))
        return _lib


class KernelLib:
    """An opened kernel module and its ``mica_kernel_fn`` table (kept alive with the library)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self._lib = ffi.dlopen(str(self.path))
            count = int(self._lib.mica_kernel_count())
            getter = self._lib.mica_kernel_get
        except (OSError, AttributeError) as exc:
            raise EmitError(f"cannot load kernel module {self.path}: {exc}") from None
        if count < 0:
            raise EmitError(f"kernel module {self.path} reports {count} kernels")
        self.count = count
        self.table = ffi.new("mica_kernel_fn[]", max(count, 1))
        for i in range(count):
            fn = getter(i)
            if fn == ffi.NULL:
                raise EmitError(f"kernel module {self.path} has no kernel {i}")
            self.table[i] = fn
        self.work = self._work_table(count)
        self.prefetch = self._prefetch_hint()

    def _work_table(self, count: int):
        """The module's timing work functions (``mica_work_get``), or None when it exports none."""
        try:
            getter = self._lib.mica_work_get
        except AttributeError:
            return None
        work = ffi.new("mica_work_fn[]", max(count, 1))
        for i in range(count):
            work[i] = getter(i)
        return work

    def _prefetch_hint(self):
        """The module's ``mica_prefetch_hint`` (mica_rt.h), or None when it exports none."""
        try:
            return ffi.cast("mica_prefetch_fn", self._lib.mica_prefetch_hint)
        except AttributeError:
            return None

    def __len__(self) -> int:
        return self.count

    def close(self) -> None:
        """Unmaps the library (its kernel table is unusable afterwards); safe to call twice."""
        lib, self._lib = getattr(self, "_lib", None), None
        if lib is not None:
            self.table = None
            self.work = None
            self.prefetch = None
            self.count = 0
            ffi.dlclose(lib)

    def __enter__(self) -> "KernelLib":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def load_kernels(path: str | Path) -> KernelLib:
    """Opens a generated kernel module (exporting ``mica_kernel_count``/``mica_kernel_get``)."""
    return KernelLib(path)


@dataclass(frozen=True, eq=False)
class MeshStats:
    """Statistics accumulated since the mesh was created or ``reset_stats`` was called.

    Totals as in ``mica_totals`` (``link_bytes_total`` and ``link_messages_total`` are its
    ``link_bytes`` and ``link_messages``). Per-link arrays ``link_bytes`` / ``link_messages`` are shaped
    (H, W, 4), ``[y, x, LINK_*]`` for the out-links of each core; per-core arrays are shaped (H, W). Two
    MeshStats compare equal when every total and every array is equal. ``cycles`` (the latest core's clock)
    and the per-core ``core_clock`` / ``core_compute`` / ``core_comm`` / ``core_idle`` come from the timing
    model (mica_rt.h); ``contended_messages`` counts messages that shared a link within their exchange.
    With the wavelet-level fabric mode on (:meth:`NativeMesh.set_wavelet`), ``wavelet`` holds its totals
    (``mica_wave_totals``: exchanges, messages, flits, wavelet_hops, steps, span_cycles, stall_contention,
    stall_backpressure, stall_receiver) and ``wave_link_flits`` / ``wave_link_stalls`` (H, W, 4) the flits
    that crossed each out-link and the cycles a ready flit stalled on it; all None while it is off.
    """

    messages: int
    deliveries: int
    link_bytes_total: int
    link_messages_total: int
    max_hops: int
    exchanges: int
    computes: int
    arena_bytes: int
    arena_max: int
    link_bytes: np.ndarray
    link_messages: np.ndarray
    core_bytes_sent: np.ndarray
    core_bytes_recv: np.ndarray
    core_arena_bytes: np.ndarray
    # timing model (mica_rt.h): modelled cycles of the latest core, per-core clocks and their breakdown
    cycles: float = 0.0
    contended_messages: int = 0
    core_clock: np.ndarray | None = None
    core_compute: np.ndarray | None = None
    core_comm: np.ndarray | None = None
    core_idle: np.ndarray | None = None
    # wavelet-level fabric mode (mica_rt.h): None when the run did not use it
    wavelet: dict | None = None
    # DRAM level (mica_rt.h): bytes the DRAM ops read into arenas
    dram_bytes: int = 0
    wave_link_flits: np.ndarray | None = None
    wave_link_stalls: np.ndarray | None = None
    # whether the arenas are backed by a spill file (mica.native_sim.spill), not host memory
    arenas_spilled: bool = False

    def totals(self) -> dict[str, int]:
        """The scalar totals as a dict."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type == "int"}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MeshStats):
            return NotImplemented
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray):
                if not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


#: The numpy layout of ``mica_event`` (mica_rt.h "Trace").
EVENT_DTYPE = np.dtype([("start", "<f8"), ("end", "<f8"), ("comm", "<f8"), ("op", "<i4"), ("kernel", "<i4")])
#: ``mica_event.kernel`` of an exchange's and a prefetched exchange's wait.
EV_EXCHANGE, EV_PREFETCH = -1, -2


@dataclass(frozen=True, eq=False)
class TraceRecord:
    """The per-core events the emulator recorded (mica_rt.h "Trace"): the traced cores are
    ``rect = (x0, x1, y0, y1)``; ``counts[i]`` / ``dropped[i]`` are the recorded and dropped events of its
    i-th core (row-major: core (x0 + i % w, y0 + i // w), w = x1 - x0); ``events`` (:data:`EVENT_DTYPE`) holds
    them core after core, each core's in order: ``start``, ``end`` (modelled cycles), ``comm`` (of an
    exchange's wait, the cycles counted as communication), ``op`` (the op id) and ``kernel`` (the kernel
    table index of a compute, :data:`EV_EXCHANGE` or :data:`EV_PREFETCH`)."""

    rect: tuple[int, int, int, int]
    counts: np.ndarray
    dropped: np.ndarray
    events: np.ndarray

    @property
    def width(self) -> int:
        return self.rect[1] - self.rect[0]

    def core_events(self, x: int, y: int) -> np.ndarray:
        """The events of core (x, y) (empty when it is not traced)."""
        x0, x1, y0, y1 = self.rect
        if not (x0 <= x < x1 and y0 <= y < y1):
            return self.events[:0]
        i = (y - y0) * self.width + (x - x0)
        start = int(self.counts[:i].sum())
        return self.events[start:start + int(self.counts[i])]


class NativeMesh:
    """One emulated W x H mesh with ``n_colours`` router colours and ``sram_bytes`` per core.

    Usage: ``reserve`` arenas, ``commit`` (allocates them, zeroed), then ``host_load`` / ``run`` /
    ``host_store`` / ``stats``. Close it with ``close()`` or use it as a context manager.
    """

    def __init__(self, width: int, height: int, n_colours: int, sram_bytes: int):
        self._lib = runtime_lib()
        self._m = ffi.NULL
        self.width, self.height = int(width), int(height)
        self.n_colours, self.sram_bytes = int(n_colours), int(sram_bytes)
        if not (0 < self.width < 2**31 and 0 < self.height < 2**31 and 0 <= self.n_colours < 2**31):
            raise SimError(f"bad mesh shape {width}x{height} with {n_colours} colours")
        err = ffi.new("char[]", _ERR_LEN)
        m = self._lib.mica_mesh_new(self.width, self.height, self.n_colours, self.sram_bytes, err, _ERR_LEN)
        if m == ffi.NULL:
            raise SimError(_message(err))
        self._m = m

    # -- lifetime ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the mesh (idempotent)."""
        if getattr(self, "_m", ffi.NULL) != ffi.NULL:
            self._lib.mica_mesh_free(self._m)
            self._m = ffi.NULL

    def __enter__(self) -> NativeMesh:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing sensible left to do
            pass

    # -- setup ------------------------------------------------------------------------------------

    def reserve(self, rect: tuple[int, int, int, int], nbytes: int) -> None:
        """Declares an arena of ``nbytes`` on every core of ``(x0, x1, y0, y1)``."""
        x0, x1, y0, y1 = (_clamp_i32(int(v)) for v in rect)
        self._check(self._lib.mica_mesh_reserve, self._mesh(), x0, x1, y0, y1, int(nbytes))

    def commit(self) -> None:
        """Allocates every reserved arena (zeroed), in host memory or, when :func:`mica.native_sim.spill.
        should_spill` says so for their size, in a spill file (:attr:`spilled`)."""
        m = self._mesh()
        if should_spill(int(self._lib.mica_mesh_pool_bytes(m))):
            with spill_file() as f:           # the mapping keeps the file once committed
                self._check(self._lib.mica_mesh_set_spill, m, f.fileno())
                self._check(self._lib.mica_mesh_commit, m)
        else:
            self._check(self._lib.mica_mesh_commit, m)

    @property
    def spilled(self) -> bool:
        """Whether the committed arenas are backed by a spill file rather than host memory."""
        return bool(self._lib.mica_mesh_spilled(self._mesh()))

    def set_host_threads(self, threads: int) -> None:
        """Threads the large host copies (``host_load``, ``host_store``, ``host_gather``) use."""
        self._lib.mica_set_host_threads(self._mesh(), max(1, min(int(threads), 256)))

    def host_bytes(self) -> int:
        """Bytes of host memory the mesh holds (bookkeeping, reserved arenas, route planes in use)."""
        return int(self._lib.mica_mesh_host_bytes(self._mesh()))

    # -- host copies ------------------------------------------------------------------------------

    def host_load(self, array: np.ndarray, box: Box, rect: RectLike) -> None:
        """Copies ``array`` (the whole tensor, shape ``box.shape``) into ``box`` of every core of ``rect``."""
        _check_host_array(array, box)
        self._host_copy(0, array, box, rect)

    def host_store(self, box: Box, rect: RectLike, shape: Sequence[int], dtype) -> np.ndarray:
        """Gathers ``box`` from every core of ``rect`` into a new array of ``shape`` and ``dtype``.

        ``shape`` must hold as many elements as ``box.shape`` (the data is row-major over the box's
        tensor); elements that no core of ``rect`` holds are zero.
        """
        out = np.zeros(tuple(int(s) for s in shape), dtype=dtype)
        _check_host_array(out, box)
        self._host_copy(1, out, box, rect)
        return out

    def _host_copy(self, direction: int, array: np.ndarray, box: Box, rect: RectLike) -> None:
        box_words = ffi.new("int64_t[]", box.words())
        rect_words = ffi.new("int64_t[]", as_rect(rect).words())
        host = ffi.from_buffer(array, require_writable=direction == 1) if array.nbytes else ffi.NULL
        self._check(self._lib.mica_host_copy, self._mesh(), direction, host, box_words, rect_words)

    def host_gather(self, array: np.ndarray, counts: Sequence[int], offset: int, rect: RectLike,
                    origins: np.ndarray) -> None:
        """Loads every member core of ``rect`` (row-major) with a buffer at arena byte ``offset`` of
        ``counts`` elements, taken from ``array`` from global index ``origins[cell]`` on (one row of
        ``len(counts)`` indices per core); elements outside ``array`` are zero (``mica_host_gather``)."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise SimError("host data must be a C-contiguous numpy array")
        rank = array.ndim
        if len(counts) != rank:
            raise SimError(f"buffer rank {len(counts)} differs from the array's {rank}")
        origins = np.ascontiguousarray(origins, dtype=np.int64)
        if origins.ndim != 2 or origins.shape[1] != rank:
            raise SimError(f"origins must be shaped (cores, {rank}), got {origins.shape}")
        shape = ffi.new("int64_t[]", [int(s) for s in array.shape] or [0])
        cnt = ffi.new("int64_t[]", [int(c) for c in counts] or [0])
        rect_words = ffi.new("int64_t[]", as_rect(rect).words())
        host = ffi.from_buffer(array) if array.nbytes else ffi.NULL
        org = ffi.from_buffer("int64_t[]", origins) if origins.size else ffi.NULL
        self._check(self._lib.mica_host_gather, self._mesh(), host, array.dtype.itemsize, rank, shape, cnt,
                    int(offset), rect_words, org, origins.shape[0])

    def set_timing(self, hop_latency: float, link_bytes_per_cycle: float) -> None:
        """The link model of the timing model: cycles per hop and bytes per cycle per link."""
        self._check(self._lib.mica_set_timing, self._mesh(), float(hop_latency), float(link_bytes_per_cycle))

    def set_wavelet(self, on: bool = True, ramp_latency: int = 0, queue_depth: int = 8) -> None:
        """Switches the wavelet-level fabric mode on or off (mica_rt.h "Wavelet-level fabric mode"): exchanges
        are then timed by a cycle-stepped simulation of their flits through per-link, per-colour queues of
        ``queue_depth`` flits, with ``ramp_latency`` whole cycles per core <-> router ramp (hop latency and
        link bandwidth from :meth:`set_timing`). Raises :class:`SimError` on a bad figure."""
        if isinstance(queue_depth, bool) or not isinstance(queue_depth, (int, np.integer)):
            raise SimError(f"queue depth must be a whole number of flits, got {queue_depth!r}")
        self._check(self._lib.mica_set_wavelet, self._mesh(), 1 if on else 0, float(ramp_latency),
                    int(max(min(int(queue_depth), 2**31 - 1), -(2**31))))

    # -- DRAM level -------------------------------------------------------------------------------

    def set_dram(self, capacity: int, bytes_per_cycle: float, core_bytes_per_cycle: float, latency: float) -> None:
        """Gives the mesh a DRAM level (mica_rt.h "DRAM level"): its capacity in bytes (the arrays bound at once
        must fit), the chip's DRAM bandwidth its reading cores share, one core's read rate (bytes per cycle)
        and the latency of a read (cycles)."""
        self._check(self._lib.mica_set_dram, self._mesh(), int(capacity), float(bytes_per_cycle),
                    float(core_bytes_per_cycle), float(latency))

    def dram_bind(self, slot: int, array: np.ndarray | None) -> None:
        """Binds ``array`` (C-contiguous; the caller keeps it alive while runs use it) to DRAM slot ``slot``;
        None unbinds the slot. The mesh holds only the pointer: DRAM arrays cost the host what they hold."""
        if array is None:
            self._check(self._lib.mica_dram_bind, self._mesh(), int(slot), ffi.NULL, 0)
            return
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise SimError("a DRAM array must be a C-contiguous numpy array")
        data = ffi.from_buffer(array) if array.nbytes else ffi.NULL
        self._check(self._lib.mica_dram_bind, self._mesh(), int(slot), data, int(array.nbytes))

    # -- execution --------------------------------------------------------------------------------

    def run(
        self,
        code: np.ndarray,
        kernels: KernelLib | None = None,
        scalars: Sequence[float] = (),
        threads: int = 1,
        progress: bool | None = None,
    ) -> None:
        """Runs an op code (see :func:`mica.native_sim.opcode.encode`) on ``threads`` threads.

        ``progress``: draw a progress bar on stderr once the run has taken :data:`PROGRESS_AFTER_S`
        seconds (see :class:`Progress`); None (the default) means: when stderr is a terminal and
        ``$MICA_PROGRESS`` is not ``0``.
        """
        words = np.asarray(code)
        if words.ndim != 1 or not np.issubdtype(words.dtype, np.integer):
            raise SimError(f"op code must be a 1-D integer array, got {words.dtype} of shape {words.shape}")
        words = np.ascontiguousarray(words, dtype=np.int64)
        threads = int(threads)
        if threads < 1:
            raise SimError(f"thread count must be >= 1, got {threads}")
        code_ptr = ffi.from_buffer("int64_t[]", words) if words.size else ffi.NULL
        scalar_buf = ffi.new("double[]", [float(s) for s in scalars]) if len(scalars) else ffi.NULL
        table, count = (kernels.table, kernels.count) if kernels is not None else (ffi.NULL, 0)
        work = getattr(kernels, "work", None)
        self._lib.mica_set_work(self._mesh(), work if work is not None else ffi.NULL, count if work is not None else 0)
        hint = getattr(kernels, "prefetch", None)
        self._lib.mica_set_prefetch(self._mesh(), hint if hint is not None else ffi.NULL)
        bar = Progress(self, enabled=progress)
        try:
            with bar:
                self._check(
                    self._lib.mica_run, self._mesh(), code_ptr, words.size, table, count, scalar_buf, threads
                )
        finally:
            self._lib.mica_set_work(self._mesh(), ffi.NULL, 0)
            self._lib.mica_set_prefetch(self._mesh(), ffi.NULL)

    def progress(self) -> tuple[int, int]:
        """(ops done, ops in all) of the run in flight, or of the last run."""
        done, total = ffi.new("int64_t *"), ffi.new("int64_t *")
        self._lib.mica_progress(self._mesh(), done, total)
        return int(done[0]), int(total[0])

    # -- statistics -------------------------------------------------------------------------------

    def stats(self) -> MeshStats:
        """A snapshot of the statistics (numpy copies of the per-link and per-core arrays)."""
        m = self._mesh()
        totals = ffi.new("mica_totals *")
        self._lib.mica_stats(m, totals)
        h, w = self.height, self.width

        def grab(ptr, dtype, shape):
            n = int(np.prod(shape))
            return np.frombuffer(ffi.buffer(ptr, n * 8), dtype=dtype).reshape(shape).copy()

        timing = ffi.new("mica_timing_totals *")
        self._lib.mica_timing(m, timing)

        def per_core(which):   # MICA_T_CLOCK, _COMPUTE, _COMM, _IDLE
            out = np.empty((h, w), dtype=np.float64)
            self._lib.mica_core_timing(m, which, ffi.from_buffer("double[]", out))
            return out

        return MeshStats(
            messages=totals.messages,
            deliveries=totals.deliveries,
            link_bytes_total=totals.link_bytes,
            link_messages_total=totals.link_messages,
            max_hops=totals.max_hops,
            exchanges=totals.exchanges,
            computes=totals.computes,
            arena_bytes=totals.arena_bytes,
            arena_max=totals.arena_max,
            link_bytes=grab(self._lib.mica_link_bytes(m), np.uint64, (h, w, 4)),
            link_messages=grab(self._lib.mica_link_messages(m), np.uint64, (h, w, 4)),
            core_bytes_sent=grab(self._lib.mica_core_bytes_sent(m), np.uint64, (h, w)),
            core_bytes_recv=grab(self._lib.mica_core_bytes_recv(m), np.uint64, (h, w)),
            core_arena_bytes=grab(self._lib.mica_core_arena_bytes(m), np.int64, (h, w)),
            cycles=float(timing.cycles),
            contended_messages=int(timing.contended_messages),
            core_clock=per_core(0),
            core_compute=per_core(1),
            core_comm=per_core(2),
            core_idle=per_core(3),
            dram_bytes=int(totals.dram_bytes),
            arenas_spilled=bool(self._lib.mica_mesh_spilled(m)),
            **self._wave_stats(grab),
        )

    def _wave_stats(self, grab) -> dict:
        """The wavelet-level mode's fields of :class:`MeshStats` (empty while the mode is off)."""
        m = self._mesh()
        flits = self._lib.mica_wave_link_flits(m)
        if flits == ffi.NULL:
            return {}
        totals = ffi.new("mica_wave_totals *")
        self._lib.mica_wave_stats(m, totals)
        shape = (self.height, self.width, 4)
        return {"wavelet": {name: int(getattr(totals, name)) for name, _ in ffi.typeof("mica_wave_totals").fields},
                "wave_link_flits": grab(flits, np.uint64, shape),
                "wave_link_stalls": grab(self._lib.mica_wave_link_stalls(m), np.uint64, shape)}

    # -- trace ------------------------------------------------------------------------------------

    def trace_start(self, rect: tuple[int, int, int, int] | None = None, max_events: int = 1 << 16) -> None:
        """Records the per-core timelines of the cores of ``rect = (x0, x1, y0, y1)`` (None: every core),
        at most ``max_events`` events per core (``mica_trace_start``); read them with :meth:`trace`."""
        x0, x1, y0, y1 = (0, self.width, 0, self.height) if rect is None else (_clamp_i32(int(v)) for v in rect)
        self._check(self._lib.mica_trace_start, self._mesh(), x0, x1, y0, y1, int(max_events))

    def trace_stop(self) -> None:
        """Stops recording and frees the recorded events."""
        self._lib.mica_trace_stop(self._mesh())

    def trace(self) -> TraceRecord | None:
        """A copy of the recorded per-core events, or None when tracing is off."""
        m = self._mesh()
        rect = ffi.new("int32_t[4]")
        n = int(self._lib.mica_trace_counts(m, rect, ffi.NULL, ffi.NULL))
        if n == 0:
            return None
        counts, dropped = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        self._lib.mica_trace_counts(m, rect, ffi.from_buffer("int64_t[]", counts),
                                    ffi.from_buffer("int64_t[]", dropped))
        events = np.zeros(int(counts.sum()), dtype=EVENT_DTYPE)
        if events.size:
            self._lib.mica_trace_copy(m, ffi.cast("mica_event *", ffi.from_buffer(events)))
        return TraceRecord(tuple(int(v) for v in rect), counts, dropped, events)

    def reset_stats(self) -> None:
        """Zeroes every counter (arena sizes are kept)."""
        self._lib.mica_stats_reset(self._mesh())

    # -- helpers ----------------------------------------------------------------------------------

    def _mesh(self):
        if self._m == ffi.NULL:
            raise SimError("the mesh is closed")
        return self._m

    def _check(self, fn, *args) -> None:
        """Calls a runtime function taking trailing (err, errlen); raises SimError on a nonzero status."""
        err = ffi.new("char[]", _ERR_LEN)
        if fn(*args, err, _ERR_LEN) != 0:
            raise SimError(_message(err))


#: Seconds a run must last before its progress bar appears.
PROGRESS_AFTER_S = 2.0
#: Seconds between redraws of the progress bar.
PROGRESS_EVERY_S = 0.5


class Progress:
    """A progress bar on stderr for one :meth:`NativeMesh.run`, drawn by a watcher thread that polls the
    runtime's op counter (``mica_progress``; the run itself releases the GIL). Nothing is drawn for runs
    shorter than :data:`PROGRESS_AFTER_S`, or when :func:`progress_wanted` says no; the bar's line is
    cleared when the run ends. Use as a context manager around the run."""

    WIDTH = 30

    def __init__(self, mesh: "NativeMesh", enabled: bool | None = None, stream=None):
        self.mesh, self.stream = mesh, (sys.stderr if stream is None else stream)
        self.enabled = progress_wanted(enabled, self.stream)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.drawn = 0                      # lines drawn (for tests)
        self._t0 = 0.0

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._t0 = time.monotonic()
            self._thread = threading.Thread(target=self._watch, name="mica-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self.drawn:
                self._write("\r" + " " * (self.WIDTH + 60) + "\r")

    def line(self, done: int, total: int, elapsed: float) -> str:
        """The text of the bar for ``done`` of ``total`` ops after ``elapsed`` seconds."""
        frac = min(1.0, done / total) if total > 0 else 0.0
        fill = int(round(frac * self.WIDTH))
        eta = f", ~{elapsed * (1 - frac) / frac:.0f} s left" if 0 < frac < 1 else ""
        return (f"\rmica emulator [{'#' * fill}{'.' * (self.WIDTH - fill)}] {frac * 100:5.1f}% "
                f"{done:,}/{total:,} ops, {elapsed:.0f} s{eta}")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):       # a closed or broken stream: no bar, the run goes on
            self._stop.set()

    def _watch(self) -> None:
        if self._stop.wait(PROGRESS_AFTER_S):
            return
        while not self._stop.is_set():
            try:
                done, total = self.mesh.progress()
            except SimError:
                return
            self._write(self.line(done, total, time.monotonic() - self._t0))
            self.drawn += 1
            self._stop.wait(PROGRESS_EVERY_S)


def _message(err) -> str:
    return ffi.string(err).decode("utf-8", errors="replace") or "native emulator fault (no message)"


def _clamp_i32(v: int) -> int:
    return max(-(2**31), min(2**31 - 1, v))


def _check_host_array(array: np.ndarray, box: Box) -> None:
    """A host array must be a C-contiguous numpy array of the box's element size and size."""
    if not isinstance(array, np.ndarray):
        raise SimError(f"host data must be a numpy array, got {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise SimError("host array must be C-contiguous")
    if array.dtype.itemsize != box.elem:
        raise SimError(
            f"host array has {array.dtype.itemsize}-byte elements but the box has {box.elem}-byte elements"
        )
    expected = int(np.prod(box.shape, dtype=np.int64))
    if array.size != expected:
        raise SimError(
            f"host array has {array.size} elements but the box's tensor {box.shape} has {expected}"
        )
