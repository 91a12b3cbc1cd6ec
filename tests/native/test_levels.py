"""Reductions across cores combined as multi-level trees (``reduce="levels"``: chains in groups of a fan-in,
then in groups of their roots, level by level; fan-in 2 is a binary tree of ceil(log2 n) stages), against numpy
and the natively compiled C, on meshes whose reduced lines are not powers of the fan-in."""

from dataclasses import replace

import numpy as np
import pytest

import mica
from mica.comm.traffic import declared_traffic
from mica.meshir.ir import Shift
from mica.testing import assert_matches, run_c
from mica.tiling.schedule import Schedule
from mica.tiling.search import reduction_hops, reduction_levels, reduction_stages

from native.test_differential import check
from native.test_minmax_programs import ARGMIN, ATTENTION, ROW_MAX, _inputs


def test_the_levels_of_each_way_of_combining():
    assert reduction_levels("chain", 0, 512) == [(1, 511)]
    assert reduction_levels("tree", 16, 512) == [(1, 15), (16, 31)]
    assert reduction_levels("levels", 2, 512) == [(2 ** j, 1) for j in range(9)]
    assert reduction_levels("levels", 4, 300) == [(1, 3), (4, 3), (16, 3), (64, 3), (256, 1)]
    assert reduction_levels("levels", 3, 10) == [(1, 2), (3, 2), (9, 1)]
    assert reduction_levels("levels", 2, 1) == []
    for reduce, group in (("chain", 0), ("tree", 5), ("levels", 2), ("levels", 3), ("levels", 8)):
        for n in (2, 7, 64, 100, 745):
            assert reduction_hops(reduce, group, n) >= n - 1          # the last core's partial reaches 0
    assert reduction_hops("levels", 2, 512) == reduction_hops("chain", 0, 512) == 511
    assert reduction_hops("levels", 2, 7) == 1 + 2 + 4 and reduction_hops("tree", 5, 7) == 4 + 5
    assert reduction_stages("levels", 2, 745) == 10 < reduction_stages("tree", 27, 745) == 26 + 27


@pytest.mark.parametrize("build, mesh, fanin", [
    (lambda: mica.ops.gemv(37, 101), (13, 5), 2),
    (lambda: mica.ops.gemv(20, 300), (16, 16), 2),
    (lambda: mica.ops.gemv(20, 300), (16, 16), 3),
    (lambda: mica.ops.gemv(64, 64), (7, 9), 4),
    (lambda: mica.ops.reduce_sum((30, 50), axis=0), (6, 7), 2),
    (lambda: mica.ops.reduce_sum((30, 50), axis=1), (11, 3), 3),
    (lambda: mica.ops.gemv(16, 64), (8, 2), 2),
])
def test_levels_plans_match_numpy_and_declared_traffic(build, mesh, fanin):
    op = build()
    sched = mica.plans.levels(op, mesh, fanin)
    assert sched.reduce == "levels" and sched.group == fanin and sched.name == f"levels{fanin}"
    prog, res = check(op, mesh, schedule=sched)
    want = declared_traffic(prog.mesh_program)
    assert np.array_equal(res.stats.link_bytes, want.link_bytes)
    assert res.stats.max_hops == want.max_hops
    assert res.stats.summary()["computing_cores"] == prog.cost.cores
    # The model charges every stage its whole shift after the stage before; a core with no partner at a lower
    # level (a partial group: the line is not a power of the fan-in) sends its next level's partial early in
    # the emulator, which hides that shift's hops: the model is exact for full trees, a little over otherwise.
    emulated = res.stats.summary()["cycles"]
    assert emulated <= prog.cost.total_cycles <= 1.05 * emulated


def test_a_binary_tree_shifts_twice_as_far_at_each_level():
    op = mica.ops.gemv(16, 256)
    prog = mica.compile_affine(op, mesh=(16, 2), schedule=mica.plans.levels(op, (16, 2)))
    shifts = [c for o, _ in prog.mesh_program.walk() if hasattr(o, "ops") for c in o.ops if isinstance(c, Shift)]
    assert [c.distance for c in shifts] == [1, 2, 4, 8]
    # a level whose senders are every 2**(j+1)-th core passes through the routers between on the senders'
    # stride; the last level has one sender per line
    assert [c.senders.xs for c in shifts] == [2, 4, 8, 1]
    mid = [r for r in shifts[2].routes if r.rx == ("E",) and r.tx == ("W",)]
    assert len(mid) == 3 and all(r.rect.xs == 8 for r in mid)
    # fewer stages than the best two-level tree, so fewer modelled cycles on this line
    ktree = mica.compile_affine(op, mesh=(16, 2), schedule=mica.plans.ktree(op, (16, 2)))
    assert prog.cost.total_cycles < ktree.cost.total_cycles


def test_a_levels_plan_round_trips_and_retargets():
    op = mica.ops.gemv(40, 200)
    prog = mica.compile_affine(op, mesh=(10, 4), schedule=mica.plans.levels(op, (10, 4), 3))
    back = Schedule.from_json(prog.schedule.to_json())
    assert back == prog.schedule
    assert "cross-core reductions: 3-ary tree" in str(prog.schedule)
    for mesh in ((7, 3), (1, 5), (13, 2)):
        moved = prog.retarget(mesh)
        assert moved.schedule.reduce == "levels" and moved.schedule.group == 3
        ins = {"A": np.random.default_rng(1).standard_normal((40, 200)).astype(np.float32),
               "x": np.random.default_rng(2).standard_normal(200).astype(np.float32)}
        np.testing.assert_allclose(moved.run(ins).outputs["y"], ins["A"].astype(np.float64) @ ins["x"],
                                   rtol=1e-4, atol=1e-4)


def _as_levels(sched: Schedule, fanin: int) -> Schedule:
    """``sched`` with every phase's cross-core reductions combined as a ``fanin``-ary tree."""
    if sched.phases:
        return sched.copy(phases=tuple(_as_levels(p, fanin) for p in sched.phases))
    return replace(sched, reduce="levels", group=fanin)


@pytest.mark.parametrize("mesh", [(8, 8), (5, 3), (7, 6)])
def test_arg_min_pairs_keep_the_first_index_through_a_binary_tree(mesh):
    params = {"N": 150, "D": 6}
    ins = _inputs("argmin", params)
    searched = mica.compile_affine(ARGMIN, mesh=mesh, target="generic", params=params)
    prog = mica.compile_affine(ARGMIN, mesh=mesh, target="generic", params=params,
                               schedule=_as_levels(searched.schedule, 2))
    assert "level 1" in prog.meshir and "reduce_best_idx" in prog.meshir
    assert_matches(prog.run(ins).outputs, run_c(ARGMIN, None, ins, params), rtol=0, atol=0)
    ties = {"x": np.zeros(6, np.float32), "V": np.ones((150, 6), np.float32)}
    ties["V"][[20, 77, 140]] = 0.0                       # equal minima on different cores
    out = prog.run(ties).outputs
    assert out["idx"][0] == 20 and run_c(ARGMIN, None, ties, params)["idx"][0] == 20


@pytest.mark.parametrize("name, src, params, mesh", [
    ("row_max", ROW_MAX, {"N": 5, "M": 97}, (9, 4)),
    ("attention", ATTENTION, {"H": 2, "L": 70, "D": 12}, (8, 8)),
])
def test_max_and_sums_through_four_ary_trees(name, src, params, mesh):
    ins = _inputs(name, params)
    searched = mica.compile_affine(src, mesh=mesh, target="generic", params=params)
    prog = mica.compile_affine(src, mesh=mesh, target="generic", params=params,
                               schedule=_as_levels(searched.schedule, 4))
    assert_matches(prog.run(ins).outputs, run_c(src, None, ins, params), rtol=2e-5 if name == "attention" else 0,
                   atol=1e-6)
