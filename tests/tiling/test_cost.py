"""The PLMR cost estimate: breakdown, budgets, and the direction of its trends."""

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.meshir.ir import Loop
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


@pytest.mark.parametrize("name, order", [("trisolv", None), ("trisolv", "source"), ("cholesky", None),
                                         ("lu", "source")])
def test_a_kernel_over_all_steps_costs_the_sum_of_its_calls(name, order):
    """Charged over every step at once (``__t`` dropped), a kernel costs what its calls at each step add up to:
    a vector operation at two steps is two operations. Checked on sweeps whose step pins a loop, with the
    pinned loop outermost (the derived order) and innermost (``order="source"``: each row a one-element run
    per step, which a projection of the step would have merged into one run for all steps)."""
    import samples
    from mica.tiling.cost import at_longest, part_cycles

    src, fn, params = samples.step_owner_kernel(name)
    prog = from_c(src, fn, params=params)
    wse2 = get_target("wse2")
    plan = samples.step_owner_compile(prog, (4, 4), wse2)
    if order == "source":
        step = plan.schedule.step or next(p.step for p in plan.schedule.phases if p.step is not None)
        plan = mica.compile_affine(plan.program, mesh=(4, 4), schedule=_step_innermost(plan.schedule, step.loop))
    mp = plan.mesh_program
    loop = next(op for op, _ in mp.walk() if isinstance(op, Loop) and op.var == "t")
    checked = 0
    for k in mp.kernels:
        for part in k.statements:
            if "__t" not in part.domain.split("->")[0]:
                continue
            for x, y in ((0, 0), (1, 2), (3, 3)):
                fix = {"__x": x, "__y": y, **at_longest(mp)}
                whole = part_cycles(mp, part, wse2, fix, drop=("__t", "__kb"))[0]
                # (every value of __t the domain allows: a pack's domain runs one past the loop's last step)
                calls = sum(part_cycles(mp, part, wse2, {**fix, "__t": t}, drop=("__kb",))[0]
                            for t in range(2 * loop.count))
                assert whole == calls, (k.name, x, y)
                checked += whole > 0
    assert checked


def _step_innermost(sched, loop):
    """``sched`` (or each of its phases) with the step loop ``loop`` innermost in every local order."""
    if sched.phases:
        return sched.copy(phases=tuple(_step_innermost(p, loop) for p in sched.phases))
    return sched.copy(local_order=tuple(
        (s, tuple(o for o in order if o.lstrip("-") != loop) + tuple(o for o in order if o.lstrip("-") == loop))
        for s, order in sched.local_order))
