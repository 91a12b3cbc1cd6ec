"""Double buffering of received panels: the schedule knob, its MeshIR (prefetched exchanges, second
slots in the arena), the verifier's legality check, the cost model's overlap and the search's choice."""

from dataclasses import replace

import pytest

import mica
from mica.errors import MeshIRError, ScheduleError, SramError
from mica.meshir.ir import Exchange, Loop
from mica.meshir.verify import verify
from mica.tiling.schedule import Schedule, StepMap, with_buffers
from mica.pipeline import LOWERING
from mica.tiling.search import Decisions, evaluate, search

WSE2 = mica.get_target("wse2")


def _prog(plan, n=64, mesh=(4, 4), buffers=2, target="wse2"):
    op = mica.ops.matmul(n, n, n)
    return mica.compile_affine(op, mesh=mesh, target=target,
                               schedule=mica.plans.REFERENCE_PLANS[plan](op, mesh, buffers=buffers))


def _exchanges(mp):
    return [op for op, _ in mp.walk() if isinstance(op, Exchange)]


# -- the schedule knob -----------------------------------------------------------------------------

@pytest.mark.parametrize("plan", ["summa", "cannon", "interleaved"])
def test_buffers_round_trip_through_json_and_show_in_str_and_explain(plan):
    op = mica.ops.matmul(64, 64, 64)
    s = mica.plans.REFERENCE_PLANS[plan](op, (4, 4), buffers=2)
    assert s.step.buffers == 2 and s.buffers == 2 and s.name == f"{plan}+db"
    back = Schedule.from_json(s.to_json())
    assert back == s and back.step.buffers == 2
    assert "double-buffered panels" in str(s)
    assert "double buffering" in s.explain()
    single = mica.plans.REFERENCE_PLANS[plan](op, (4, 4))
    assert single.step.buffers == 1 and "double" not in str(single) and "double" not in single.explain()
    assert with_buffers(s, 1).step == single.step


def test_old_schedule_json_without_buffers_loads_single_buffered():
    s = mica.plans.summa(mica.ops.matmul(32, 32, 32), (4, 4))
    text = s.to_json().replace('"buffers": 1,', "")
    assert '"buffers"' not in text
    assert Schedule.from_json(text).step.buffers == 1


def test_bad_buffer_counts_and_sweeps_are_schedule_errors():
    with pytest.raises(ScheduleError, match="buffers must be 1"):
        StepMap("k", 4, 4, buffers=3)
    with pytest.raises(ScheduleError, match="sweep.*cannot be double-buffered"):
        StepMap("t", 1, 4, sweep=True, buffers=2)
    gemv = mica.ops.gemv(64, 64)
    with pytest.raises(ScheduleError, match="no step loop"):
        mica.plans.summa(gemv, (4, 4), buffers=2)


def test_derive_schedule_like_keeps_double_buffering_on_another_mesh():
    from mica.tiling.mapping import derive_schedule
    op = mica.ops.matmul(64, 64, 64)
    s = mica.plans.interleaved(op, (4, 4), buffers=2)
    again = derive_schedule(op, (2, 2), like=s)
    assert again.step.buffers == 2 and again.step.steps == 2


# -- MeshIR -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("plan,dsts", [("summa", {"A_recv", "B_recv"}), ("cannon", {"A_ring", "B_ring"}),
                                       ("interleaved", {"A_ring", "B_ring"})])
def test_panel_exchanges_are_prefetched_into_second_slots_counted_in_the_arena(plan, dsts):
    single, double = _prog(plan, buffers=1).mesh_program, _prog(plan).mesh_program
    pre = [x for x in _exchanges(double) if x.prefetch]
    assert pre and not any(x.prefetch for x in _exchanges(single))
    assert {c.dst for x in pre for c in x.ops} == dsts
    slots = {t.name: t.slots for t in double.tensors}
    assert {n for n, k in slots.items() if k == 2} == dsts
    # The second slots are real SRAM: the arena grows by exactly one aligned panel per double buffer.
    extra = sum(double.tensor(n).alloc_bytes // 2 for n in dsts)
    assert double.arena_bytes == single.arena_bytes + extra
    for t in double.tensors:
        assert t.offset + t.alloc_bytes <= double.arena_bytes
    text = str(_prog(plan).meshir)
    assert "prefetched: issued when the previous step's compute starts" in text
    assert "x 2 slots (double buffer" in text


def test_a_reduction_spread_over_cores_has_no_panels_to_double_buffer():
    """Matmul with its reduction loop k on the mesh: partial sums combined by a chain of shifts whose
    accumulate writes them — nothing is stepped, so double buffering is refused, not silently ignored."""
    from mica.tiling.mapping import derive_schedule
    op = mica.ops.matmul(32, 32, 32)
    with pytest.raises(ScheduleError, match="no step loop"):
        derive_schedule(op, (4, 4), assignment=[("i", "y"), ("k", "x")], buffers=2)


def _mark_reduction_prefetched(mp):
    body = []
    for op in mp.body:
        if isinstance(op, Loop) and op.var == "s":
            op = replace(op, body=tuple(replace(x, prefetch=True) if isinstance(x, Exchange) else x
                                        for x in op.body))
        body.append(op)
    tensors = tuple(replace(t, slots=2) if t.role == "recv" else t for t in mp.tensors)
    return replace(mp, body=tuple(body), tensors=tuple(tensors),
                   arena_bytes=mp.arena_bytes + sum(t.alloc_bytes for t in tensors))


def test_verifier_rejects_prefetching_data_the_overlapped_compute_writes():
    op = mica.ops.gemv(64, 64)
    mp = mica.compile_affine(op, mesh=(4, 4), schedule=mica.plans.chain(op, (4, 4))).mesh_program
    verify(mp, WSE2)
    bad = _mark_reduction_prefetched(mp)
    with pytest.raises(MeshIRError, match=r"reduce_y.*prefetched, but compute k_accx_y of loop s writes y"):
        verify(bad, WSE2)


def test_verifier_rejects_a_prefetch_without_a_second_slot_or_outside_a_loop():
    mp = _prog("summa").mesh_program
    one_slot = replace(mp, tensors=tuple(replace(t, slots=1) for t in mp.tensors))
    with pytest.raises(MeshIRError, match="prefetched into A_recv, which has no second slot"):
        verify(one_slot, WSE2)
    loop = next(op for op in mp.body if isinstance(op, Loop))
    hoisted = replace(mp, body=tuple(x for op in mp.body for x in ((loop.body[0], op) if op is loop else (op,))))
    with pytest.raises(MeshIRError, match="not inside a loop"):
        verify(hoisted, WSE2)


# -- cost model -------------------------------------------------------------------------------------

@pytest.mark.parametrize("plan", ["summa", "cannon", "interleaved"])
def test_model_hides_communication_behind_compute(plan):
    single, double = _prog(plan, n=96, buffers=1).cost, _prog(plan, n=96).cost
    assert double.compute_cycles == single.compute_cycles
    assert double.total_cycles < single.total_cycles
    assert double.hidden_cycles > 0 and single.hidden_cycles == 0
    # Compute-bound: after the first step every exchange hides behind a step's compute.
    if plan == "summa":
        first = single.comm_cycles - double.hidden_cycles
        assert double.comm_cycles == pytest.approx(first)
    else:
        assert double.comm_cycles == 0          # rings exchange only after step 0: nothing exposed
    assert "hidden behind compute by double buffering" in str(double)


def test_comm_bound_steps_still_pay_what_compute_cannot_hide():
    """96^3 on 32x32: 3x3 tiles, a step's compute is shorter than its exchange."""
    c = _prog("summa", n=96, mesh=(32, 32)).cost
    assert c.comm_cycles > 0 and c.hidden_cycles > 0
    assert c.total_cycles < _prog("summa", n=96, mesh=(32, 32), buffers=1).cost.total_cycles


# -- search -----------------------------------------------------------------------------------------

def test_search_chooses_a_double_buffered_plan_when_it_pays_and_fits():
    op = mica.ops.matmul(64, 64, 64)
    sched, report = search(op, (4, 4), WSE2, LOWERING)
    assert sched.step.buffers == 2
    assert report.best.decisions.buffers == 2 and "double-buffered" in report.best.decisions.describe()
    single = [c for c in report.candidates if c.cycles is not None and c.decisions.buffers == 1]
    assert single and all(c.cycles > report.best.cycles for c in single)
    assert "double buffering" in sched.explain()


def test_search_rejects_double_buffers_beyond_the_sram_and_keeps_the_single_buffered_plan():
    """176^3 on 4x4, SUMMA: 44x44 f32 tiles; A, B, C and two receive panels fit 48 KB (38,720 B), two
    more panels for the second slots do not (54,208 B)."""
    op = mica.ops.matmul(176, 176, 176)
    d1 = Decisions((("i", "y"), ("j", "x")), (("x", 4), ("y", 4)))
    d2 = replace(d1, buffers=2)
    one, two = evaluate(op, (4, 4), WSE2, d1, LOWERING), evaluate(op, (4, 4), WSE2, d2, LOWERING)
    assert one.cycles is not None and one.cost.sram_bytes <= WSE2.sram_bytes
    assert two.cycles is None
    assert two.rejected == "SramError: the double buffers (a second slot per received panel) exceed the SRAM budget"
    with pytest.raises(SramError, match="second slots of the double buffers take 15488 of them "
                                        r"\(single-buffered it would fit: 38720 bytes\)"):
        mica.compile_affine(op, mesh=(4, 4), schedule=mica.plans.summa(op, (4, 4), buffers=2))
    _, report = search(op, (4, 4), WSE2, LOWERING)
    reasons = {c.rejected for c in report.candidates if c.decisions == d2}
    assert reasons == {two.rejected}
    assert any(c.decisions == d1 and c.cycles is not None for c in report.candidates)
    assert "the double buffers (a second slot per received panel) exceed the SRAM budget" in report.table()
