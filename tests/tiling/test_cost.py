"""The PLMR cost estimate: breakdown, budgets, and the direction of its trends."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.targets import get_target
from mica.tiling.cost import one_core_cycles
from mica.tiling.mapping import derive_schedule

from frontend.frontend_util import MANIFEST, kernel_function, kernel_source


def test_breakdown_adds_up_and_budgets_are_reported():
    c = mica.compile_affine(mica.ops.matmul(512, 512, 512), mesh=(16, 16), search=False).cost
    assert c.total_cycles == c.compute_cycles + c.comm_cycles
    t = mica.get_target("wse2")
    # Arithmetic: 32x32x32 MACs per core per step, 16 steps, 2 FLOP/cycle on WSE-2 for f32 ...
    # ... plus the init, which writes 32x32 elements, costed like one operation each.
    assert c.arith_cycles == 16 * 32 * 32 * 32 * 2 / 2 + 32 * 32 / 2
    # Overheads: per step a call and 32x32 vector operations (runs of j, 32 f32 elements: one lane, no
    # remainder); the init one call and 32 runs.
    assert c.compute_cycles == c.arith_cycles + 16 * (t.call_cycles + 32 * 32 * t.vector_op_cycles) \
        + t.call_cycles + 32 * t.vector_op_cycles
    assert c.sram_budget == 49152 and 0 < c.sram_bytes <= c.sram_budget
    assert c.colours == 2 and c.colour_budget == 21
    assert set(dict(c.per_tensor)) == {"A", "B"}
    assert abs(c.seconds - c.total_cycles / 1.1e9) < 1e-12


def test_more_cores_less_compute_per_core():
    small = mica.compile_affine(mica.ops.matmul(256, 256, 256), mesh=(8, 8), search=False).cost
    big = mica.compile_affine(mica.ops.matmul(256, 256, 256), mesh=(32, 32), search=False).cost
    assert big.compute_cycles < small.compute_cycles
    assert big.cores > small.cores


def test_chain_reduction_stages_are_on_the_critical_path():
    """A chain stage pays its hop and bytes (hardware-routed: no software relay) and the accumulate on the
    receiving core, stage after stage; the emulator's timing model measures the same (tests/native)."""
    c = mica.compile_affine(mica.ops.gemv(64, 64), mesh=(8, 8), search=False).cost
    t = mica.get_target("wse2")
    # 7 one-hop stages, each moving an 8-element f32 partial (32 B).
    assert dict(c.per_tensor)["y"] == 7 * (t.hop_latency + 32 / t.link_bytes_per_cycle)
    # 8x8 MACs, one 8-element initialisation (the chain's root column initialises y while the other
    # columns clear their partials: disjoint cores, at the same time), 7 accumulates of 8 adds, at 2
    # FLOP/cycle ...
    assert c.arith_cycles == (8 * 8 * 2 + 8 + 7 * 8) / 2
    # ... plus each call's activation and each vector operation's setup: the local gemv runs 8 rows of 8, the
    # initialisation and every accumulate one 8-element vector.
    call, op = t.call_cycles, t.vector_op_cycles
    assert c.compute_cycles == c.arith_cycles + (call + 8 * op) + (call + op) + 7 * (call + op)
    assert c.total_cycles == mica.compile_affine(mica.ops.gemv(64, 64), mesh=(8, 8), search=False).run(
        {"A": np.ones((64, 64), np.float32), "x": np.ones(64, np.float32)}).stats.cycles


@pytest.mark.parametrize("name", ["gemm", "trisolv", "durbin", "jacobi-2d", "correlation"])
def test_one_core_cycles_is_what_the_one_core_plan_costs(name):
    """The wafer-scale speedup's baseline, computed from the program alone, equals the modelled cost of the
    program built and costed on one core (where that fits)."""
    spec = MANIFEST[name]
    prog = from_c(kernel_source(name), kernel_function(name), params=spec["params"])
    one = mica.compile_affine(prog, mesh=(4, 4), schedule=derive_schedule(prog, (4, 4), assignment=[],
                                                                           family="one-core"))
    assert one_core_cycles(one.program, get_target("wse2")) == one.cost.total_cycles
