"""Operators side by side: a program placed away from core (0, 0), independent operators on disjoint
rectangles at the same time, and produced blocks moved between rectangles. Every run is compared with
numpy or with the same C compiled natively, and its modelled cycles with the emulator's."""

import dataclasses
import re

import numpy as np
import pytest

import mica
from mica.errors import ScheduleError
from mica.meshir.ir import Exchange, Shift
from mica.tiling.split import split_operators
from mica.lower.place import translate
from mica.meshir.verify import verify
from mica.pipeline import LOWERING
from mica.tiling.operators import map_operators
from mica.tiling.placement import scaled_place
from mica.testing import run_c, run_program
from mica.tiling.schedule import Schedule

import samples
from samples import mm3, mvt


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    return {a: rng.standard_normal(prog.array(a).shape).astype(np.float32 if prog.array(a).dtype == "f32"
                                                                else np.float64) for a in prog.inputs}


def _check_c(compiled, src, fn, params=None, rtol=1e-10):
    ins = _inputs(compiled.program)
    want = run_c(src, fn, {k: v.copy() for k, v in ins.items()}, params)
    res = compiled.run(ins)
    for name in compiled.program.outputs:
        np.testing.assert_allclose(res.outputs[name], want[name], rtol=rtol, atol=rtol)
    return res


def _placed(compiled, origin, mesh):
    """``compiled`` with its MeshIR moved to ``origin`` of ``mesh``."""
    mp = translate(compiled.mesh_program, origin, mesh)
    verify(mp, compiled.target)
    return dataclasses.replace(compiled, mesh_program=mp, schedule=compiled.schedule.copy(mesh=mesh))


def _gemv_plans():
    return [mica.plans.chain, mica.plans.ktree]


@pytest.mark.parametrize("build, origin, mesh", [
    (lambda: mica.compile_affine(mica.ops.matmul(13, 11, 9), mesh=(4, 4), search=False), (3, 2), (9, 7)),
    (lambda: mica.compile_affine(op := mica.ops.matmul(16, 12, 20), mesh=(4, 3),
                                 schedule=mica.plans.summa(op, (4, 3), buffers=2)), (0, 5), (4, 8)),
    (lambda: mica.compile_affine(op := mica.ops.gemv(37, 29), mesh=(4, 4), schedule=mica.plans.chain(op, (4, 4))),
     (2, 5), (7, 9)),
    (lambda: mica.compile_affine(op := mica.ops.gemv(37, 29), mesh=(6, 6), schedule=mica.plans.ktree(op, (6, 6))),
     (5, 1), (12, 7)),
])
def test_a_program_placed_away_from_core_0_computes_the_same(build, origin, mesh):
    """Every core does what the core ``origin`` before it did: same values, same modelled cycles and
    traffic; only the busiest core moved."""
    compiled = build()
    placed = _placed(compiled, origin, mesh)
    ins = _inputs(compiled.program)
    want = run_program(compiled.program, ins)
    before, after = compiled.run(ins), placed.run(ins)
    for name, value in after.outputs.items():
        np.testing.assert_allclose(value, want[name], rtol=1e-4, atol=1e-4)
        assert value.tobytes() == before.outputs[name].tobytes()
    assert after.stats.cycles == before.stats.cycles
    for key in ("messages", "deliveries", "link_bytes", "max_hops", "kernel_calls"):
        assert after.stats.summary()[key] == before.stats.summary()[key], key
    assert mica.tiling.cost.estimate(placed.mesh_program, placed.target).total_cycles == compiled.cost.total_cycles
    bx, by = before.stats.summary()["busiest_core"]["core"]
    assert after.stats.summary()["busiest_core"]["core"] == (bx + origin[0], by + origin[1])


def test_a_stencil_with_ghost_zones_placed_away_from_core_0():
    src = samples.jacobi_2d(14)
    prog = mica.affine.from_c(src, "jacobi", params={"tsteps": 3, "n": 14})
    compiled = mica.compile_affine(prog, mesh=(3, 3), schedule=mica.plans.halo(prog, (3, 3)))
    placed = _placed(compiled, (2, 1), (6, 5))
    ins = _inputs(prog)
    want = run_c(src, "jacobi", {k: v.copy() for k, v in ins.items()}, {"tsteps": 3, "n": 14})
    res = placed.run(ins)
    for name, value in want.items():
        assert res.outputs[name].tobytes() == value.tobytes()
    assert res.stats.cycles == compiled.run(ins).stats.cycles


def test_placing_refuses_what_it_cannot_move():
    op = mica.ops.matmul(16, 16, 16)
    ringed = mica.compile_affine(op, mesh=(4, 4), schedule=mica.plans.cannon(op, (4, 4)))
    with pytest.raises(ScheduleError, match="skewed plan"):
        translate(ringed.mesh_program, (1, 0), (5, 4))
    plain = mica.compile_affine(op, mesh=(4, 4), search=False)
    with pytest.raises(ScheduleError, match="do not fit"):
        translate(plain.mesh_program, (2, 0), (5, 4))


@pytest.mark.parametrize("n, mesh", [(40, (8, 8)), (24, (6, 4)), (19, (4, 7))])
def test_independent_operators_run_side_by_side(n, mesh):
    """mvt's two gemvs share no written array: on disjoint slabs they run at the same time; the search
    picks that when it is cheaper, and the emulator's clocks agree with the model."""
    src = mvt(n)
    compiled = mica.compile_affine(src, mesh=mesh)
    assert compiled.schedule.placed
    slabs = [(p.origin, p.mesh) for p in compiled.schedule.phases]
    (o0, s0), (o1, s1) = slabs
    axis = 0 if mesh[0] >= mesh[1] else 1
    assert o0 == (0, 0) and o1[axis] == s0[axis] and o1[axis] + s1[axis] == mesh[axis]
    assert "side by side" in compiled.explain()
    res = _check_c(compiled, src, "mvt")
    assert res.stats.cycles == pytest.approx(compiled.cost.total_cycles, rel=0.05)
    sequential = mica.compile_affine(src, mesh=mesh, side_by_side=False)
    assert not sequential.schedule.placed
    assert compiled.cost.total_cycles < sequential.cost.total_cycles
    assert res.stats.cycles < _check_c(sequential, src, "mvt").stats.cycles


def _moves(compiled):
    return [c for op, _ in compiled.mesh_program.walk() if isinstance(op, Exchange) for c in op.ops
            if isinstance(c, Shift) and " lane " in c.name]


@pytest.mark.parametrize("mesh", [(8, 4), (4, 8), (6, 3)])
@pytest.mark.parametrize("consumer", ["whole mesh", "second slab"])
def test_produced_blocks_move_to_the_consumers_rectangle(mesh, consumer):
    """3mm: E = AB and F = CD side by side, G = EF where one of them is not: its blocks ride a conveyor
    of one-hop shifts to the consumer's rectangle (towards core 0, or away from it)."""
    n = 12
    src = mm3(n)
    prog = mica.affine.from_c(src)
    axis = 0 if mesh[0] >= mesh[1] else 1
    half = mesh[axis] // 2
    first = ((0, 0), (half, mesh[1]) if axis == 0 else (mesh[0], half))
    second = ((half, 0), (mesh[0] - half, mesh[1])) if axis == 0 else ((0, half), (mesh[0], mesh[1] - half))
    last = ((0, 0), mesh) if consumer == "whole mesh" else second
    sched, _ = map_operators(prog, split_operators(prog), mesh, mica.get_target("wse2"), LOWERING,
                             places=[first, second, last])
    compiled = mica.compile_affine(prog, mesh=mesh, schedule=sched)
    moved = _moves(compiled)
    assert moved, "a conveyor moves the blocks of the array produced on the other slab"
    direction = {(0, "whole mesh"): "W", (1, "whole mesh"): "N", (0, "second slab"): "E", (1, "second slab"): "S"}
    assert {c.direction for c in moved} == {direction[axis, consumer]}
    assert {c.array for c in moved} == {"F" if consumer == "whole mesh" else "E"}
    res = _check_c(compiled, src, "mm3")
    assert res.stats.cycles == pytest.approx(compiled.cost.total_cycles, rel=0.1)
    assert res.stats.contended_messages == 0


def test_a_placed_schedule_round_trips_and_retargets():
    src = mvt(24)
    compiled = mica.compile_affine(src, mesh=(6, 4))
    assert compiled.schedule.placed
    back = Schedule.from_json(compiled.schedule.to_json())
    assert back == compiled.schedule and [p.origin for p in back.phases] == [p.origin for p in compiled.schedule.phases]
    again = mica.compile_affine(src, mesh=(6, 4), schedule=back)
    assert again.cost.total_cycles == compiled.cost.total_cycles
    bigger = compiled.retarget((12, 8))
    assert bigger.schedule.placed
    assert [(p.origin, p.mesh) for p in bigger.schedule.phases] == [
        scaled_place(p.origin, p.mesh, (6, 4), (12, 8)) for p in compiled.schedule.phases]
    _check_c(bigger, src, "mvt")
    print(compiled.schedule)
    assert "side by side" in str(compiled.schedule) and "on cores [" in str(compiled.schedule)


def test_back_ends_write_operators_placed_side_by_side(tmp_path):
    """CSL and Metalium emit a side-by-side plan (their execution is checked in tests/emit_csl and
    tests/emit_metalium): every buffer's box names the core that holds its block 0."""
    compiled = mica.compile_affine(mvt(24, "float"), mesh=(6, 4))
    assert compiled.schedule.placed
    origins = {d.origin for t in compiled.mesh_program.tensors for d in t.box}
    assert origins - {0}
    for kind in ("csl", "metalium"):
        assert compiled.emit(kind, tmp_path / kind)


def test_slabs_trimmed_to_their_operators_shorten_the_moves():
    """3mm on 12x6: E = A B and F = C D each work on 5 of their 6 columns; packed side by side from the
    mesh's edge (the decisions kept), the blocks G reads travel less, and the search takes that plan."""
    src = mm3(10)
    compiled = mica.compile_affine(src, mesh=(12, 6))
    text = compiled.explain()
    assert "slabs trimmed to their operators' cores), the others one after another" in text
    costs = {("trimmed" in ln): float(ln.split("cycles")[0].replace(",", "")) for ln in text.splitlines()
             if "side by side on" in ln and re.match(r"^\s+[\d,]+ cycles", ln)}
    assert costs[True] < costs[False] and compiled.cost.total_cycles == costs[True]
    assert [p.cores() for p in compiled.schedule.phases[:2]] == ["cores [0:5, 0:6]", "cores [5:10, 0:6]"]
    res = _check_c(compiled, src, "mm3")
    assert res.stats.cycles == pytest.approx(compiled.cost.total_cycles, rel=0.05)
