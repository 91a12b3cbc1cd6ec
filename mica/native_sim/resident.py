"""A compiled program kept loaded on an emulated mesh: arrays that stay between runs, many steps, read back.

What a device runtime offers, for the emulator::

    prog = mica.compile_affine(src, mesh=(8, 8), runtime={"pos": (0, 64)}, resident=("W", "K", "V"))
    with prog.load({"W": W, "K": K0, "V": V0}) as dev:        # weights and cache cross the host boundary once
        for pos in range(16):
            res = dev.run({"pos": pos, "x": x})              # only the token's data crosses
            x = res.outputs["y"]
        K = dev.read("K")                                      # the cache, as the steps left it

:meth:`CompiledProgram.load <mica.CompiledProgram.load>` opens a :class:`Resident`: the mesh, its arenas and
the kernel library stay up until :meth:`Resident.close` (or the end of the ``with`` block). The arrays of
``program.on_mesh`` are loaded once, into the one buffer the plan keeps each in
(:func:`mica.meshir.on_mesh.kept_buffers`); every :meth:`Resident.run` loads only the other inputs, runs the
op code on a fresh timeline (clocks and counters restart, so ``res.stats`` are one step's), and reads back only
the other outputs. An on-mesh array written by the program (a cache updated in place) keeps its new value for
the next run. ``res.stats.host_bytes_in`` / ``host_bytes_out`` count what crossed the host boundary in that
step. A failed run (bad input, an emulator fault) raises before or without touching the on-mesh arrays'
buffers, except for a fault in the middle of the op code, after which the mesh state is undefined and
:meth:`Resident.run` refuses until :meth:`Resident.write` reloads the on-mesh arrays.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..emit_c.build import compile_shared
from ..errors import InputError, SimError
from ..meshir.ir import HostLoad
from ..meshir.on_mesh import kept_buffers
from .execute import (NP_DTYPE, TIMINGS, RunResult, RunStats, _prepared, check_array, check_inputs, default_threads,
                      dram_binds, host_loads, host_stores, run_code, user_shape)
from .lower import box, rect
from .runtime import NativeMesh, load_kernels


class Resident:
    """``compiled`` (a :class:`mica.CompiledProgram`) loaded on its mesh, with the arrays of
    ``program.on_mesh`` given in ``arrays`` (every one the program reads must be; one it only writes may be
    left out: it is zeros until a run writes it). See the module text."""

    def __init__(self, compiled, arrays: Mapping, *, threads: int | None = None, timing: str = "event"):
        if timing not in TIMINGS:
            raise InputError(f"timing must be one of {', '.join(map(repr, TIMINGS))}, got {timing!r}")
        if getattr(compiled, "pieces", None) is not None:
            raise InputError(f"{compiled.program.name}: a plan cut into pieces cannot keep arrays loaded yet; "
                             f"compile with side_by_side=False")
        self.program = compiled.program
        self.mesh_program = mp = compiled.mesh_program
        self.target = compiled.target
        self.kept = frozenset(mp.on_mesh)
        if not self.kept:
            raise InputError(f"{self.program.name} keeps no array on the mesh: compile it with resident=(...) "
                             f"naming the arrays to load once (weights, caches)")
        if not isinstance(arrays, Mapping):
            raise InputError(f"load() takes a mapping of names to arrays, got {type(arrays).__name__}")
        extra = sorted(set(arrays) - self.kept)
        if extra:
            raise InputError(f"load() takes the arrays that stay on the mesh ({', '.join(sorted(self.kept))}); "
                             f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} given to each run() instead")
        missing = sorted(a for a in self.kept if a in self.program.inputs and a not in arrays)
        if missing:
            raise InputError(f"load() needs {', '.join(missing)}: the program reads "
                             f"{'it' if len(missing) == 1 else 'them'}")
        values = {a: check_array(self.program, a, v) for a, v in arrays.items()}
        if threads is None:
            threads = default_threads()
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InputError(f"threads must be a positive integer, got {threads!r}")
        self.threads = threads
        km = compiled.kernel_module
        self._low, source = _prepared(mp, km, self.target)
        self._names = tuple(km.names)
        self._buffers = kept_buffers(mp)
        self._lib = load_kernels(compile_shared(source, name=f"kernels_{mp.name}", native=True))
        w, h = mp.mesh
        self._mesh = NativeMesh(w, h, self.target.colours, self.target.sram_bytes)
        try:
            self._mesh.set_timing(self.target.hop_latency, self.target.link_bytes_per_cycle)
            if timing == "wavelet":
                self._mesh.set_wavelet(True, getattr(self.target, "ramp_latency", 0),
                                       getattr(self.target, "queue_depth", 8))
            self._mesh.set_host_threads(threads)
            r = mp.region
            self._mesh.reserve((r.x0, r.x1, r.y0, r.y1), mp.arena_bytes)
            self._mesh.commit()
            self._broken = False
            self.loaded_bytes = 0
            for a, v in values.items():
                self.write(a, v)
        except BaseException:
            self.close()
            raise

    # -- runs ---------------------------------------------------------------------------------------
    def run(self, inputs: Mapping, *, progress: bool | None = None) -> RunResult:
        """One run: loads the inputs that do not stay on the mesh (and the runtime parameters' values),
        runs the program on a fresh timeline, reads back the outputs that do not stay on the mesh. Raises
        :class:`InputError` for bad inputs (before anything changes on the mesh)."""
        self._open()
        if self._broken:
            raise SimError(f"{self.program.name}: an earlier run failed in the middle; the arrays kept on the mesh "
                           f"are undefined until write() loads them again")
        arrays, scalars = check_inputs(self.program, inputs, self.kept)
        mesh, low, mp = self._mesh, self._low, self.mesh_program
        mesh.reset_stats()
        sent = host_loads(mesh, mp, [ld for ld in low.loads if ld.array not in self.kept], arrays)
        sent += dram_binds(mesh, mp, self.target, arrays)      # arrays streamed from device DRAM, if any
        try:
            run_code(mesh, low, self._lib, scalars, self.threads, progress)
        except SimError:
            self._broken = True
            raise
        outputs = host_stores(mesh, mp, self.program, [st for st in low.stores if st.array not in self.kept])
        recv = sum(v.nbytes for v in outputs.values())
        stats = RunStats(mesh.stats(), mp.mesh, self.threads, self.target, sent, recv)
        return RunResult(outputs, stats, mp, low.ops, self._names, None)

    # -- the arrays that stay ---------------------------------------------------------------------------
    def read(self, name: str) -> np.ndarray:
        """The current value of on-mesh array ``name`` (read back from its buffer)."""
        self._open()
        self._kept_name(name)
        arr = self.program.array(name)
        t = self.mesh_program.tensor(self._buffers[name])
        region = self._region_of(name)
        out = self._mesh.host_store(box(t, {}), rect(region.rect, {}), arr.shape, NP_DTYPE[arr.dtype])
        return out.reshape(user_shape(self.program, name))

    def write(self, name: str, value: np.ndarray) -> None:
        """Loads ``value`` as on-mesh array ``name`` (every buffer the plan loads it into: its home, and a
        mirror when it has one). The mesh's other state is unchanged."""
        self._open()
        self._kept_name(name)
        value = check_array(self.program, name, value)
        low = self._low
        loads = [ld for ld in low.loads if ld.array == name]
        if not loads:                   # written by the program only: load into the buffer it is kept in
            loads = [HostLoad(self._buffers[name], name, self._region_of(name))]
        self.loaded_bytes += host_loads(self._mesh, self.mesh_program, loads, {name: value})
        if all(self._loaded(a) for a in self.kept if a in self.program.inputs):
            self._broken = False
        self._written = getattr(self, "_written", set()) | {name}

    # -- lifetime -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the mesh and unloads the kernel library (idempotent); the object is unusable afterwards."""
        mesh, lib = getattr(self, "_mesh", None), getattr(self, "_lib", None)
        self._mesh = self._lib = None
        if mesh is not None:
            mesh.close()
        if lib is not None:
            lib.close()

    def __enter__(self) -> "Resident":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:           # interpreter shutdown
            pass

    # -- helpers --------------------------------------------------------------------------------------
    def _open(self) -> None:
        if getattr(self, "_mesh", None) is None:
            raise SimError(f"{self.program.name}: the loaded program was closed")

    def _kept_name(self, name: str) -> None:
        if name not in self.kept:
            raise InputError(f"{name!r} does not stay on the mesh; the arrays that do: {', '.join(sorted(self.kept))}")

    def _loaded(self, name: str) -> bool:
        return name in getattr(self, "_written", set())

    def _region_of(self, name: str):
        buf = self._buffers[name]
        for op in (*self._low.stores, *self._low.loads):
            if op.buffer == buf:
                return op.region
        raise SimError(f"{self.program.name}: no host copy of {name} (internal error)")
