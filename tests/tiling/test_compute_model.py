"""The compute model's overheads (issue 19, item 1): a kernel call's task activation, a vector operation's setup,
vector width with its remainders and the SRAM bandwidth, charged the same by the cost model and the emulator's
work functions; small tiles pay them, long vectors hardly notice them; a kernel outside the loop its domain names
is charged its instances (it was charged none); the cost prints its breakdown per term."""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
import sys
from pathlib import Path

import islpy as isl
import numpy as np
import pytest

import mica
from mica.affine.isl_names import count_points, iset
from mica.errors import TargetError
from mica.meshir.ir import Compute
from mica.targets import NP_DTYPES, get_target
from mica.tiling.cost import (_compute_cycles, call_cycles, element_cycles, innermost_loop, instance_cycles,
                              vector_sets)

WSE2 = get_target("wse2")


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(prog.program.array(n).shape).astype(NP_DTYPES[prog.program.array(n).dtype])
            for n in prog.program.inputs}


def _per_core_model(prog) -> np.ndarray:
    """Each core's compute cycles as the model charges them (:func:`call_cycles` per call, every call)."""
    mp = prog.mesh_program
    w, h = mp.mesh
    out = np.zeros((h, w))
    for op, scope in mp.walk():
        if not isinstance(op, Compute):
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
                        if r.x0 <= x < r.x1 and r.y0 <= y < r.y1:
                            fix = {"__x": x, "__y": y, **{"__" + v: val for v, val in env.items()}}
                            out[y, x] += call_cycles(mp, k, prog.target, fix)
    return out


def test_wse_constants_are_cited_figures():
    """The widths are the FLOP rates' SIMD widths (2 FLOP per FMAC lane); the SRAM ports are HC34's."""
    for dt in ("f16", "f32"):
        assert WSE2.flops(dt) == 2 * WSE2.lanes(dt)
    assert WSE2.lanes("bf16") == WSE2.lanes("f16") and WSE2.lanes("i32") == WSE2.lanes("f32")
    assert (WSE2.sram_read_bytes_per_cycle, WSE2.sram_write_bytes_per_cycle) == (16.0, 8.0)
    assert WSE2.has_compute_overheads and not get_target("generic").has_compute_overheads
    assert not WSE2.without_compute_overheads().has_compute_overheads


def test_target_checks_and_pickles_the_compute_constants():
    with pytest.raises(TargetError):
        dataclasses.replace(WSE2, vector_op_cycles=-1.0)
    with pytest.raises(TargetError):
        dataclasses.replace(WSE2, vector_width={"f16": 0})
    t = pickle.loads(pickle.dumps(WSE2))
    assert t == WSE2 and t.lanes("f16") == 4
    # A target pickled before the compute constants existed loads with their defaults (none).
    state = WSE2.__getstate__()
    for f in ("call_cycles", "vector_op_cycles", "vector_width", "sram_read_bytes_per_cycle",
              "sram_write_bytes_per_cycle"):
        state.pop(f)
    old = object.__new__(type(WSE2))
    old.__setstate__(state)
    assert not old.has_compute_overheads


def test_vector_sets_count_operations_and_issues_with_remainders():
    dom = "[__x] -> { S[i, j] : 0 <= i < 3 and 0 <= j < 10 + __x }"
    ops, chunks = vector_sets(dom, "j", 4)
    assert count_points(ops, {"__x": 0}) == 3                 # one vector op per run of j
    assert count_points(chunks, {"__x": 0}) == 3 * 3          # ceil(10 / 4) issues per run
    assert count_points(chunks, {"__x": 2}) == 3 * 3          # 12 elements: exactly 3
    assert count_points(chunks, {"__x": 3}) == 3 * 4          # 13: the remainder pays a whole issue
    ops, chunks = vector_sets(dom, "i", 4)                    # innermost i: 10 runs of 3
    assert count_points(ops, {"__x": 0}) == 10 and count_points(chunks, {"__x": 0}) == 10
    ops, chunks = vector_sets(dom, "j", 1)
    assert count_points(chunks, {"__x": 0}) == 30


def test_small_tiles_pay_their_overheads_in_model_and_emulator():
    """A 60x62 f16 add on 4x4 cores: 15 runs of 16 (or 14) elements per core. Each run pays its setup and a
    4-wide issue per 4 elements (14 elements: 4 issues, the remainder whole), each call its activation; the
    emulator's compute clock is exactly the model's per core."""
    prog = mica.compile_affine(mica.ops.add((60, 62), "f16"), mesh=(4, 4), target="wse2")
    res = prog.run(_inputs(prog), threads=2)
    want = 10.0 + 15 * 4.0 + 15 * 4 * 1.0          # call + 15 vector ops + 60 issues of 4 elements at 1 cycle
    model = _per_core_model(prog)
    np.testing.assert_array_equal(res.stats.core_compute, model)
    assert model.max() == want and prog.cost.compute_cycles == want
    arith = 15 * 16 * instance_cycles(prog.mesh_program, prog.mesh_program.kernels[0].statements[0], WSE2)
    assert prog.cost.arith_cycles == arith == 30.0
    assert prog.cost.overhead_cycles == want - arith > arith          # small tiles: overheads dominate
    ideal = mica.compile_affine(mica.ops.add((60, 62), "f16"), mesh=(4, 4), target=WSE2.without_compute_overheads(),
                                schedule=prog.schedule)
    assert ideal.cost.compute_cycles == ideal.cost.arith_cycles == arith
    assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=0.1)


def test_long_vectors_are_hardly_affected():
    """One core adding two 2048-element f32 vectors: one vector operation and one call on 1,024 cycles of
    arithmetic, model and emulator alike."""
    prog = mica.compile_affine(mica.ops.add((2048,)), mesh=(1, 1), target="wse2")
    res = prog.run(_inputs(prog))
    c = prog.cost
    assert c.arith_cycles == 1024.0
    assert c.overhead_cycles == WSE2.vector_op_cycles + WSE2.call_cycles
    assert c.overhead_cycles / c.compute_cycles < 0.02
    assert res.stats.core_compute.max() == c.compute_cycles


def test_matmul_tiles_agree_with_the_emulator_per_core():
    """A 96^3 f16 SUMMA on 4x4 (24x24x24 blocks per step): the emulator's compute clock equals the model's
    call cycles on every core, and shrinking the tiles (more cores, same matrix) raises the overhead share."""
    op = mica.ops.matmul(96, 96, 96, "f16")
    shares = []
    for mesh in ((2, 2), (4, 4)):
        prog = mica.compile_affine(op, mesh=mesh, target="wse2", schedule=mica.plans.summa(op, mesh))
        res = prog.run(_inputs(prog), threads=2)
        np.testing.assert_array_equal(res.stats.core_compute, _per_core_model(prog))
        assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=0.02)
        shares.append(prog.cost.overhead_cycles / prog.cost.compute_cycles)
    assert shares[1] > shares[0] > 0


def test_sram_bandwidth_limits_a_statement_streaming_three_operands():
    """f16 ``D = A + B + C``: 6 bytes read per element against 16 B/cycle is 0.375 cycles, more than its 2 FLOP
    at 8 FLOP/cycle; an f16 FMAC (two streamed reads, one write) stays at its FLOP rate."""
    src = """
void f(_Float16 A[64], _Float16 B[64], _Float16 C[64], _Float16 D[64]) {
  for (int i = 0; i < 64; i++) D[i] = A[i] + B[i] + C[i];
}"""
    prog = mica.compile_affine(mica.affine.from_c(src), mesh=(1, 1), target="wse2")
    mp = prog.mesh_program
    part = next(p for k in mp.kernels for p in k.statements if p.write.buffer == "D")
    assert innermost_loop(part) is not None
    assert instance_cycles(mp, part, WSE2) == 0.25
    assert element_cycles(mp, part, WSE2) == 6 / 16
    mm = mica.compile_affine(mica.ops.matmul(8, 8, 8, "f16"), mesh=(1, 1), target="wse2")
    fmac = next(p for k in mm.mesh_program.kernels for p in k.statements if p.flops_per_instance == 2)
    assert element_cycles(mm.mesh_program, fmac, WSE2) == instance_cycles(mm.mesh_program, fmac, WSE2) == 0.25


def test_kernel_outside_its_step_loop_is_charged_its_instances():
    """The decode layer on WSE-2 8x8 transposes a vector on the mesh; its transpose-load kernels run outside any
    step loop but their domains declare ``__t`` without bounding it. isl counts a free parameter as a dimension
    (0 points for an unbounded one), so the model used to charge them nothing; they run at t = 0, as the
    emulator calls them."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "native"))
    from test_decode_layer import LAYER
    prog = mica.compile_affine(mica.affine.from_c(LAYER), mesh=(8, 8), target="wse2")
    mp = prog.mesh_program
    free = []
    for op, scope in mp.walk():
        if isinstance(op, Compute) and "t" not in dict(scope):
            k = mp.kernel(op.kernel)
            for part in k.statements:
                dom = iset(part.domain)
                pos = dom.find_dim_by_name(isl.dim_type.param, "__t")
                if pos >= 0 and dom.plain_get_val_if_fixed(isl.dim_type.param, pos).is_nan():
                    free.append((op, scope, k, part))
    assert free, "the decode layer no longer has a kernel with a free __t (find another case)"
    for op, scope, k, part in free:
        cls = k.classes[0]
        fix = {"__x": cls.region.x0, "__y": cls.region.y0}
        busy = [(x, y) for x in range(cls.region.x0, cls.region.x1) for y in range(cls.region.y0, cls.region.y1)
                if count_points(iset(part.domain), {"__x": x, "__y": y, "__t": 0})]
        if busy:
            assert count_points(iset(part.domain), {"__x": busy[0][0], "__y": busy[0][1]}) == 0   # the old count
            assert _compute_cycles(mp, op, scope, WSE2) > 0
        assert call_cycles(mp, k, WSE2, fix) >= 0
    res = prog.run(_inputs(prog), threads=2)
    np.testing.assert_array_equal(res.stats.core_compute, _per_core_model(prog))
    assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=0.1)


def test_cost_prints_its_breakdown_per_term():
    prog = mica.compile_affine(mica.ops.matmul(96, 96, 96), mesh=(4, 4), target="wse2")
    c = prog.cost
    text = str(c)
    assert "arithmetic" in text and "overheads" in text
    assert c.arith_cycles + c.overhead_cycles == pytest.approx(c.compute_cycles)
    assert c.fabric_cycles + c.dram_cycles == pytest.approx(c.comm_cycles)
    terms = dict(c.terms())
    assert terms["compute"] + terms["communication"] == pytest.approx(c.total_cycles)
    table = c.breakdown()
    for name in ("arithmetic", "overheads", "fabric", "DRAM", "hidden behind compute"):
        assert name in table
    assert "modelled cycles by term" in prog.explain()
    d = c.as_dict()
    assert d["arith_cycles"] == c.arith_cycles and d["overhead_cycles"] == c.overhead_cycles
    # The generic target has no compute overheads: compute is all arithmetic.
    g = mica.compile_affine(mica.ops.matmul(96, 96, 96), mesh=(4, 4), target="generic").cost
    assert g.overhead_cycles == 0 and g.arith_cycles == g.compute_cycles > 0
    assert math.isfinite(c.seconds)
