"""Machine descriptions: a target is data.

Figures come from the vendors' documentation and public example code (Cerebras SDK and its CSL examples,
tt-metal's documentation and performance reports) as collected in the team's hardware notes, which are not
part of this repository; figures no source states are estimates (EST) and each target's ``notes`` says
which. Everything is in the cycle domain; ``clock_ghz`` converts to time.

Public API: :class:`Target`, :func:`get_target`, :data:`TARGETS`, :data:`WAVELET_CONSTANTS_SOURCES`. The source
of every constant of the real targets, with the hardware notes' source keys, is in the comments above
:data:`TARGETS`.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Mapping

import ml_dtypes
import numpy as np

from .errors import TargetError

#: Floating-point array dtypes. ``f16`` is IEEE binary16 and ``bf16`` bfloat16 (8 exponent bits, 7 mantissa
#: bits: the upper half of an f32). Both are storage formats: a statement reads its 16-bit operands as f32,
#: computes in f32 and rounds the result to the array's type (to nearest, ties to even) when it stores it --
#: the target behaviour of Cerebras' f16 DSD operations and of Tenstorrent's bf16 tiles accumulating in an
#: fp32 Dst. See :mod:`mica.codeprint.half` for the exact semantics.
DTYPES = ("f16", "bf16", "f32", "f64")
#: The 16-bit floating-point dtypes (f32 arithmetic, rounded on store).
HALF_DTYPES = ("f16", "bf16")
#: Integer array dtypes (C ``int``/``int32_t``, ``short``/``int16_t``, ``signed char``/``int8_t``,
#: ``unsigned char``/``uint8_t``). Arithmetic on them follows C: operands promote to 32-bit ``int``.
INT_DTYPES = ("i32", "i16", "i8", "u8")
DTYPE_BYTES = MappingProxyType({"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1})

#: numpy's dtype of each MICA dtype (host arrays given to and returned by ``run``): bf16 is
#: ``ml_dtypes.bfloat16``, a numpy extension type (numpy has no bfloat16 of its own).
NP_DTYPES = MappingProxyType({"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
                              "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8})

#: The float rate integer operations are costed at (EST: no cited figure for integer ALU throughput on any
#: target; C promotes every integer operand to 32 bits, so integer ops are taken at the f32 rate).
INT_RATE_AS = "f32"

#: The rate bf16 is costed at where a target gives none: its f16 rate (the hardware notes give one
#: "fp16/bf16" FLOP/cycle figure per core for every target: 4-wide FP16 FMAC SIMD on WSE, the matrix FPU's
#: rate on Tenstorrent, which takes bf16 natively).
BF16_RATE_AS = "f16"


#: Other spellings of the dtypes: numpy's names (so ``np.float32`` and ``np.dtype("float32")`` work too) and C's.
DTYPE_ALIASES = MappingProxyType({
    "float16": "f16", "half": "f16", "bfloat16": "bf16", "_float16": "f16", "__bf16": "bf16", "float32": "f32", "float": "f32", "single": "f32", "float64": "f64",
    "double": "f64", "int32": "i32", "int": "i32", "int16": "i16", "short": "i16", "int8": "i8", "uint8": "u8"})


def dtype_name(dtype) -> str:
    """MICA's name (``'f32'`` ...) of ``dtype``: one of :data:`DTYPE_BYTES`' names, an alias of
    :data:`DTYPE_ALIASES` (``'float32'``, ``'double'``), or a numpy dtype or scalar type (``np.float32``,
    ``np.dtype('int8')``, ``ml_dtypes.bfloat16``). Raises :class:`ValueError` listing the names MICA accepts."""
    key = dtype
    if not isinstance(dtype, str):
        name = getattr(dtype, "name", None) if type(dtype).__module__.startswith("numpy") else None
        if name is None and isinstance(dtype, type) and dtype.__module__ in ("numpy", "ml_dtypes"):
            name = dtype.__name__
        key = name if isinstance(name, str) else None
    if isinstance(key, str):
        k = key.strip().lower()
        if k in DTYPE_BYTES:
            return k
        if k in DTYPE_ALIASES:
            return DTYPE_ALIASES[k]
    raise ValueError(f"unsupported dtype {dtype!r}; MICA's dtypes are {', '.join(DTYPE_BYTES)} (numpy's "
                     f"names such as 'float32' and np.float32 are accepted too)")


def is_int_dtype(dtype: str) -> bool:
    """Whether ``dtype`` is an integer dtype (C integer arithmetic, exact)."""
    return dtype in INT_DTYPES


@dataclass(frozen=True)
class Target:
    """One machine: a rectangle of cores with per-core SRAM, links between neighbours and a router budget.

    ``grid`` is the usable program rectangle (width, height); ``sram_bytes`` the per-core memory a program
    may use; ``flops_per_cycle`` maps a dtype to FLOP per core per cycle (f64 is emulated at half the f32
    rate where the machine has no f64 unit); ``link_bytes_per_cycle`` is per link and direction;
    ``hop_latency`` cycles per router hop; ``relay_cycles`` the cost of a software forward through a core;
    ``colours`` the routes (colours / virtual channels) one router can hold for user programs.

    The emulator's wavelet-level fabric mode (``run(..., timing="wavelet")``, mica_rt.h) also reads
    ``ramp_latency``, the whole cycles a flit takes over the ramp between a core and its router (each way),
    and ``queue_depth``, the flits one router input queue (per input port and colour) and one core receive
    queue hold; the router latency is ``hop_latency`` and a flit is ``link_bytes_per_cycle`` bytes (one link
    carries one per cycle per direction, and so does a ramp).

    The **DRAM level** (Tenstorrent: device GDDR6 behind the grid; none on WSE, ``dram_bytes == 0``):
    ``dram_bytes`` the device memory arrays may live in, ``dram_bytes_per_cycle`` the bandwidth every core of
    the chip shares (in the cycles of ``clock_ghz``), ``dram_core_bytes_per_cycle`` what one core's reader
    achieves on its own, and ``dram_latency`` the cycles before the first byte of a read arrives. See
    :attr:`has_dram` and :meth:`dram_read_cycles`.

    The **compute model** beyond the FLOP rate (how :mod:`mica.tiling.cost` and the emulator charge it):
    ``call_cycles`` per kernel call that runs an instance (a task activation), ``vector_op_cycles`` per vector
    operation (one run of a statement's innermost loop: a DSD operation's setup), ``vector_width`` the elements
    one vector instruction issues per dtype (:meth:`lanes`; a run's remainder pays a whole issue), and
    ``sram_read_bytes_per_cycle`` / ``sram_write_bytes_per_cycle`` the core's SRAM ports (0: not limiting). All
    default to none, i.e. arithmetic at the peak rate (:attr:`has_compute_overheads`).
    """

    name: str
    grid: tuple[int, int]
    sram_bytes: int
    clock_ghz: float
    flops_per_cycle: Mapping[str, float]
    link_bytes_per_cycle: float
    hop_latency: float
    relay_cycles: float
    colours: int
    notes: str = ""
    extra: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    ramp_latency: int = 0
    queue_depth: int = 8
    dram_bytes: int = 0
    dram_bytes_per_cycle: float = 0.0
    dram_core_bytes_per_cycle: float = 0.0
    dram_latency: float = 0.0
    call_cycles: float = 0.0
    vector_op_cycles: float = 0.0
    vector_width: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    sram_read_bytes_per_cycle: float = 0.0
    sram_write_bytes_per_cycle: float = 0.0

    def __post_init__(self):
        w, h = self.grid
        if w <= 0 or h <= 0 or self.sram_bytes <= 0 or self.colours <= 0:
            raise TargetError(f"target {self.name!r}: grid, SRAM and colours must be positive")
        if isinstance(self.ramp_latency, bool) or not isinstance(self.ramp_latency, int) or self.ramp_latency < 0:
            raise TargetError(f"target {self.name!r}: ramp latency must be a whole number of cycles >= 0, "
                              f"got {self.ramp_latency!r}")
        if isinstance(self.queue_depth, bool) or not isinstance(self.queue_depth, int) or not 1 <= self.queue_depth <= 4096:
            raise TargetError(f"target {self.name!r}: queue depth must be 1..4096 flits, got {self.queue_depth!r}")
        if self.dram_bytes < 0 or (self.dram_bytes > 0 and not (
                self.dram_bytes_per_cycle > 0 and self.dram_core_bytes_per_cycle > 0 and self.dram_latency >= 0)):
            raise TargetError(f"target {self.name!r}: a DRAM level needs a positive size, positive chip and per-core "
                              f"bandwidths and a latency >= 0")
        if min(self.call_cycles, self.vector_op_cycles, self.sram_read_bytes_per_cycle,
               self.sram_write_bytes_per_cycle) < 0 or any(
                isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in self.vector_width.values()):
            raise TargetError(f"target {self.name!r}: compute overheads and SRAM bandwidths must be >= 0 "
                              f"(0: none) and vector widths whole numbers >= 1")
        missing = [d for d in DTYPES if d not in self.flops_per_cycle and d != "bf16"]
        if missing:
            raise TargetError(f"target {self.name!r}: no flops/cycle for {', '.join(missing)}")

    # Pickling (``mica.load``/``CompiledProgram.save``): the read-only mappings are stored as plain dicts and
    # made read-only again when loaded (a mappingproxy does not pickle); the figures are checked again.
    def __getstate__(self) -> dict:
        return {f: (dict(v) if isinstance(v, MappingProxyType) else v) for f, v in self.__dict__.items()}

    def __setstate__(self, state: dict) -> None:
        for f in fields(self):          # a target pickled before a field existed gets the field's default
            if f.name not in state and f.default is not MISSING:
                object.__setattr__(self, f.name, f.default)
            elif f.name not in state and f.default_factory is not MISSING:
                object.__setattr__(self, f.name, f.default_factory())
        for f, v in state.items():
            object.__setattr__(self, f, MappingProxyType(dict(v)) if f in _READ_ONLY_FIELDS else v)
        self.__post_init__()

    def flops(self, dtype: str) -> float:
        """FLOP per core per cycle for ``dtype`` (integer operations per cycle for an integer dtype: the
        :data:`INT_RATE_AS` rate unless the target gives one, an estimate; bf16 at the
        :data:`BF16_RATE_AS` rate unless the target gives one)."""
        if dtype in INT_DTYPES and dtype not in self.flops_per_cycle:
            dtype = INT_RATE_AS
        if dtype == "bf16" and dtype not in self.flops_per_cycle:
            dtype = BF16_RATE_AS
        try:
            return self.flops_per_cycle[dtype]
        except KeyError:
            raise TargetError(f"target {self.name!r} has no figure for dtype {dtype!r}") from None

    def lanes(self, dtype: str) -> int:
        """Elements one vector instruction processes per issue for ``dtype`` (:attr:`vector_width`; 1 where the
        target gives none). Integer dtypes use the :data:`INT_RATE_AS` width, bf16 the :data:`BF16_RATE_AS` one
        unless the target gives their own, as :meth:`flops` does."""
        if dtype in INT_DTYPES and dtype not in self.vector_width:
            dtype = INT_RATE_AS
        if dtype == "bf16" and dtype not in self.vector_width:
            dtype = BF16_RATE_AS
        return int(self.vector_width.get(dtype, 1))

    @property
    def has_compute_overheads(self) -> bool:
        """Whether the compute model charges more than arithmetic at the peak rate: kernel-call or vector-op
        overheads, vectors wider than one element (whose remainders pay a whole instruction) or an SRAM
        bandwidth limit (see :mod:`mica.tiling.cost`)."""
        return bool(self.call_cycles or self.vector_op_cycles or self.sram_read_bytes_per_cycle
                    or self.sram_write_bytes_per_cycle or any(w > 1 for w in self.vector_width.values()))

    def without_compute_overheads(self) -> "Target":
        """This target with arithmetic at the peak rate only (no call or vector-op overhead, one-element vectors,
        no SRAM limit): what :class:`mica.tiling.cost.Cost` reports as the arithmetic part of compute."""
        return replace(self, call_cycles=0.0, vector_op_cycles=0.0, vector_width=MappingProxyType({}),
                       sram_read_bytes_per_cycle=0.0, sram_write_bytes_per_cycle=0.0)

    @property
    def has_dram(self) -> bool:
        """Whether arrays may live in device DRAM and stream into the cores (Tenstorrent); WSE has no such level."""
        return self.dram_bytes > 0

    def dram_read_cycles(self, core_bytes: float, cores: int) -> float:
        """Cycles for each of ``cores`` cores to read ``core_bytes`` from DRAM at once: the latency, then the
        bytes at the smaller of one core's rate and its share of the chip's bandwidth."""
        if not self.has_dram:
            raise TargetError(f"target {self.name!r} has no DRAM level")
        if core_bytes <= 0:
            return 0.0
        rate = min(self.dram_core_bytes_per_cycle, self.dram_bytes_per_cycle / max(cores, 1))
        return self.dram_latency + core_bytes / rate

    def cycles_to_seconds(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1e9)


#: The fields of :class:`Target` that hold read-only mappings.
_READ_ONLY_FIELDS = ("flops_per_cycle", "extra", "vector_width")


def _fl(f16: float, f32: float, f64: float) -> Mapping[str, float]:
    return MappingProxyType({"f16": f16, "f32": f32, "f64": f64})


#: Wavelet-level fabric constants (see :class:`Target`), with their sources (the hardware notes' keys):
#:
#: * Router latency = ``hop_latency``. WSE: ~1 cycle per hop ("sent to or received by neighbouring PEs in a
#:   single clock cycle", Cerebras SDK "A Conceptual View"; the CSL examples' and WaferLLM's timing scripts
#:   subtract px + py cycles of propagation). Tenstorrent Wormhole: 9 cycles router to router
#:   (tt-isa-documentation WormholeB0/NoC/README.md); Blackhole assumed equal (EST).
#: * Ramp latency. WSE: 0 extra cycles (EST, a derivation: the single-cycle neighbour transfer above already
#:   covers leaving and entering the cores, so the whole hop is ``hop_latency``). Wormhole: ~5 cycles between
#:   the NIU and the router at each end (tt-isa-documentation NoC/README.md); Blackhole assumed equal (EST).
#: * Ramp bandwidth: one flit per cycle each way, like a link (EST: the SDK describes the ramp as the router's
#:   fifth link; no separate figure is published).
#: * Queue depth (flits per router input queue per colour / virtual channel, and per core receive queue):
#:   not published for any target (EST). WSE 8 wavelets; Tenstorrent 16 flits, enough to keep a 9-cycle hop
#:   streaming one flit per cycle (a queue of at least hop latency + 1 flits covers its credit loop).
WAVELET_CONSTANTS_SOURCES = MappingProxyType({
    "router_latency": "hop_latency: WSE SDK 'A Conceptual View' (1 cycle); Wormhole tt-isa NoC/README.md (9); "
                      "Blackhole EST",
    "ramp_latency": "WSE EST 0 (covered by the 1-cycle neighbour transfer); Wormhole tt-isa NoC/README.md (~5); "
                    "Blackhole EST",
    "ramp_bandwidth": "EST: one flit per cycle each way, as a link",
    "queue_depth": "EST for every target: no published router buffer depth",
})

# Sources of every constant of the real targets below, field by field, with the hardware notes' source keys
# (reference/hardware.md section 0: WLLM-PAPER = WaferLLM, OSDI'25; WLLM-REPO = github MeshInfra/WaferLLM;
# CSLEX = github Cerebras/csl-examples; SDK-* = the Cerebras SDK documentation pages; HC34 = Hot Chips 34;
# WSE-PR = vendor specs as reported in the press; TT-ISA = github tenstorrent/tt-isa-documentation; TT-GEMM,
# TT-BH, TT-DRAM, TT-PCIE = tt-metal tech_reports; TT-SPEC = docs.tenstorrent.com specifications). EST marks
# an estimate or a derivation no source prints. bench/test_calibration.py prints the modelled figures
# these constants give next to published measurements.
#
# wse2:
#   * grid: 750x994: largest program rectangle, fabric 757x996 minus the memcpy columns/rows [CSLEX
#     benchmarks/single-tile-matvec README and run.py; WLLM-REPO MeshGEMV/WSE-2/compile.py]
#   * sram_bytes: 48 KB per PE, 8 banks x 6 KB [SDK-APPX; CSLEX comments]
#   * clock_ghz: 1.1 GHz max CE clock [WLLM-PAPER section 7; HC34]; the CSLEX timing scripts assume 0.85
#   * flops_per_cycle: EST: f16 8 (4-wide FP16 FMAC SIMD, SDK-APPX widths up to 4), f32 2 (one FP32 FMAC per cycle,
#     WLLM-PAPER), f64 1 (EST: no f64 unit, emulated at half the f32 rate)
#   * link_bytes_per_cycle: 4: one 32-bit wavelet per link per cycle and direction [SDK-CONCEPT; WLLM-PAPER section 7]
#   * hop_latency: 1 cycle per hop [SDK-CONCEPT; CSLEX bandwidth-test/run.py and WLLM-REPO subtract px+py cycles]
#   * relay_cycles: EST 20: a task wake-up plus a DSD op, 'a few to tens of cycles' (hardware.md 1c, EST)
#   * colours: 21: 24 routable colours [SDK-TASKIDS] minus those memcpy reserves [CSLEX gemm-collectives_2d
#     layout.csl; 25-pt-stencil README] (~21 is itself a derivation)
#   * ramp_latency: EST 0: covered by the single-cycle neighbour transfer [SDK-CONCEPT]
#   * queue_depth: EST 8 wavelets: no published router buffer depth
# wse3:
#   * grid: EST 755x1170: WLLM-REPO's 762x1172 fabric (MeshGEMM/WSE-3/compile.py) minus the same memcpy margin as
#     WSE-2; not stated by Cerebras
#   * sram_bytes: 48 KB per PE [CSLEX benchmark-libs/stencil_3d_7pts/wse3/pe.csl]
#   * clock_ghz: 1.1 GHz as WLLM-REPO's launch_wse3.py converts cycles; no official figure found
#   * flops_per_cycle: EST: f16 16 (assumes WSE-3 doubled the SIMD; the vendor's 125 PF [WSE-PR] cannot be dense), f32
#     2 (EST, hardware.md gives 2-4), f64 1 (EST)
#   * link_bytes_per_cycle: 4: the same 32-bit wavelet per link and cycle [SDK-CONCEPT]
#   * hop_latency: EST 1: assumed equal to WSE-2
#   * relay_cycles: EST 20, as WSE-2
#   * colours: 21: 24 colours 'on WSE-2 and WSE-3' [SDK-TASKIDS] minus memcpy's (derivation as WSE-2)
#   * ramp_latency: EST 0, as WSE-2
#   * queue_depth: EST 8: WSE-3 has 8 input + 8 output queues [SDK-TASKIDS, SDK-WSE3] but no published depth
# wormhole:
#   * grid: 8x8 Tensix compute grid (one row harvested, one for dispatch) [TT-BH, TT-GEMM]
#   * sram_bytes: 1,499,136 B = 1464 KiB L1, 16 banks x 91.5 KiB [TT-ISA TensixTile/L1.md]; firmware and CB
#     reservations not subtracted (EST)
#   * clock_ghz: 1.0 GHz AI clock [TT-SPEC, TT-GEMM]
#   * flops_per_cycle: f16/bf16 1024 = the matrix FPU at HiFi4 (4096 at LoFi) [TT-GEMM, TT-ISA MatrixUnit]; f32 64 on
#     the 32-lane SFPU [TT-ISA VectorUnit]; f64 32 (EST: no f64 unit)
#   * link_bytes_per_cycle: 32: one 256-bit flit per cycle per NoC link [TT-ISA NoC/README.md]
#   * hop_latency: 9 cycles router to router [TT-ISA NoC/README.md]
#   * relay_cycles: EST 300: kernel loop plus NoC issue, '~100s of cycles' (hardware.md 1c, EST)
#   * colours: 12: request VCs of the 16 per NoC channel (12 request + 4 response) [TT-ISA DRAMTile, NoC/README.md]
#   * ramp_latency: 5: ~5 cycles NIU <-> router at each end [TT-ISA NoC/README.md]
#   * queue_depth: EST 16 flits: enough for a 9-cycle hop's credit loop; not published
#   * dram_bytes: 12 GiB: 12 channels x 1 GiB of GDDR6 on n150 [TT-ISA WormholeB0/DRAMTile/README.md: "12x 1 GiB
#     channels of GDDR6"; TT-SPEC: 12 GB] (the n300's 24 GB is two chips' 12 each)
#   * dram_bytes_per_cycle: 288: 288 GB/s at 12 GT/s [TT-SPEC; TT-DRAM Saturating_DRAM_bandwidth.md table "DRAM spec
#     speed 288"] at the 1 GHz clock; the DRAM microbenchmark reaches 267 GB/s (92%) [TT-DRAM], which the model
#     does not assume (EST: peak, as for the other rates)
#   * dram_core_bytes_per_cycle: 22: one core's ideal DRAM read [tt-metal tests/tt_metal/tt_metal/data_movement/
#     documentation/ideal_performance.md @ 6d7ceb6a: "DRAM Read 22" B/cycle on Wormhole B0]
#   * dram_latency: EST 600 cycles: no published DRAM read latency was found; a round trip over the NoC (at most
#     ~20 hops x 9 cycles each way, TT-ISA NoC) plus the GDDR6 access (EST ~200 ns)
# blackhole:
#   * grid: 11x10 compute grid since firmware 19.5.0 [TT-BH]; TT-GEMM also quotes 13x10
#   * sram_bytes: 1,499,136 B = 1464 KB L1 [TT-BH]
#   * clock_ghz: 1.35 GHz [TT-SPEC, TT-GEMM]
#   * flops_per_cycle: f16/bf16 1024 = the matrix FPU at HiFi4 [TT-GEMM]; f32 64 (EST: 32-lane SFPU not re-verified
#     for BH); f64 32 (EST)
#   * link_bytes_per_cycle: 64: 512-bit NoC word [TT-DRAM Blackhole; TT-PCIE flit 64 B]
#   * hop_latency: EST 9: assumed equal to Wormhole (not documented for BH)
#   * relay_cycles: EST 300, as Wormhole
#   * colours: EST 12: Wormhole's request VCs, assumed equal
#   * ramp_latency: EST 5: Wormhole's NIU latency, assumed equal
#   * queue_depth: EST 16 flits, as Wormhole
#   * dram_bytes: 32 GB GDDR6 on p150a (p100a 28 GB) [TT-SPEC blackhole/specifications]
#   * dram_bytes_per_cycle: 512 GB/s at 16 GT/s [TT-SPEC] / 1.35 GHz = 379.3 B/cycle; the Blackhole DRAM report
#     reaches 500 of 512 GB/s (98%) [TT-DRAM Saturating_DRAM_bandwidth_Blackhole.md], not assumed
#   * dram_core_bytes_per_cycle: 33: one core's ideal DRAM read [ideal_performance.md @ 6d7ceb6a, as Wormhole's]
#   * dram_latency: EST 800 cycles: Wormhole's estimate scaled by the faster clock (no published figure)
#: Compute-model constants per machine family (the fields of :class:`Target` after ``dram_latency``); their sources
#: are in the "Compute model" comment block below.
_WSE2_COMPUTE = dict(call_cycles=10.0, vector_op_cycles=4.0,
                     vector_width=MappingProxyType({"f16": 4, "f32": 1, "f64": 1}),
                     sram_read_bytes_per_cycle=16.0, sram_write_bytes_per_cycle=8.0)
_WSE3_COMPUTE = dict(call_cycles=10.0, vector_op_cycles=4.0,
                     vector_width=MappingProxyType({"f16": 8, "f32": 1, "f64": 1}),
                     sram_read_bytes_per_cycle=32.0, sram_write_bytes_per_cycle=16.0)
_TT_COMPUTE: dict = {}          # none yet: see "Tenstorrent" in the compute-model block below

#
# Compute model (issue 19 item 1; how mica.tiling.cost and the emulator's work functions charge it: the "Compute"
# paragraph of mica/tiling/cost.py). No vendor publishes per-instruction overheads for either machine, so every
# overhead below is an estimate (EST); the widths and bandwidths are cited.
#   WSE-2 / WSE-3:
#   * vector_width (elements per vector instruction; a run of n elements issues ceil(n / width) times, so a
#       remainder pays a whole issue): WSE-2 f16 4 (4-wide FP16 FMAC SIMD; SDK-APPX gives SIMD widths up to 4),
#       f32 and f64 1 (one FP32 FMAC per cycle, WLLM-PAPER) -- the flops_per_cycle above are these widths x 2 FLOP
#       per FMAC. WSE-3: f16 8 (EST, the doubled SIMD its f16 rate assumes), f32/f64 1 (EST).
#   * sram_read_bytes_per_cycle / sram_write_bytes_per_cycle (0: not limiting): WSE-2 16 B read (2 x 64-bit) and
#       8 B write (1 x 64-bit) per cycle [HC34: two 64-bit reads and one 64-bit write per cycle], which is exactly
#       what a 4-wide f16 FMAC (two operand vectors in, one out) or an f32 FMAC consumes: the limit binds only
#       for statements that stream more operands per element (three-input updates, ...). SDK-APPX exposes
#       2 x 32-bit reads + 1 x 32-bit write to DSD ops, which would halve the f16 rate; the model follows HC34 and
#       the 4-wide f16 estimate (hardware.md 1a records the conflict). WSE-3: 32 / 16 B (EST: scaled with its
#       assumed doubled f16 SIMD; not published).
#   * vector_op_cycles (per run of a statement's innermost loop: a DSD operation's setup, the loop's start):
#       EST 4 cycles: "startup overhead per DSD op is not documented (EST ~ a few cycles)" (hardware.md 1b).
#       Fitting it to the SGEMM 33000^3 figure (Miyajima et al. 2026, 349 TFLOP/s on 750x750; MICA's plan runs
#       44-element f32 vectors there) would take ~110 cycles per operation; checked against WaferLLM's MeshGEMV
#       (~1.2 us for [1,16K]x[16K,16K] f16), that value makes the modelled GEMV ~5x too slow, so it was not
#       adopted (bench/test_calibration.py reports both rows).
#   * call_cycles (per kernel call that runs an instance: a task activation): EST 10 cycles, half the relay
#       estimate above ("a task wake-up plus a DSD op; a few to tens of cycles", hardware.md 1c).
#   Tenstorrent (Wormhole, Blackhole): none yet. The matrix engine works on 32x32 tiles (tensors padded to tile
#   multiples in their last two dimensions [TT-API "Tiles" page]) at the fidelity's cycles per 32x32x32 tile
#   [TT-GEMM utilisation formula], which the FLOP rate already prices for full tiles; a faithful overhead model
#   needs the padding of both tile dimensions and a per-tile (not per-loop-run) operation count, and no
#   per-call figure (circular-buffer and Dst handshakes) is published. A one-dimensional stand-in (32-wide runs,
#   an EST 100-cycle call) was tried and made every toy multi-core Wormhole test collapse onto one core on
#   grounds no source supports, so it is not used.
#   The generic target has none either (round figures: arithmetic at its peak rate only).
TARGETS: Mapping[str, Target] = MappingProxyType({
    # Cerebras WSE-2: 750x994 program rectangle [CSLEX single-tile-matvec; fabric 757x996 WLLM-REPO] minus
    # memcpy columns/rows; 48 KB per PE [SDK-APPX]; 1.1 GHz [WLLM-PAPER, HC34] (CSLEX scripts assume 850 MHz);
    # FLOP/cycle f16 8, f32 2, f64 1 (all EST); one 32-bit wavelet per link per cycle [SDK-CONCEPT]; ~1
    # cycle/hop [SDK-CONCEPT]; relay 20 cycles (EST); 24 colours [SDK-TASKIDS] of which ~21 remain with memcpy
    # [CSLEX]. Wavelet level: ramp 0 (EST), queues of 8 wavelets (EST). Per field: the comment block above.
    "wse2": Target("wse2", (750, 994), 49152, 1.1, _fl(8, 2, 1), 4.0, 1.0, 20.0, 21,
                   notes="fp16 8 and fp32 2 FLOP/cycle are estimates: Cerebras publishes no per-PE SIMD rate "
                         "table; wavelet-level ramp latency and queue depth are estimates; so are the call and "
                         "vector-op overheads",
                   ramp_latency=0, queue_depth=8, **_WSE2_COMPUTE),
    # WSE-3: 755x1170 is derived (762x1172 fabric [WLLM-REPO] minus the same memcpy margin, EST); 48 KB
    # [CSLEX]; 1.1 GHz [WLLM-REPO launch_wse3.py]; fp16 16 FLOP/cycle EST, f32 2 EST; link, hop, relay,
    # colours as WSE-2 ([SDK-CONCEPT], [SDK-TASKIDS]; hop EST). Per field: the comment block above.
    "wse3": Target("wse3", (755, 1170), 49152, 1.1, _fl(16, 2, 1), 4.0, 1.0, 20.0, 21,
                   notes="grid and fp16 rate are estimates (EST), not published figures; so are the wavelet-level "
                         "ramp latency and queue depth, the call and vector-op overheads and the SRAM ports",
                   ramp_latency=0, queue_depth=8, **_WSE3_COMPUTE),
    # Tenstorrent Wormhole n150: 8x8 Tensix compute grid [TT-BH, TT-GEMM], 1464 KiB L1 [TT-ISA L1.md],
    # 1 GHz [TT-SPEC], fp16 1024 FLOP/cycle = HiFi4 [TT-GEMM], 32 B/cycle per NoC link [TT-ISA NoC],
    # 9 cycles per router hop [TT-ISA NoC], relay 300 cycles (EST), 16 VCs of which 12 carry requests
    # [TT-ISA]; fp32 on the 32-lane SFPU (64 FLOP/cycle) [TT-ISA VectorUnit]. Wavelet level: ~5 cycles
    # NIU <-> router at each end [TT-ISA], queues of 16 flits (EST). DRAM: 12 GiB GDDR6 at 288 GB/s [TT-SPEC,
    # TT-ISA DRAMTile], 22 B/cycle for one core's reader [tt-metal ideal_performance.md], latency EST. Per
    # field: the comment block above.
    "wormhole": Target("wormhole", (8, 8), 1499136, 1.0, _fl(1024, 64, 32), 32.0, 9.0, 300.0, 12,
                       notes="fp16 rate at HiFi4; relay cost, wavelet-level queue depth and DRAM latency are "
                             "estimates",
                       ramp_latency=5, queue_depth=16, dram_bytes=12 * 2 ** 30, dram_bytes_per_cycle=288.0,
                       dram_core_bytes_per_cycle=22.0, dram_latency=600.0, **_TT_COMPUTE),
    # Blackhole p150a: 11x10 compute grid (current firmware) [TT-BH], 1464 KB L1 [TT-BH], 1.35 GHz [TT-SPEC],
    # fp16 1024 = HiFi4 [TT-GEMM], 64 B/cycle NoC [TT-DRAM BH]; hop 9, ramp 5, SFPU 64, VCs 12, relay and
    # queue depth assumed equal to Wormhole (EST). DRAM: 32 GB GDDR6 at 512 GB/s [TT-SPEC], 33 B/cycle for one
    # core [tt-metal ideal_performance.md], latency EST. Per field: the comment block above.
    "blackhole": Target("blackhole", (11, 10), 1499136, 1.35, _fl(1024, 64, 32), 64.0, 9.0, 300.0, 12,
                        notes="hop latency, ramp latency and SFPU width assumed equal to Wormhole (EST); queue "
                              "depth and DRAM latency estimates",
                        ramp_latency=5, queue_depth=16, dram_bytes=32 * 10 ** 9, dram_bytes_per_cycle=512.0 / 1.35,
                        dram_core_bytes_per_cycle=33.0, dram_latency=800.0, **_TT_COMPUTE),
    # A generic large mesh for tests: 1024x1024 cores, 64 KiB each, round figures.
    "generic": Target("generic", (1024, 1024), 65536, 1.0, _fl(8, 4, 2), 8.0, 1.0, 10.0, 24,
                      notes="round figures for tests; not a real machine", ramp_latency=0, queue_depth=8),
})


def get_target(target: str | Target) -> Target:
    """The :class:`Target` named ``target`` (or ``target`` itself when already a Target)."""
    if isinstance(target, Target):
        return target
    try:
        return TARGETS[target]
    except (KeyError, TypeError):
        raise TargetError(
            f"unknown target {target!r}; known targets: {', '.join(TARGETS)}") from None
