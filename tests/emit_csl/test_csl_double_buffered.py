"""Double-buffered MeshIR through the CSL back end: the prefetched exchanges (SUMMA multicasts, Cannon and
interleaved ring shifts) are emitted double-buffered -- two-slot buffers, step t+1's asynchronous moves
started into the other slot before step t's compute, the compute reading the slot by step parity, the
next step joining on them -- and the emitted files, executed on every core by ``csl_interp`` (which
rejects any access to memory an asynchronous move in flight owns), compute the program."""

import json

import numpy as np
import pytest

import mica
from mica.emit_csl import render

from .crosscheck import crosscheck
from .csl_interp import CslError
from .test_csl_execution import execute

CASES = [("summa", (4, 4), "wse2", (16, 16, 16)), ("summa", (2, 2), "wse3", (16, 16, 16)),
         ("cannon", (4, 4), "wse2", (16, 16, 16)), ("cannon", (3, 3), "wse3", (10, 9, 11)),
         ("interleaved", (4, 4), "wse2", (16, 16, 16)), ("interleaved", (4, 4), "wse3", (16, 12, 16))]


def _compile(plan, mesh, target, sizes, buffers):
    mm = mica.ops.matmul(*sizes)
    return mica.compile_affine(mm, mesh=mesh, target=target,
                               schedule=mica.plans.REFERENCE_PLANS[plan](mm, mesh, buffers=buffers))


def _close(got, want):
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k]).max())))


@pytest.mark.parametrize("plan, mesh, target, sizes", CASES)
def test_double_buffered_csl_executes_and_matches_numpy(plan, mesh, target, sizes):
    prog = _compile(plan, mesh, target, sizes, 2)
    files = render(prog)
    rec = json.loads(files["plan.json"])
    db = rec["double_buffering"]
    assert db["emitted"] is True and "dropped" not in db
    two = {b["name"]: b for b in rec["buffers"] if b.get("slots") == 2}
    assert set(two) == set(db["double_buffers"]) == ({"A_recv", "B_recv"} if plan == "summa" else {"A_ring", "B_ring"})
    pe = files["pe_program.csl"]
    for name, b in two.items():
        assert b["alloc_bytes"] == 2 * b["bytes"]
        assert f"var buf_{name}: [{2 * b['elems']}]f32" in pe and f"slot_{name} = pmod(" in pe
    assert rec["landing"] == {}                # a ring shift sends one slot and receives into the other
    assert [s["kind"] for s in rec["steps"]].count("prefetch") == 1
    assert crosscheck(prog, rec) == []
    got, want = execute(prog, files)
    assert got
    _close(got, want)


@pytest.mark.parametrize("plan", ["summa", "interleaved"])
def test_single_buffered_program_is_unchanged_and_has_no_record(plan):
    single = render(_compile(plan, (4, 4), "wse2", (16, 16, 16), 1))
    rec = json.loads(single["plan.json"])
    assert "double_buffering" not in rec and all("slots" not in b for b in rec["buffers"])
    assert "slot_" not in single["pe_program.csl"] and "prefetch" not in single["pe_program.csl"]


def _mutate(files, old, new, count=1):
    pe = files["pe_program.csl"]
    assert old in pe, old
    return dict(files, **{"pe_program.csl": pe.replace(old, new, count)})


def test_a_prefetch_into_the_slot_being_read_is_caught():
    """The proof is only worth something if a wrong slot fails: receiving step t+1's panels into the slot
    step t computes on (both slots made the same) is a hazard the interpreter reports."""
    prog = _compile("summa", (4, 4), "wse2", (16, 16, 16), 2)
    files = render(prog)
    bad = _mutate(files, "@as(i16, pmod(lv[0] + 1, 2) * 16)", "@as(i16, pmod(lv[0], 2) * 16)", -1)
    with pytest.raises(CslError, match="while an asynchronous recv"):
        execute(prog, bad)


def test_a_compute_reading_the_wrong_slot_gives_wrong_numbers():
    prog = _compile("interleaved", (4, 4), "wse2", (16, 16, 16), 2)
    files = render(prog)
    bad = _mutate(files, "slot_A_ring = pmod(lv[0] + 0, 2) * 16;" if "lv[0] + 0" in files["pe_program.csl"]
                  else "slot_A_ring = pmod(lv[0], 2) * 16;", "slot_A_ring = pmod(lv[0] + 1, 2) * 16;")
    try:
        got, want = execute(prog, bad)
    except CslError:
        return                                  # reading a slot still being received: also caught
    assert not np.allclose(got["C"], want["C"], rtol=1e-3, atol=1e-3)


def test_a_missing_join_is_caught():
    """Without waiting for the prefetched operations, the next step reads a slot still being received."""
    prog = _compile("summa", (4, 4), "wse2", (16, 16, 16), 2)
    files = render(prog)
    bad = _mutate(files, "      @block(step_id);\n      pending += 1;", "      pending += 1;")
    with pytest.raises(CslError, match="asynchronous|not finished"):
        execute(prog, bad)


def test_validator_checks_both_slots_against_sram_and_the_record():
    from mica.emit_csl.validate import validate
    from mica.errors import EmitError
    prog = _compile("summa", (4, 4), "wse2", (16, 16, 16), 2)
    files = render(prog)
    validate(files)
    # a double buffer declared with one slot disagrees with plan.json
    one = _mutate(files, "var buf_A_recv: [32]f32 = @zeros([32]f32);", "var buf_A_recv: [16]f32 = @zeros([16]f32);")
    with pytest.raises(EmitError, match="buffer A_recv has 64 B, plan.json records 128 B"):
        validate(one)
    # a record claiming the double buffer was emitted with one slot is refused
    rec = json.loads(files["plan.json"])
    for b in rec["buffers"]:
        if b["name"] == "A_recv":
            del b["slots"], b["alloc_bytes"]
    with pytest.raises(EmitError, match="A_recv is a double buffer .* has 1 slot"):
        validate(dict(files, **{"plan.json": json.dumps(rec)}))
    # both slots count against SRAM
    rec = json.loads(files["plan.json"])
    rec["sram_bytes"] = rec["buffer_bytes_total"] - 1
    with pytest.raises(EmitError, match="more than the"):
        validate(dict(files, **{"plan.json": json.dumps(rec)}))


def test_double_buffers_that_do_not_fit_sram_are_refused_before_emission():
    """The second slots count in the arena: a plan whose double buffers overflow SRAM does not compile."""
    from mica.errors import MicaError
    mm = mica.ops.matmul(512, 512, 512)
    with pytest.raises(MicaError, match="second slots|SRAM|sram"):
        prog = mica.compile_affine(mm, mesh=(4, 4), target="wse2",
                                   schedule=mica.plans.summa(mm, (4, 4), buffers=2))
        render(prog)


def test_an_exchange_the_back_end_cannot_double_buffer_is_emitted_single_buffered_and_recorded(monkeypatch):
    """The fallback: when the analysis leaves an exchange single-buffered (here forced, as a reason of
    the back end's own would), the emitted CSL is exactly the single-buffered program and plan.json
    names the exchange and the reason."""
    import mica.emit_csl.plan as cplan
    from mica.meshir import prefetch
    monkeypatch.setattr(cplan, "double_buffering",
                        lambda mp: prefetch.double_buffering(mp, extra=lambda op, scope, two: "forced for the test"))
    single = render(_compile("interleaved", (4, 4), "wse2", (16, 16, 16), 1))
    double = render(_compile("interleaved", (4, 4), "wse2", (16, 16, 16), 2))
    assert {k for k in single if single[k] != double[k]} == {"plan.json"}
    db = json.loads(double["plan.json"])["double_buffering"]
    assert db["emitted"] is False and db["emitted_exchanges"] == [] and db["dropped"] == {"ring_shift": "forced for the test"}
