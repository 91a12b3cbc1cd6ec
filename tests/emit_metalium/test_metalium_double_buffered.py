"""Double-buffered MeshIR through the Metalium back end: the receive buffers of prefetched exchanges (SUMMA
multicasts, Cannon and interleaved ring shifts) become circular buffers of two slots; the reader reserves
the next slot (blocking until compute popped it) before it signals its sender, receives step t+1's tiles
while compute works on step t, and pushes them; compute waits until the new slot is there, then pops the old one.
The programs run on the threaded API model (``sim/``), which aborts on a NoC write into a double
buffer's page that is pushed and not popped, and must match the reference."""

import json
import re
import subprocess

import pytest

import mica
from mica.emit_metalium import render

from .programs import compiled, rendered
from .test_functional import GXX, SLOW, run_emitted

DOUBLE = ["matmul_summa_double_wormhole", "matmul_interleaved_double_wormhole", "matmul_cannon_double_partial_wormhole"]


def _ok(rc, out):
    assert rc == 0, out
    lines = [ln for ln in out.splitlines() if "max |device - reference|" in ln]
    assert lines, out
    for ln in lines:
        m = re.search(r"= (\S+) \(scale (\S+)\) (\w+)", ln)
        assert m.group(3) == "ok" and float(m.group(1)) <= 1e-5 * float(m.group(2)), ln


@pytest.mark.parametrize("name", DOUBLE)
def test_double_buffered_record_and_circular_buffers(name):
    files = rendered(name)
    rec = json.loads(files["plan.json"])
    db = rec["double_buffering"]
    assert db["emitted"] is True and "dropped" not in db
    mp = compiled(name).mesh_program
    cbs = {c["tensor"]: c for c in rec["circular_buffers"] if c["kind"] == "tensor"}
    for t in db["double_buffers"]:
        c = cbs[t]
        assert c["slots"] == 2 and c["pages"] == 2 * c["slot_pages"]
        assert c["slot_pages"] * c["page_bytes"] >= mp.tensor(t).max_bytes
    assert not [c for c in rec["circular_buffers"] if c["kind"] == "landing"]   # one slot sent, the other received
    reader = files["kernels/reader_c0.cpp"]
    compute = files["kernels/compute_c0.cpp"]
    for t in db["double_buffers"]:
        assert f"cb_reserve_back(cb_{t}, {cbs[t]['slot_pages']});  // the next slot" in reader
        assert f"cb_wait_front(cb_{t}, {2 * cbs[t]['slot_pages']});" in compute and f"cb_pop_front(cb_{t}, {cbs[t]['slot_pages']});" in compute
    # the prefetch sits between handing compute its turn and taking it back
    body = reader[reader.index("for (int32_t v_t"):]
    turn, back = body.index("cb_push_back(cb_tok_r2c, 1);"), body.index("cb_wait_front(cb_tok_c2r, 1);")
    assert turn < body.index("const int32_t v_t = next;") < back


@pytest.mark.parametrize("plan", ["summa", "interleaved"])
def test_single_buffered_programs_have_no_double_buffers(plan):
    mm = mica.ops.matmul(64, 64, 64)
    files = render(mica.compile_affine(mm, mesh=(4, 4), target="wormhole",
                                       schedule=mica.plans.REFERENCE_PLANS[plan](mm, (4, 4))))
    rec = json.loads(files["plan.json"])
    assert "double_buffering" not in rec and all("slots" not in c for c in rec["circular_buffers"])
    assert "front_cb_" not in files["kernels/reader_c0.cpp"]


@pytest.mark.skipif(GXX is None, reason="needs g++")
@pytest.mark.parametrize("name", DOUBLE)
def test_double_buffered_program_computes_the_reference(name, tmp_path):
    _ok(*run_emitted(rendered(name), tmp_path))


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_writing_into_the_slot_compute_reads_is_caught(tmp_path):
    """The model is not vacuous about slots: a sender writing step t+1's tiles into the slot the receiver's
    compute still holds (its front, pushed and not popped) aborts."""
    files = dict(rendered("matmul_summa_double_wormhole"))
    path = "kernels/reader_c0.cpp"
    files[path] = files[path].replace("get_write_ptr(cb_A_recv), 4096", "front_cb_A_recv, 4096")
    assert files[path] != rendered("matmul_summa_double_wormhole")[path]
    rc, out = run_emitted(files, tmp_path)
    assert rc != 0 and "pushed and not yet popped" in out, out


@SLOW
@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_a_slot_never_popped_is_never_refilled(tmp_path):
    """Flow control is real: without compute's pop, the reader's reserve of the next-but-one slot waits
    forever (a hang on the device too) instead of overwriting it."""
    files = dict(rendered("matmul_summa_double_wormhole"))
    path = "kernels/compute_c0.cpp"
    files[path] = files[path].replace("cb_pop_front(cb_A_recv, 1);", "")
    with pytest.raises(subprocess.TimeoutExpired):
        run_emitted(files, tmp_path, timeout=15)


def test_l1_budget_counts_both_slots():
    from mica.emit_metalium.validate import validate
    from mica.errors import EmitError
    files = rendered("matmul_summa_double_wormhole")
    rec = json.loads(files["plan.json"])
    single = json.loads(render(mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(4, 4), target="wormhole",
                                                   schedule=mica.plans.summa(mica.ops.matmul(64, 64, 64), (4, 4))))
                        ["plan.json"])
    extra = sum(c["slot_pages"] * c["page_bytes"] for c in rec["circular_buffers"] if c.get("slots") == 2)
    assert rec["cb_bytes_per_core"] == single["cb_bytes_per_core"] + extra and extra > 0
    validate(files, l1_bytes=rec["cb_bytes_per_core"])
    with pytest.raises(EmitError, match="circular buffers need"):
        validate(files, l1_bytes=rec["cb_bytes_per_core"] - 1)


def test_an_exchange_left_single_buffered_is_emitted_as_before_and_recorded(monkeypatch):
    import mica.emit_metalium.plan as mplan
    from mica.meshir import prefetch
    monkeypatch.setattr(mplan, "double_buffering",
                        lambda mp, extra=None: prefetch.double_buffering(mp, extra=lambda *a: "forced for the test"))
    mm = mica.ops.matmul(64, 64, 64)
    single = render(mica.compile_affine(mm, mesh=(4, 4), target="wormhole", schedule=mica.plans.interleaved(mm, (4, 4))))
    double = render(mica.compile_affine(mm, mesh=(4, 4), target="wormhole",
                                        schedule=mica.plans.interleaved(mm, (4, 4), buffers=2)))
    assert {k for k in single if single[k] != double[k]} == {"plan.json"}
    db = json.loads(double["plan.json"])["double_buffering"]
    assert db["emitted"] is False and db["dropped"] == {"ring_shift": "forced for the test"}
