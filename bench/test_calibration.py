"""Calibration of the PLMR cost model against published hardware measurements (issue 19, item 4).

    python -m pytest bench/test_calibration.py --benchmark-disable -s -m "slow or not slow"

Every row is one published figure: the measured (or vendor) number with its unit and its source, the program
MICA compiles for the same case (``mica.ops.matmul`` / ``mica.ops.gemv`` at the published size and dtype), the
mesh (the real grid the measurement used), the plan (the search's choice, or a named plan of
:mod:`mica.tiling.plans`), the constants of :mod:`mica.targets` the modelled figure depends on, the modelled
figure (from ``compile_affine(...).cost``, nothing hard-coded) and the ratio modelled / published. Plan-ranking
rows compare two plans' modelled cycles with the published direction (WaferLLM's MeshGEMM against SUMMA and
Cannon). A published case MICA cannot model today (it needs C written back to DRAM, math fidelities or block floats)
is a row too, with the reason; where a program exists its compile is attempted and must fail as stated.

Source keys are those of the team's hardware notes (``reference/hardware.md``: WLLM-PAPER, TT-GEMM, TT-DRAM,
WSE-PR, ...); a source outside them is named in full. A figure derived rather than printed by its source says so.

The compute model's constants (``call_cycles``, ``vector_op_cycles``, ``vector_width``, the SRAM ports; issue 19
item 1) are estimates for every target (mica.targets says which figures they rest on); each row lists them.

The suite asserts structure, never accuracy: the modelled figure is positive and finite, the plan named is the
plan compiled, the ratio is the quotient of the two figures, and an unmodelled case still fails to compile. The
model is not within 2x of every row today (the table's "within 2x?" column says where); closing that gap is the
rest of issue 19.

In CI (the smoke run) only :data:`QUICK` runs; the full table is marked ``slow``. The Markdown table is printed
when the module finishes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import pytest

import mica
from mica.targets import get_target
from mica.tiling import plans


def _matmul_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


@dataclass(frozen=True)
class Case:
    """One compiled case: a program builder, the mesh, the target and the plan (``None``: the search's
    choice; otherwise a name of :data:`mica.tiling.plans.REFERENCE_PLANS`, with ``buffers`` for the stepped
    plans); ``resident`` the arrays kept on the mesh between runs (``compile_affine(..., resident=...)``: loaded
    once, as the published kernel keeps them)."""

    program: str
    build: Callable[[], object]
    mesh: tuple[int, int]
    target: str
    plan: str | None = None
    buffers: int = 1
    resident: tuple[str, ...] = ()

    @property
    def dtype(self) -> str:
        """The dtype named in the program text (``'f16'`` in ``mica.ops.gemv(..., 'f16')``)."""
        return self.program.rsplit("'", 2)[-2]


@dataclass(frozen=True)
class Row:
    """One calibration row.

    ``metric`` says how the modelled figure is read from the compiled case(s):

    * ``tflops``: ``flops / cost.seconds / 1e12`` of ``case``;
    * ``us``: ``cost.seconds * 1e6`` of ``case``;
    * ``speedup``: total cycles of ``other`` ÷ total cycles of ``case`` (how much faster ``case``'s plan is);
    * ``comm``: communication cycles of ``other`` ÷ those of ``case`` (how much less ``case`` communicates).

    ``published`` is the source's number in ``unit`` (for a range, its lower end, and ``published_text`` the
    range as printed); ``derived`` marks a published figure computed from the source's numbers rather than
    printed by it. ``constants`` names the :class:`mica.targets.Target` fields the modelled figure depends
    on. A row with ``unmodelled`` set has no modelled figure: the text says why; ``case`` (optional) is then
    a compile that must fail with ``expect_error``. A ``bound`` row's published figure is a vendor peak, not a
    measurement: the modelled figure must not exceed it (asserted), and it is not counted among the figures
    the model must come within 2x of.
    """

    name: str
    target: str
    published: float
    unit: str
    source: str
    metric: str = "tflops"
    case: Case | None = None
    other: Case | None = None
    flops: float = 0.0
    constants: tuple[str, ...] = ()
    published_text: str = ""
    derived: bool = False
    unmodelled: str = ""
    expect_error: type = mica.SramError
    bound: bool = False
    notes: str = field(default="", compare=False)


#: The constants a compute-bound matmul's modelled throughput depends on (communication is mostly hidden by
#: double buffering or small next to compute), and those a latency-bound GEMV depends on.
#: The compute model's constants (issue 19 item 1: task activation, vector-op setup, vector width, SRAM ports),
#: which every row's compute depends on.
COMPUTE_CONSTANTS = ("call_cycles", "vector_op_cycles", "vector_width", "sram_bandwidth")
GEMM_CONSTANTS = ("clock_ghz", "flops_per_cycle", "link_bytes_per_cycle", "sram_bytes") + COMPUTE_CONSTANTS
GEMV_CONSTANTS = ("clock_ghz", "flops_per_cycle", "link_bytes_per_cycle", "hop_latency") + COMPUTE_CONSTANTS
PLAN_CONSTANTS = ("flops_per_cycle", "link_bytes_per_cycle", "hop_latency") + COMPUTE_CONSTANTS

WLLM_QUOTED = ("WLLM-PAPER (WaferLLM, OSDI'25), as quoted in issue 19; the paper's table was not re-read for "
               "this suite")
TT_GEMM_N150 = "TT-GEMM tech_reports/GEMM_FLOPS/GEMM_FLOPS.md, table 'N150 Manually Tuned Configurations'"
TT_GEMM_P150 = "TT-GEMM tech_reports/GEMM_FLOPS/GEMM_FLOPS.md, table 'P150 Manually Tuned Configurations (11x10 grid)'"

ROWS: tuple[Row, ...] = (
    Row("MeshGEMV [1,16K]x[16K,16K] f16", "wse2", 1.2, "us", WLLM_QUOTED, metric="us",
        case=Case("mica.ops.gemv(16384, 16384, 'f16')", lambda: mica.ops.gemv(16384, 16384, "f16"),
                  (750, 994), "wse2"),
        constants=GEMV_CONSTANTS, published_text="~1.2 us",
        notes="WaferLLM's mesh size for this figure is not restated here; MICA uses the whole 750x994 rectangle"),
    Row("MeshGEMV [1,16K]x[16K,16K] f16, ktree plan", "wse2", 1.2, "us", WLLM_QUOTED, metric="us",
        case=Case("mica.ops.gemv(16384, 16384, 'f16')", lambda: mica.ops.gemv(16384, 16384, "f16"),
                  (750, 994), "wse2", plan="ktree"),
        constants=GEMV_CONSTANTS, published_text="~1.2 us",
        notes="the named two-level tree of MeshGEMV (group ~ sqrt of the reduced cores)"),
    Row("MeshGEMV [1,16K]x[16K,16K] f16, A and x resident", "wse2", 1.2, "us", WLLM_QUOTED, metric="us",
        case=Case("mica.ops.gemv(16384, 16384, 'f16')", lambda: mica.ops.gemv(16384, 16384, "f16"),
                  (750, 994), "wse2", resident=("A", "x")),
        constants=GEMV_CONSTANTS, published_text="~1.2 us",
        notes="the published setup: the matrix and the input vector already in the PEs (hardware.md 3.3: every PE "
              "runs its local GEMV, then the allreduce), so no multicast of x per run; the published kernel "
              "also broadcasts the sum back (an allreduce), MICA's plan leaves y on one line"),
    Row("MeshGEMV [1,16K]x[16K,16K] f16, ktree plan, A and x resident", "wse2", 1.2, "us", WLLM_QUOTED, metric="us",
        case=Case("mica.ops.gemv(16384, 16384, 'f16')", lambda: mica.ops.gemv(16384, 16384, "f16"),
                  (750, 994), "wse2", plan="ktree", resident=("A", "x")),
        constants=GEMV_CONSTANTS, published_text="~1.2 us",
        notes="the named two-level tree with the published setup's resident matrix and vector"),
    Row("SGEMM 33000^3 f32 on 750x750", "wse2", 349.0, "TFLOP/s",
        "Miyajima, Matsuzaki, Mukunoki, 'Single-precision Matrix Multiplication Performance on Cerebras CS-2', "
        "J. Inf. Process. 34:132-139 (2026), abstract (not a hardware.md key)",
        case=Case("mica.ops.matmul(33000, 33000, 33000, 'f32')",
                  lambda: mica.ops.matmul(33000, 33000, 33000, "f32"), (750, 750), "wse2"),
        flops=_matmul_flops(33000, 33000, 33000), constants=GEMM_CONSTANTS, published_text="349.0 TFLOP/s",
        notes="MICA's plan runs 44-element f32 vectors per core; fitting vector_op_cycles to this row alone would "
              "take ~110 cycles per vector operation, which the MeshGEMV rows refute (mica.targets, compute "
              "model)"),
    Row("MeshGEMM vs SUMMA, 4096^3 f16 on 720x720 (end to end)", "wse2", 1.3, "x faster", WLLM_QUOTED,
        metric="speedup",
        case=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                  (720, 720), "wse2", plan="interleaved", buffers=2),
        other=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                   (720, 720), "wse2", plan="summa", buffers=2),
        constants=PLAN_CONSTANTS, published_text="1.3-2x faster (lower end used)",
        notes="the GEMM size of the published comparison is not restated here; 4096^3 is MICA's choice; all "
              "plans double-buffered"),
    Row("MeshGEMM vs Cannon, 4096^3 f16 on 720x720 (end to end)", "wse2", 1.3, "x faster", WLLM_QUOTED,
        metric="speedup",
        case=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                  (720, 720), "wse2", plan="interleaved", buffers=2),
        other=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                   (720, 720), "wse2", plan="cannon", buffers=2),
        constants=PLAN_CONSTANTS, published_text="1.3-2x faster (lower end used)"),
    Row("MeshGEMM vs SUMMA, 4096^3 f16 on 720x720 (communication)", "wse2", 2.0, "x less comm", WLLM_QUOTED,
        metric="comm",
        case=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                  (720, 720), "wse2", plan="interleaved", buffers=2),
        other=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                   (720, 720), "wse2", plan="summa", buffers=2),
        constants=PLAN_CONSTANTS, published_text="2-5x less communication (lower end used)",
        notes="MICA's figure is exposed communication cycles (what double buffering does not hide)"),
    Row("MeshGEMM vs Cannon, 4096^3 f16 on 720x720 (communication)", "wse2", 2.0, "x less comm", WLLM_QUOTED,
        metric="comm",
        case=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                  (720, 720), "wse2", plan="interleaved", buffers=2),
        other=Case("mica.ops.matmul(4096, 4096, 4096, 'f16')", lambda: mica.ops.matmul(4096, 4096, 4096, "f16"),
                   (720, 720), "wse2", plan="cannon", buffers=2),
        constants=PLAN_CONSTANTS, published_text="2-5x less communication (lower end used)",
        notes="MICA's figure is exposed communication cycles (what double buffering does not hide)"),
    Row("GEMM 32768^3 f16 on 755x1170 vs vendor peak", "wse3", 125_000.0, "TFLOP/s",
        "WSE-PR (vendor peak as reported in the press; hardware.md 1a: it cannot be a dense figure)",
        case=Case("mica.ops.matmul(32768, 32768, 32768, 'f16')",
                  lambda: mica.ops.matmul(32768, 32768, 32768, "f16"), (755, 1170), "wse3"),
        flops=_matmul_flops(32768, 32768, 32768), constants=GEMM_CONSTANTS + ("grid",),
        published_text="125 PFLOP/s (peak, not a measurement)", bound=True,
        notes="no measured WSE-3 figure was found; this row bounds the model against the vendor peak"),
    Row("matmul 2048^3 bf16 HiFi4 on N150 8x8 (trace)", "wormhole", 51.67, "TFLOP/s",
        TT_GEMM_N150 + ", row 2048x2048x2048 BFLOAT16 HiFi4, trace: 332,493.78 ns",
        case=Case("mica.ops.matmul(2048, 2048, 2048, 'bf16')",
                  lambda: mica.ops.matmul(2048, 2048, 2048, "bf16"), (8, 8), "wormhole"),
        flops=_matmul_flops(2048, 2048, 2048), constants=GEMM_CONSTANTS, published_text="51.67 TFLOP/s",
        notes="the measurement keeps in1 in DRAM; MICA holds every array in L1 (no streamed plan models fewer "
              "cycles here)"),
    Row("matmul 2560x4224x4224 bf16 HiFi4 on P150 11x10 (trace)", "blackhole", 142.42, "TFLOP/s",
        TT_GEMM_P150 + ", row m=2560 k=4224 n=4224 BFLOAT16 HiFi4, trace: 641,434.19 ns",
        case=Case("mica.ops.matmul(2560, 4224, 4224, 'bf16')",
                  lambda: mica.ops.matmul(2560, 4224, 4224, "bf16"), (11, 10), "blackhole"),
        flops=_matmul_flops(2560, 4224, 4224), constants=GEMM_CONSTANTS, published_text="142.42 TFLOP/s",
        notes="the measurement keeps in1 in DRAM; MICA's search streams A and B from DRAM (read by line roots and "
              "multicast, all 110 cores), which models fewer cycles than its best plan holding every array in L1 "
              "(862,089 cycles, 143.1 TFLOP/s)"),
    Row("matmul 16384^3 bf16 HiFi4 on N150 8x8 (DRAM)", "wormhole", 54.31, "TFLOP/s",
        TT_GEMM_N150 + ", row 16384^3 BFLOAT16 HiFi4, no trace, all DRAM",
        case=Case("mica.ops.matmul(16384, 16384, 16384, 'bf16')",
                  lambda: mica.ops.matmul(16384, 16384, 16384, "bf16"), (8, 8), "wormhole"),
        published_text="54.31 TFLOP/s",
        unmodelled="the arrays (1.5 GB) live in device DRAM and stream into L1; MICA streams A and B from DRAM "
                   "but keeps C's block in L1 (2048x2048 bf16 = 8 MiB per core here), so no plan fits the 1464 KiB "
                   "L1 (SramError); writing C back to DRAM block by block is not built"),
    Row("matmul 20480x22528x22528 bf16 HiFi4 on P150 11x10 (DRAM)", "blackhole", 127.77, "TFLOP/s",
        TT_GEMM_P150 + ", row m=20480 k=22528 n=22528 BFLOAT16 HiFi4, trace, all DRAM",
        case=Case("mica.ops.matmul(20480, 22528, 22528, 'bf16')",
                  lambda: mica.ops.matmul(20480, 22528, 22528, "bf16"), (11, 10), "blackhole"),
        published_text="127.77 TFLOP/s",
        unmodelled="the arrays live in device DRAM and stream into L1; MICA streams A and B but keeps C's block "
                   "in L1 (about 2048x2048 bf16 = 8 MiB per core here), so no plan fits (SramError)"),
    Row("matmul 4096^3 BFLOAT4_B LoFi on N150 8x8", "wormhole", 192.74, "TFLOP/s",
        TT_GEMM_N150 + ", row 4096^3 BFLOAT4_B LoFi, no trace",
        published_text="192.74 TFLOP/s",
        unmodelled="MICA has no math-fidelity setting (its Wormhole rate is HiFi4's 1024 FLOP/cycle) and no "
                   "block-float dtype (bfp4_b/bfp8_b)"),
    Row("DRAM read bandwidth, Wormhole microbenchmark", "wormhole", 267.0, "GB/s",
        "TT-DRAM (Saturating_DRAM_bandwidth.md, as summarised in hardware.md 1b: 267 of 288 GB/s)",
        published_text="267 GB/s", unmodelled="MICA's DRAM level (mica.targets) uses the 288 GB/s spec-sheet "
                                               "peak, not this attainable rate, and no program measures DRAM "
                                               "bandwidth alone"),
    Row("DRAM read bandwidth, Blackhole microbenchmark", "blackhole", 500.0, "GB/s",
        "TT-DRAM (Saturating_DRAM_bandwidth_Blackhole.md, as summarised in hardware.md 1b: 500 of 512 GB/s)",
        published_text="500 GB/s", unmodelled="MICA's DRAM level (mica.targets) uses the 512 GB/s spec-sheet "
                                               "peak, not this attainable rate, and no program measures DRAM "
                                               "bandwidth alone"),
)

BY_NAME = {r.name: r for r in ROWS}
assert len(BY_NAME) == len(ROWS), "calibration row names must be unique"
#: The rows CI runs (fast: the WSE-2 GEMV compiles in well under a second at 750x994, with x sent or kept).
QUICK = (ROWS[0].name, ROWS[2].name)
RESULTS: dict[str, dict] = {}


def compile_case(case: Case):
    """``compile_affine`` of ``case`` for its real mesh: the named plan when the case names one (built by
    :data:`mica.tiling.plans.REFERENCE_PLANS`), otherwise the search's choice."""
    op = case.build()
    schedule = None
    if case.plan is not None:
        make = plans.REFERENCE_PLANS[case.plan]
        # A named plan lays its arrays out for the program it is given: the kept arrays marked as compile_affine
        # marks them, so a kept input is laid out as kept (a copy on every line, not a home multicast per run).
        kept = op.replace(on_mesh=case.resident) if case.resident else op
        schedule = make(kept, case.mesh, buffers=case.buffers) if case.buffers != 1 else make(kept, case.mesh)
    return mica.compile_affine(op, mesh=case.mesh, target=case.target, schedule=schedule, resident=case.resident)


def _constants_text(row: Row, dtype: str) -> str:
    tgt = get_target(row.target)
    parts = []
    for c in row.constants:
        if c == "flops_per_cycle":
            parts.append(f"{dtype} {tgt.flops(dtype):g} FLOP/cycle")
        elif c == "clock_ghz":
            parts.append(f"{tgt.clock_ghz:g} GHz")
        elif c == "link_bytes_per_cycle":
            parts.append(f"link {tgt.link_bytes_per_cycle:g} B/cycle")
        elif c == "hop_latency":
            parts.append(f"hop {tgt.hop_latency:g} cycles")
        elif c == "sram_bytes":
            parts.append(f"SRAM {tgt.sram_bytes:,} B")
        elif c == "grid":
            parts.append(f"grid {tgt.grid[0]}x{tgt.grid[1]}")
        elif c == "call_cycles":
            parts.append(f"call {tgt.call_cycles:g} cycles")
        elif c == "vector_op_cycles":
            parts.append(f"vector op {tgt.vector_op_cycles:g} cycles")
        elif c == "vector_width":
            parts.append(f"{dtype} width {tgt.lanes(dtype)}")
        elif c == "sram_bandwidth":
            if tgt.sram_read_bytes_per_cycle or tgt.sram_write_bytes_per_cycle:
                parts.append(f"SRAM {tgt.sram_read_bytes_per_cycle:g} B read + "
                             f"{tgt.sram_write_bytes_per_cycle:g} B write per cycle")
        else:
            parts.append(f"{c}={getattr(tgt, c)}")
    return ", ".join(parts)


def _check_plan(case: Case, prog) -> str:
    """The name of the plan ``prog`` was compiled with; for a named case, checks it is the plan asked for."""
    sched = prog.schedule
    if case.plan is not None:
        assert sched.family == case.plan, f"asked for {case.plan}, compiled {sched.family}"
        if case.plan in ("summa", "cannon", "interleaved"):
            assert sched.buffers == case.buffers, (sched.buffers, case.buffers)
        return sched.name
    return f"searched: {sched.name}"


def calibrate(row: Row) -> dict:
    """Compile ``row``'s case(s) and return its result: the modelled figure, the ratio modelled / published,
    the plan(s) compiled and the constants; for an unmodelled row, the reason (and the error its compile
    attempt raised)."""
    out = {"name": row.name, "target": row.target, "published": row.published, "unit": row.unit,
           "published_text": row.published_text or f"{row.published:g} {row.unit}", "source": row.source,
           "derived": row.derived, "modelled": None, "ratio": None, "plan": "", "program": "", "mesh": "",
           "constants": "", "reason": row.unmodelled, "notes": row.notes}
    case = row.case
    if case is not None:
        out["program"] = case.program + (f" with resident={case.resident!r}" if case.resident else "")
        out["mesh"] = f"{case.mesh[0]}x{case.mesh[1]}"
    if row.unmodelled:
        if case is not None:
            with pytest.raises(row.expect_error) as err:
                compile_case(case)
            out["error"] = type(err.value).__name__
        return out
    prog = compile_case(case)
    out["plan"] = _check_plan(case, prog)
    out["constants"] = _constants_text(row, case.dtype)
    cost = prog.cost
    if row.metric == "tflops":
        modelled = row.flops / cost.seconds / 1e12
    elif row.metric == "us":
        modelled = cost.seconds * 1e6
    elif row.metric in ("speedup", "comm"):
        other = compile_case(row.other)
        out["plan"] += " vs " + _check_plan(row.other, other)
        if row.metric == "speedup":
            modelled = other.cost.total_cycles / cost.total_cycles
        else:
            modelled = other.cost.comm_cycles / cost.comm_cycles if cost.comm_cycles else math.inf
        out["cycles"] = (cost.total_cycles, other.cost.total_cycles)
        out["comm_cycles"] = (cost.comm_cycles, other.cost.comm_cycles)
    else:
        raise ValueError(f"unknown metric {row.metric!r}")
    out["modelled"] = modelled
    out["ratio"] = modelled / row.published
    out["total_cycles"] = cost.total_cycles
    return out


def _check(res: dict, row: Row) -> None:
    if row.unmodelled:
        assert res["modelled"] is None and res["reason"]
        if row.case is not None:
            assert res["error"] == row.expect_error.__name__
        return
    assert res["modelled"] is not None and math.isfinite(res["modelled"]) and res["modelled"] > 0
    assert res["ratio"] == pytest.approx(res["modelled"] / row.published)
    if row.bound:                               # a vendor peak: the model may not promise more
        assert res["modelled"] <= row.published
    assert res["plan"] and res["constants"]


def _run(benchmark, name: str) -> None:
    row = BY_NAME[name]
    res = benchmark.pedantic(calibrate, args=(row,), rounds=1, iterations=1)
    benchmark.extra_info.update({k: v for k, v in res.items() if isinstance(v, (int, float, str, type(None)))})
    _check(res, row)
    RESULTS[name] = res


@pytest.mark.parametrize("name", QUICK)
def test_calibration_quick(benchmark, name):
    _run(benchmark, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [r.name for r in ROWS])
def test_calibration(benchmark, name):
    _run(benchmark, name)


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:,.3g}"


def verdict(row: Row, res: dict) -> str:
    """"yes"/"no": the modelled figure within 2x of the published one; for a plan-ranking row (``speedup``,
    ``comm``) also whether the model reproduces the published direction (the first plan ahead by at least
    the published factor, ahead by less, or not ahead at all)."""
    if row.bound:
        return "bound: below the peak" if res["ratio"] <= 1.0 else "bound: ABOVE the peak"
    within = "yes" if 0.5 <= res["ratio"] <= 2.0 else "no"
    if row.metric not in ("speedup", "comm"):
        return within
    m = res["modelled"]
    if m >= row.published:
        direction = "direction reproduced"
    elif m > 1.0 + 1e-3:
        direction = "same direction, smaller gain"
    else:
        direction = "direction NOT reproduced (no gain)"
    return f"{within}; {direction}"


def table(results: dict[str, dict]) -> str:
    """The results as a Markdown table, in :data:`ROWS` order."""
    head = ("| case | target | published | modelled | ratio | within 2x? | program, mesh, plan | constants "
            "| source |")
    lines = [head, "|" + "---|" * 9]
    for row in ROWS:
        r = results.get(row.name)
        if r is None:
            continue
        pub = r["published_text"] + (" (derived)" if r["derived"] else "")
        if r["modelled"] is None:
            lines.append(f"| {row.name} | {row.target} | {pub} | not modelled | — | — | "
                         f"{r['program'] or '—'} {r['mesh']} | — | {row.source}. Why: {r['reason']} |")
            continue
        within = verdict(row, r)
        lines.append(f"| {row.name} | {row.target} | {pub} | {_fmt(r['modelled'])} {row.unit} | "
                     f"{r['ratio']:.2f} | {within} | {r['program']}, {r['mesh']}, {r['plan']} | "
                     f"{r['constants']} | {row.source} |")
    return "\n".join(lines)


def teardown_module():
    if RESULTS:
        rows = [BY_NAME[n] for n in RESULTS]
        figures = [r for r in rows if RESULTS[r.name]["ratio"] is not None and r.metric in ("tflops", "us")
                   and not r.bound]
        bounds = [r for r in rows if RESULTS[r.name]["ratio"] is not None and r.bound]
        ranks = [r for r in rows if RESULTS[r.name]["ratio"] is not None and r.metric in ("speedup", "comm")]
        within = sum(1 for r in figures if 0.5 <= RESULTS[r.name]["ratio"] <= 2.0)
        same = sum(1 for r in ranks if RESULTS[r.name]["modelled"] > 1.0 + 1e-3)
        below = sum(1 for r in bounds if RESULTS[r.name]["ratio"] <= 1.0)
        print(f"\n{table(RESULTS)}\n\n{within} of {len(figures)} modelled figures within 2x of the published "
              f"one; {same} of {len(ranks)} plan rankings in the published direction; {below} of {len(bounds)} "
              f"vendor peaks not exceeded; {len(rows) - len(figures) - len(ranks) - len(bounds)} rows not modelled")
