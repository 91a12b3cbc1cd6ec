"""The emulator's timing model (mica_rt.h "Timing model") and its agreement with the cost model.

Hand-built op codes check the link model exactly (hops, bandwidth, contention, idle time); compiled
programs check that modelled cycles agree with ``prog.cost`` within 10% on small meshes, that the measured
traffic equals comm/'s declaration, that the compute clock counts exactly the instances the kernels run,
and that everything is bit-identical for any thread count. The full-size table is
``bench/test_model_agreement.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mica
from mica.comm.traffic import declared_traffic
from mica.emit_c.build import compile_shared
from mica.meshir.ir import Compute as IrCompute
from mica.meshir.ir import Exchange as IrExchange
from mica.native_sim.execute import RunStats
from mica.native_sim.opcode import (EAST, RAMP, WEST, Box, BoxDim, Compute, Exchange, Loop, Recv, Rect,
                                    Route, Send, encode)
from mica.native_sim.runtime import NativeMesh, include_flags, load_kernels
from mica.tiling.cost import call_cycles

import samples

HOP, BW = 3.0, 4.0
MSG = 64                                  # bytes per message: 16 cycles on a link
DUR = MSG / BW

# A kernel that does nothing, whose work function says core (0, 0) computes for 100 cycles per call.
SLOW_C = r"""
#include <stdint.h>
#include "mica_rt.h"
static void k_nop(uint8_t *a, int64_t x, int64_t y, const int64_t *v, const double *s) {
    (void)a; (void)x; (void)y; (void)v; (void)s;
}
static double w_slow(int64_t x, int64_t y, const int64_t *v) { (void)v; return x == 0 && y == 0 ? 100.0 : 0.0; }
int32_t mica_kernel_count(void) { return 1; }
mica_kernel_fn mica_kernel_get(int32_t i) { return i == 0 ? k_nop : 0; }
mica_work_fn mica_work_get(int32_t i) { return i == 0 ? w_slow : 0; }
"""


def _mesh(w, h, colours=4):
    m = NativeMesh(w, h, colours, 4096)
    m.reserve((0, w, 0, h), 256)
    m.commit()
    m.set_timing(HOP, BW)
    return m


def _box(offset):
    return Box(offset, 4, (BoxDim.whole(MSG // 4),))


def _east(colour, x0, x1, y=0, send=0, recv=128, op_id=1):
    """Core (x0, y) sends one message east to core (x1, y)."""
    routes = [Route(colour, RAMP, EAST, Rect.cell(x0, y))]
    routes += [Route(colour, WEST, EAST, Rect.cell(x, y)) for x in range(x0 + 1, x1)]
    routes.append(Route(colour, WEST, RAMP, Rect.cell(x1, y)))
    return routes, Send(colour, x1 - x0, Rect.cell(x0, y), _box(send)), Recv(colour, Rect.cell(x1, y), _box(recv))


def _exchange(*parts, op_id=1):
    routes, sends, recvs = [], [], []
    for r, s, v in parts:
        routes += list(r)
        sends.append(s)
        recvs.append(v)
    return Exchange(op_id, tuple(routes), tuple(sends), tuple(recvs))


def test_arrival_grows_with_hops():
    arrivals = []
    for hops in range(1, 6):
        with _mesh(8, 1) as m:
            m.run(encode([_exchange(_east(0, 0, hops))]))
            s = m.stats()
        arrivals.append(s.core_clock[0, hops])
        assert s.core_clock[0, hops] == hops * HOP + DUR              # hops x latency + bytes / bandwidth
        assert s.core_comm[0, hops] == DUR and s.core_idle[0, hops] == hops * HOP
        assert s.core_clock[0, 0] == DUR and s.core_comm[0, 0] == DUR  # the sender streams its bytes out
        assert s.cycles == max(arrivals[-1], DUR)
    assert arrivals == sorted(arrivals) and len(set(arrivals)) == len(arrivals)


def test_two_messages_sharing_a_link_arrive_later_than_one():
    alone = _east(0, 0, 2)                          # (0,0) -> (2,0): links (0,0)E, (1,0)E
    other = _east(1, 1, 3, send=64, recv=192)       # (1,0) -> (3,0): links (1,0)E, (2,0)E
    with _mesh(4, 1) as m:
        m.run(encode([_exchange(alone)]))
        single = m.stats()
    assert single.core_clock[0, 2] == 2 * HOP + DUR and single.contended_messages == 0
    for threads in (1, 2):
        with _mesh(4, 1) as m:
            m.run(encode([_exchange(alone, other)]), threads=threads)
            both = m.stats()
        # The other message's head reaches link (1,0)E first (it starts there), so it holds the link for
        # DUR cycles; ours waits for it, then takes one hop and streams in.
        assert both.core_clock[0, 3] == 2 * HOP + DUR
        assert both.core_clock[0, 2] == DUR + HOP + DUR > single.core_clock[0, 2]
        assert both.contended_messages == 2
        assert both.core_idle[0, 2] == both.core_clock[0, 2] - DUR


def test_a_busy_link_delays_the_next_exchange():
    """Link reservations persist across exchanges: a message through a link still busy with an earlier
    exchange's message waits for it, even though its own sender is early."""
    first = _east(0, 0, 3)                                     # a 3-hop message through (1,0)E, (2,0)E
    second = _east(1, 2, 3, send=64, recv=192)                 # (2,0) -> (3,0) on (2,0)E
    with _mesh(4, 1) as m:
        m.run(encode([_exchange(first), _exchange(second, op_id=2)]))
        s = m.stats()
    # first holds (2,0)E during [2*HOP, 2*HOP + DUR); core (2,0) is idle at cycle 0 and sends then.
    assert s.core_clock[0, 3] == max(3 * HOP + DUR, 2 * HOP + DUR + HOP + DUR)


def test_idle_time_on_a_core_waiting_for_a_late_sender():
    lib = load_kernels(compile_shared(SLOW_C, name="timing_slow", flags=include_flags()))
    with lib, _mesh(2, 1) as m:
        program = [Compute(1, ((0, Rect.const(0, 2, 0, 1)),)), _exchange(_east(0, 0, 1), op_id=2)]
        m.run(encode(program), lib)
        s = m.stats()
    assert s.core_compute[0, 0] == 100 and s.core_compute[0, 1] == 0
    assert s.core_clock[0, 0] == 100 + DUR                       # computes, then sends
    assert s.core_clock[0, 1] == 100 + HOP + DUR                 # waits for the late sender
    assert s.core_idle[0, 1] == 100 + HOP and s.core_comm[0, 1] == DUR
    np.testing.assert_array_equal(s.core_compute + s.core_comm + s.core_idle, s.core_clock)


def test_guarded_out_exchange_is_not_counted():
    ex = _exchange(_east(0, 0, 1))
    guarded = Exchange(2, tuple(Route(r.colour, r.rx, r.tx, Rect(r.rect.x0, (r.rect.x1[0], 0), r.rect.y0, r.rect.y1))
                                for r in ex.routes), (), ())
    with _mesh(2, 1) as m:
        m.run(encode([ex, guarded]))
        assert m.stats().exchanges == 1
    # Compiled: Cannon's last step has no shift (its guard is 0 there).
    op = mica.ops.matmul(32, 32, 32)
    prog = mica.compile_affine(op, mesh=(4, 4), schedule=mica.plans.cannon(op, (4, 4)))
    mp = prog.mesh_program
    active = 0
    for o, scope in mp.walk():
        if isinstance(o, IrExchange):
            names = [v for v, _ in scope]
            active += sum(o.active(dict(zip(names, vals))) for vals in itertools.product(*(range(n) for _, n in scope)))
    rng = np.random.default_rng(0)
    res = prog.run({"A": rng.standard_normal((32, 32), dtype=np.float32), "B": rng.standard_normal((32, 32), dtype=np.float32)})
    assert res.stats.exchanges == active == 3


# ---------------------------------------------------------------------------------------------------
# Compiled programs: agreement with the cost model, declared traffic, exact compute, thread counts
# ---------------------------------------------------------------------------------------------------

MM2 = samples.mm2(12)

JACOBI_1D = samples.jacobi_1d(40)


JACOBI_2D = samples.jacobi_2d(24, name="jacobi2", compact=True)


def _halo2d(mesh):
    op = mica.affine.from_c(JACOBI_2D, params={"tsteps": 3, "n": 24})
    return mica.compile_affine(op, mesh=mesh, schedule=mica.plans.halo(op, mesh))


def _matmul(plan, n=96, mesh=(4, 4), target="wse2", buffers=1):
    op = mica.ops.matmul(n, n, n)
    return mica.compile_affine(op, mesh=mesh, target=target,
                               schedule=mica.plans.REFERENCE_PLANS[plan](op, mesh, buffers=buffers))


def _gemv_batch(buffers, mesh=(4, 4)):
    """A batch of 4 gemvs (matmul 128x4x128): its vectors' panels are multicast step by step."""
    op = mica.ops.matmul(128, 4, 128)
    return mica.compile_affine(op, mesh=mesh, schedule=mica.plans.summa(op, mesh, buffers=buffers))


def _gemv(plan, m=128, n=128, mesh=(8, 8)):
    op = mica.ops.gemv(m, n)
    return mica.compile_affine(op, mesh=mesh, schedule=mica.plans.REFERENCE_PLANS[plan](op, mesh))


SMALL = {
    "matmul summa 4x4": lambda: _matmul("summa"),
    "matmul cannon 4x4": lambda: _matmul("cannon"),
    "matmul interleaved 4x4": lambda: _matmul("interleaved"),
    "matmul summa 4x4 wormhole": lambda: _matmul("summa", target="wormhole"),
    "matmul summa+db 4x4": lambda: _matmul("summa", buffers=2),
    "matmul cannon+db 4x4": lambda: _matmul("cannon", buffers=2),
    "matmul interleaved+db 8x8": lambda: _matmul("interleaved", mesh=(8, 8), buffers=2),
    "gemv batch summa+db 4x4": lambda: _gemv_batch(2),
    "gemv chain 8x8": lambda: _gemv("chain"),
    "gemv ktree 8x8": lambda: _gemv("ktree"),
    "add 64x64 4x4": lambda: mica.compile_affine(mica.ops.add((64, 64)), mesh=(4, 4)),
    "mm2 4x4 wormhole": lambda: mica.compile_affine(mica.affine.from_c(MM2, params={"n": 12}), mesh=(4, 4),
                                                    target="wormhole"),
    "jacobi-1d 4x4": lambda: mica.compile_affine(mica.affine.from_c(JACOBI_1D, params={"tsteps": 4, "n": 40}),
                                                 mesh=(4, 4)),
    "jacobi-2d halo 3x2": lambda: _halo2d((3, 2)),
}


def inputs_for(prog, seed=0):
    rng = np.random.default_rng(seed)
    p = prog.program
    out = {}
    for name in p.inputs:
        a = p.array(name)
        out[name] = rng.standard_normal(a.shape).astype({"f32": np.float32, "f64": np.float64}[a.dtype])
    for name, _ in p.scalars:
        out[name] = 1.5
    return out


@pytest.fixture(scope="module")
def runs():
    """Every SMALL case compiled and run once on 2 threads: name -> (prog, result)."""
    out = {}
    for name, make in SMALL.items():
        prog = make()
        out[name] = (prog, prog.run(inputs_for(prog), threads=2))
    return out


@pytest.mark.parametrize("name", list(SMALL))
def test_model_and_emulator_agree_within_10_percent(runs, name):
    prog, res = runs[name]
    ratio = res.stats.cycles / prog.cost.total_cycles
    print(f"\n{name}: model {prog.cost.total_cycles:,.0f} emulator {res.stats.cycles:,.0f} ratio {ratio:.3f}")
    assert 0.9 <= ratio <= 1.1, f"{name}: emulator {res.stats.cycles:,.0f} vs model {prog.cost.total_cycles:,.0f}"
    s = res.stats
    np.testing.assert_allclose(s.core_compute + s.core_comm + s.core_idle, s.core_clock, rtol=1e-12)
    assert s.seconds == pytest.approx(s.cycles / (prog.target.clock_ghz * 1e9))


@pytest.mark.parametrize("name", list(SMALL))
def test_counters_equal_declared_traffic(runs, name):
    prog, res = runs[name]
    want = declared_traffic(prog.mesh_program)
    np.testing.assert_array_equal(res.stats.link_bytes, want.link_bytes)
    np.testing.assert_array_equal(res.stats.link_messages, want.link_messages)
    np.testing.assert_array_equal(res.stats.link_busy_cycles, want.link_bytes / prog.target.link_bytes_per_cycle)


@pytest.mark.parametrize("name", ["matmul cannon 4x4", "gemv ktree 8x8", "mm2 4x4 wormhole"])
def test_compute_clock_counts_the_instances_the_kernels_run(runs, name):
    """Per core, the emulator's compute cycles equal isl's count of each kernel's instances, vector operations
    and vector issues at that core and step, priced as the cost model prices a call (:func:`call_cycles`: an
    independent count, isl's enumeration, not the generated C loop nest)."""
    prog, res = runs[name]
    mp = prog.mesh_program
    want = np.zeros(res.stats.core_compute.shape)
    for op, scope in mp.walk():
        if not isinstance(op, IrCompute):
            continue
        k = mp.kernel(op.kernel)
        names = [v for v, _ in scope]
        for vals in itertools.product(*(range(n) for _, n in scope)):
            env = dict(zip(names, vals))
            cols, rows = op.rect.members(env)
            for cls in k.classes:
                r = cls.region
                for y in rows:
                    for x in cols:
                        if not (r.x0 <= x < r.x1 and r.y0 <= y < r.y1):
                            continue
                        fix = {"__x": x, "__y": y, "__t": vals[0] if vals else 0}
                        if mp.skew is not None:
                            fix["__kb"] = int(mp.skew.block(x, y, fix["__t"]))
                        want[y, x] += call_cycles(mp, k, prog.target, fix)
    np.testing.assert_array_equal(res.stats.core_compute, want)


def test_bit_identical_for_1_2_4_threads():
    """Outputs, clocks and link counters for any thread count, also with many messages sharing links
    (a 3-hop shift on every row: each link carries up to three messages of the exchange)."""
    prog = _matmul("summa", n=192, mesh=(8, 8))
    ins = inputs_for(prog)
    w, h = 64, 40
    rows = []
    for x in range(0, w - 3):
        r, snd, rcv = _east(x % 4, x, x + 3)
        rows.append((tuple(Route(q.colour, q.rx, q.tx, Rect(q.rect.x0, q.rect.x1, 0, h)) for q in r),
                     Send(snd.colour, snd.max_hops, Rect(snd.rect.x0, snd.rect.x1, 0, h), snd.box),
                     Recv(rcv.colour, Rect(rcv.rect.x0, rcv.rect.x1, 0, h), rcv.box)))
    code = encode([Loop(0, 2, (_exchange(*rows),))])
    results = []
    for threads in (1, 2, 4):
        res = prog.run(ins, threads=threads)
        with _mesh(w, h, colours=4) as m:
            m.run(code, threads=threads)
            raw = m.stats()
        results.append((res.outputs["C"], res.stats.raw, raw))
    (c1, s1, r1) = results[0]
    assert r1.contended_messages > 0 and r1.cycles > 0
    for c, s, r in results[1:]:
        np.testing.assert_array_equal(c, c1)
        assert s == s1 and r == r1                 # every counter and every clock, bit for bit
        assert s.cycles == s1.cycles


def test_stats_of_a_full_wafer_mesh_stay_compact():
    """745,500 cores: stats are a fixed number of numpy arrays of small fixed width per core (no Python
    object per core), and the summary is a small dict."""
    w, h = 750, 994
    with NativeMesh(w, h, 21, 49152) as m:
        m.reserve((0, 4, 0, 1), 256)
        m.commit()
        m.set_timing(1.0, 4.0)
        m.run(encode([_exchange(_east(0, 0, 3))]))
        raw = m.stats()
    arrays = [v for v in vars(raw).values() if isinstance(v, np.ndarray)]
    assert all(a.dtype != object and a.shape[:2] == (h, w) and a.ndim <= 3 for a in arrays)
    per_core = sum(a.nbytes for a in arrays) / (w * h)
    assert per_core <= 160, per_core
    stats = RunStats(raw, (w, h), 1, mica.get_target("wse2"))
    summary = stats.summary()
    assert summary["cycles"] == 3 + MSG / 4 and summary["active_cores"] == 2
    assert summary["hottest_link"]["busy_cycles"] == MSG / 4
    assert len(repr(summary)) < 2000 and stats.sram_peak.max() == 256
