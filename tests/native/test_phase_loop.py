"""Phase loops: a sequential time loop run around the operators of its body, each mapped on its own, with the
layout changes between them inside the loop (mica.affine.repeat, Schedule.repeat, Loop.phase)."""

import numpy as np
import pytest

import mica
from mica.affine.repeat import repeat_candidates, repeated_program
from mica.errors import ScheduleError
from mica.meshir.ir import Loop
from mica.pipeline import LOWERING
from mica.targets import get_target
from mica.testing import run_c, run_program
from mica.tiling.operators import phase_loop_plan
from mica.lower.phases import loop_live_in
from mica.tiling.split import loop_carried, phase_operators

from samples import sweeps  # tests/ on the path


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    ins = {a: rng.uniform(-1, 1, prog.array(a).shape) for a in prog.inputs}
    ins.update({n: 0.5 for n, _ in prog.scalars})
    return ins


def test_a_time_loop_around_several_nests_is_a_candidate_and_its_body_runs_once():
    prog = mica.affine.from_c(sweeps(10, 3))
    (rep,) = repeat_candidates(prog)
    assert (rep.loop, rep.lo, rep.count) == ("t", 0, 3) and len(rep.statements) == 2
    body = repeated_program(prog, rep)
    assert [s.loops for s in body.statements] == [("i", "j"), ("i", "j")]
    assert len({s.order[0] for s in body.statements}) == 2          # two top-level nests now
    # Running the body three times, each on the last one's outputs, is running the program.
    ins = _inputs(prog)
    state = dict(ins)
    for _ in range(3):
        out = run_program(body, state)
        state.update({a: out[a] for a in prog.outputs})
    want = run_program(prog, ins)
    for a in prog.outputs:
        np.testing.assert_array_equal(state[a], want[a])


@pytest.mark.parametrize("src", [
    # the loop's value read in a subscript, in a bound, as a value; one nest in the body; one iteration
    "void f(double A[4][8]) { for (int t = 0; t < 4; t++) { for (int i = 0; i < 8; i++) A[t][i] = 1.0; "
    "for (int i = 0; i < 8; i++) A[t][i] += 2.0; } }",
    "void f(double A[8]) { for (int t = 0; t < 4; t++) { for (int i = 0; i < t; i++) A[i] += 1.0; "
    "for (int i = 0; i < 8; i++) A[i] *= 0.5; } }",
    "void f(double A[8]) { for (int t = 0; t < 4; t++) { for (int i = 0; i < 8; i++) A[i] += (double)t; "
    "for (int i = 0; i < 8; i++) A[i] *= 0.5; } }",
    "void f(double A[8]) { for (int t = 0; t < 4; t++) for (int i = 1; i < 8; i++) A[i] += A[i - 1]; }",
    "void f(double A[8]) { for (int t = 0; t < 1; t++) { for (int i = 0; i < 8; i++) A[i] += 1.0; "
    "for (int i = 0; i < 8; i++) A[i] *= 0.5; } }",
])
def test_loops_whose_value_the_body_reads_or_with_one_nest_are_not_candidates(src):
    assert repeat_candidates(mica.affine.from_c(src)) == ()


@pytest.mark.parametrize("n, steps, mesh", [(64, 3, (8, 8)), (61, 2, (5, 3)), (48, 2, (2, 7))])
def test_alternating_sweeps_too_large_for_a_core_run_in_a_phase_loop(n, steps, mesh):
    """Two sweeps wanting opposite layouts, their arrays (2 x 8 n^2 bytes) more than a core's 48 KB: the whole
    nest has no plan and one core cannot hold the data; the phase loop maps each sweep over its own dimension
    and changes the layouts between them, on the mesh, inside the loop."""
    src = sweeps(n, steps)
    cp = mica.compile_affine(src, mesh=mesh)
    assert cp.schedule.repeat and cp.schedule.repeat[:3] == (0, "t", steps)
    loops = [op for op in cp.mesh_program.body if isinstance(op, Loop) and op.phase]
    assert len(loops) == 1 and loops[0].count == steps
    assert "run 2 times" in str(cp.schedule) or f"run {steps} times" in str(cp.schedule)
    ins = _inputs(cp.program, n)
    res = cp.run(ins)
    want = run_c(src, "sweeps", ins)
    for a in ("u", "v"):
        np.testing.assert_array_equal(res.outputs[a], want[a])
    stats = res.stats.summary()
    assert stats["computing_cores"] == cp.cost.cores > 1
    # The model adds operators sharing cores (and so iterations) up; the emulator's per-core clocks let one
    # wavefront start on the first cores while the previous one drains on the last: the model is not
    # optimistic, and at most 30% above (25.5% on 2x7, where the fill and drain are longest per step).
    assert 0.95 <= cp.cost.total_cycles / stats["cycles"] <= 1.3


@pytest.mark.parametrize("fresh_v", [False, True])
def test_a_phase_loop_plan_of_a_small_program_matches_the_native_c_on_every_mesh(fresh_v):
    """At a size one core holds, the search keeps the cheaper whole-nest plans; the phase-loop plan, taken
    by hand, still computes the same thing bit for bit. Its iterations carry u (moved back to the layout the
    first sweep reads); v only when an iteration reads the previous one's (its row 0), not when each column
    sweep sets that row first."""
    src = sweeps(12, 3, fresh_v=fresh_v)
    prog = mica.affine.from_c(src)
    body = repeated_program(prog, repeat_candidates(prog)[0])
    ops = phase_operators(body, phase_loop_plan(prog, (4, 4), get_target("wse2"), LOWERING))
    assert len(ops) == (3 if fresh_v else 2)
    assert loop_live_in(body, ops, 0, len(ops)) == ({"u"} if fresh_v else {"u", "v"})
    assert loop_carried(ops, (0, "t", 3, 0, len(ops)), 0) == {"u", "v"}
    assert loop_carried(ops, (), 0) == frozenset()
    for mesh in ((4, 4), (3, 2), (2, 5)):
        sched = phase_loop_plan(prog, mesh, get_target("wse2"), LOWERING)
        cp = mica.compile_affine(prog, mesh=mesh, schedule=sched)
        ins = _inputs(prog, 1)
        got = cp.run(ins).outputs
        want = run_c(src, "sweeps", ins)
        for a in ("u", "v"):
            np.testing.assert_array_equal(got[a], want[a])
        assert "u_back_" in cp.meshir or cp.schedule.phases[-1].home("u") == cp.schedule.phases[-2].home("u")
        if fresh_v:
            assert "v_back_" not in cp.meshir


def test_a_program_without_such_a_loop_has_no_phase_loop_plan():
    prog = mica.affine.from_c("void f(double A[8]) { for (int i = 0; i < 8; i++) A[i] += 1.0; }")
    with pytest.raises(ScheduleError, match="no phase-loop plan"):
        phase_loop_plan(prog, (2, 2), get_target("wse2"), LOWERING)


def test_the_phase_loop_plan_round_trips_through_json_and_retargets():
    src = sweeps(64, 2)
    prog = mica.affine.from_c(src)
    sched = mica.compile_affine(prog, mesh=(8, 8)).schedule
    again = type(sched).from_json(sched.to_json())
    assert again == sched and again.repeat == sched.repeat == (0, "t", 2, 0, 2)
    cp = mica.compile_affine(prog, mesh=(8, 8), schedule=again)
    moved = cp.retarget((4, 4))
    assert moved.schedule.repeat == sched.repeat and moved.mesh == (4, 4)
    ins = _inputs(prog, 2)
    want = run_c(src, "sweeps", ins)
    for a in ("u", "v"):
        np.testing.assert_array_equal(moved.run(ins).outputs[a], want[a])


def test_the_back_ends_write_the_searched_phase_loop_and_side_by_side_false_plans_without_one():
    """The CSL and Metalium back ends write a phase loop as a loop around its operators (its variable in the
    slot the emulator gives it: what they compute is checked by executing them in tests/emit_csl and
    tests/emit_metalium, ``sweeps_phase``); ``side_by_side=False`` still plans without one."""
    import samples
    from mica.emit_csl import render as render_csl
    from mica.emit_metalium import render as render_metalium
    cp = mica.compile_affine(sweeps(90, 2, "float"), mesh=(8, 8))
    assert cp.schedule.repeat
    pe = render_csl(cp)["pe_program.csl"]
    assert "// for t_phase in 0..2" in pe and "// end of for t_phase" in pe
    tt = samples.phase_sweeps("wormhole", (4, 4), n=34, steps=2)
    assert tt.schedule.repeat
    reader = render_metalium(tt)["kernels/reader_c0.cpp"]
    assert "for (int32_t v_t_phase = 0; v_t_phase < 2; ++v_t_phase)" in reader
    src = sweeps(40, 2, "float")
    plain = mica.compile_affine(src, mesh=(4, 4), side_by_side=False)
    assert not plain.schedule.repeat
    ins = _inputs(plain.program, 4)
    ins = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) else v) for k, v in ins.items()}
    want = run_c(src, "sweeps", ins)
    np.testing.assert_allclose(plain.run(ins).outputs["u"], want["u"], rtol=1e-5, atol=1e-5)
