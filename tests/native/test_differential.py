"""Every builder op, compiled and run in the emulator, against numpy — over square, skinny and
non-divisible shapes, several meshes (including 1xN and Nx1), f32 and f64, and several thread counts."""

import numpy as np
import pytest

import mica
from mica.comm.traffic import declared_traffic

RTOL = {"f32": 1e-5, "f64": 1e-12}
NP = {"f32": np.float32, "f64": np.float64}


def _inputs(op, seed=0):
    rng = np.random.default_rng(seed)
    ins = {a: rng.standard_normal(op.array(a).shape).astype(NP[op.array(a).dtype]) for a in op.inputs}
    for name, _ in op.scalars:
        ins[name] = 0.75
    return ins


def _reference(op, ins):
    """numpy in float64, plus an elementwise bound on the rounding error of the computation."""
    f = {k: np.asarray(v, dtype=np.float64) for k, v in ins.items()}
    if op.name == "matmul":
        return {"C": f["A"] @ f["B"]}, {"C": np.abs(f["A"]) @ np.abs(f["B"])}
    if op.name == "gemv":
        return {"y": f["A"] @ f["x"]}, {"y": np.abs(f["A"]) @ np.abs(f["x"])}
    if op.name == "add":
        return {"C": f["A"] + f["B"]}, {"C": np.abs(f["A"]) + np.abs(f["B"])}
    if op.name == "mul":
        return {"C": f["A"] * f["B"]}, {"C": np.abs(f["A"] * f["B"])}
    if op.name == "scaled_add":
        return {"C": f["alpha"] * f["A"] + f["B"]}, {"C": abs(f["alpha"]) * np.abs(f["A"]) + np.abs(f["B"])}
    if op.name == "reduce_sum":
        red = op.statement("S1").loops
        kept = op.statement("S0").loops
        ax = next(d for d, lp in enumerate(red) if lp not in kept)
        return {"B": f["A"].sum(axis=ax)}, {"B": np.abs(f["A"]).sum(axis=ax)}
    raise AssertionError(op.name)


def check(op, mesh, threads=2, target="wse2", schedule=None):
    prog = mica.compile_affine(op, mesh=mesh, target=target, schedule=schedule)
    ins = _inputs(op)
    res = prog.run(ins, threads=threads)
    ref, scale = _reference(op, ins)
    assert set(res.outputs) == set(op.outputs)
    dtype = op.array(op.outputs[0]).dtype
    for name, want in ref.items():
        got = res.outputs[name]
        assert got.shape == want.shape and got.dtype == NP[dtype]
        bound = RTOL[dtype] * scale[name] + 1e-30
        err = np.abs(got.astype(np.float64) - want)
        assert np.all(err <= bound), f"{name}: max error {err.max()} > bound at {np.argmax(err - bound)}"
    return prog, res


CASES = [
    # (op, mesh)
    (lambda: mica.ops.matmul(64, 64, 64), (8, 8)),                 # square, divisible
    (lambda: mica.ops.matmul(100, 37, 53), (7, 5)),                # nothing divides
    (lambda: mica.ops.matmul(100, 37, 53), (1, 9)),                # a single column of cores
    (lambda: mica.ops.matmul(100, 37, 53), (9, 1)),                # a single row of cores
    (lambda: mica.ops.matmul(3, 200, 5), (6, 4)),                  # skinny: fewer rows than cores
    (lambda: mica.ops.matmul(1, 1, 1), (3, 3)),                    # one element
    (lambda: mica.ops.matmul(40, 24, 17, dtype="f64"), (5, 3)),
    (lambda: mica.ops.gemv(64, 48), (8, 4)),
    (lambda: mica.ops.gemv(37, 101), (6, 7)),                      # non-divisible, partial tiles
    (lambda: mica.ops.gemv(5, 300), (16, 16)),                     # very wide
    (lambda: mica.ops.gemv(33, 29, dtype="f64"), (1, 5)),
    (lambda: mica.ops.add((30, 20)), (4, 3)),
    (lambda: mica.ops.add(50), (7, 2)),
    (lambda: mica.ops.mul((17, 9), dtype="f64"), (5, 5)),
    (lambda: mica.ops.scaled_add((13, 27)), (3, 4)),
    (lambda: mica.ops.add((6, 5, 4)), (2, 3)),
    (lambda: mica.ops.reduce_sum((30, 20), axis=1), (4, 3)),
    (lambda: mica.ops.reduce_sum((30, 20), axis=0), (4, 3)),
    (lambda: mica.ops.reduce_sum(50), (6, 2)),
    (lambda: mica.ops.reduce_sum((11, 7), axis=1, dtype="f64"), (7, 1)),
]


@pytest.mark.parametrize("build, mesh", CASES, ids=lambda v: str(v) if isinstance(v, tuple) else None)
def test_matches_numpy(build, mesh):
    check(build(), mesh)


@pytest.mark.parametrize("build, mesh", [CASES[1], CASES[8], CASES[17]])
def test_bit_identical_for_any_thread_count(build, mesh):
    op = build()
    prog = mica.compile_affine(op, mesh=mesh)
    ins = _inputs(op, seed=3)
    runs = [prog.run(ins, threads=n) for n in (1, 2, 4)]
    for r in runs[1:]:
        for name in op.outputs:
            assert r.outputs[name].tobytes() == runs[0].outputs[name].tobytes()
        assert np.array_equal(r.stats.link_bytes, runs[0].stats.link_bytes)
        assert r.stats.messages == runs[0].stats.messages


def test_bit_identical_threads_on_a_mesh_every_thread_works_on():
    op = mica.ops.matmul(96, 80, 64)
    prog = mica.compile_affine(op, mesh=(40, 48))
    ins = _inputs(op, seed=5)
    a = prog.run(ins, threads=1)
    b = prog.run(ins, threads=4)
    assert a.outputs["C"].tobytes() == b.outputs["C"].tobytes()
    assert np.array_equal(a.stats.link_bytes, b.stats.link_bytes)


@pytest.mark.parametrize("build, mesh", CASES, ids=lambda v: str(v) if isinstance(v, tuple) else None)
def test_measured_traffic_equals_declared(build, mesh):
    """Per link, the emulator's byte and message counts are exactly what comm/'s ops declare, and no
    message travels further than the plan declares."""
    op = build()
    prog = mica.compile_affine(op, mesh=mesh)
    res = prog.run(_inputs(op), threads=2)
    want = declared_traffic(prog.mesh_program)
    assert np.array_equal(res.stats.link_bytes, want.link_bytes)
    assert np.array_equal(res.stats.link_messages, want.link_messages)
    assert res.stats.messages == want.messages
    assert res.stats.max_hops == want.max_hops
    declared_hops = max([c.max_hops for op_, _ in prog.mesh_program.walk() for c in getattr(op_, "ops", ())]
                        or [0])
    assert res.stats.max_hops <= declared_hops


def test_matmul_uses_real_multicasts():
    op = mica.ops.matmul(64, 48, 40)
    prog = mica.compile_affine(op, mesh=(8, 6), schedule=mica.plans.summa(op, (8, 6)))
    res = prog.run(_inputs(op))
    np.testing.assert_allclose(res.outputs["C"], _reference(op, _inputs(op))[0]["C"], rtol=1e-4, atol=1e-4)
    text = prog.meshir
    assert "multicast A -> A_recv along x from root x = t" in text
    assert "multicast B -> B_recv along y from root y = t" in text
    # Every step moves the panels over the fabric: at least (width - 1) links per row per step.
    assert res.stats.link_bytes.sum() > 0 and res.stats.max_hops == 7


def test_run_on_a_smaller_mesh_reuses_the_plan():
    op = mica.ops.matmul(96, 96, 96)
    big = mica.compile_affine(op, mesh=(750, 994))
    small = big.retarget((12, 8))
    assert [(s.loop, s.axis) for s in small.schedule.space] == [(s.loop, s.axis) for s in big.schedule.space]
    ins = _inputs(op)
    res = big.run(ins, mesh=(12, 8))
    np.testing.assert_allclose(res.outputs["C"], ins["A"].astype(np.float64) @ ins["B"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["wse3", "wormhole", "blackhole", "generic"])
def test_other_targets(target):
    check(mica.ops.matmul(20, 30, 10), (4, 4), target=target)


PLAN_CASES = [
    ("summa", lambda: mica.ops.matmul(100, 37, 53), (7, 5)),
    ("cannon", lambda: mica.ops.matmul(100, 37, 53), (7, 7)),
    ("interleaved", lambda: mica.ops.matmul(100, 37, 53), (7, 7)),
    ("cannon", lambda: mica.ops.matmul(10, 9, 11), (5, 6)),
    ("interleaved", lambda: mica.ops.matmul(10, 9, 11), (6, 5)),
    ("interleaved", lambda: mica.ops.matmul(64, 64, 64, dtype="f64"), (8, 8)),
    ("interleaved", lambda: mica.ops.matmul(5, 3, 2), (4, 4)),       # more cores than blocks: idle steps
    ("chain", lambda: mica.ops.gemv(37, 101), (13, 5)),
    ("ktree", lambda: mica.ops.gemv(37, 101), (13, 5)),
    ("ktree", lambda: mica.ops.gemv(20, 300), (16, 16)),
    ("ktree", lambda: mica.ops.reduce_sum((30, 50), axis=0), (6, 7)),
]


@pytest.mark.parametrize("plan, build, mesh", PLAN_CASES, ids=[f"{p}-{m}" for p, _, m in PLAN_CASES])
def test_reference_plans_match_numpy_and_declared_traffic(plan, build, mesh):
    op = build()
    prog, res = check(op, mesh, schedule=mica.plans.REFERENCE_PLANS[plan](op, mesh))
    assert prog.schedule.name.startswith(plan)
    want = declared_traffic(prog.mesh_program)
    assert np.array_equal(res.stats.link_bytes, want.link_bytes)
    assert res.stats.max_hops == want.max_hops


def test_interleaved_rings_never_travel_more_than_two_hops():
    op = mica.ops.matmul(48, 48, 48)
    prog, res = check(op, (12, 12), schedule=mica.plans.interleaved(op, (12, 12)))
    assert res.stats.max_hops == 2
    cannon, res_c = check(op, (12, 12), schedule=mica.plans.cannon(op, (12, 12)))
    assert res_c.stats.max_hops == 11                    # the wrap-around crosses the whole line
