"""Metalium emission of plans that stream operands from device DRAM (``Schedule.dram``): the host writes each
streamed array to an interleaved DRAM buffer as its row-major image of 32x32 tiles, and each step the readers
read their panel's pages into the receive buffer's circular buffer (``noc_async_read_page`` with
``InterleavedAddrGenFast``), single-buffered. Checked against the API header (``g++ -fsyntax-only``) and run in
the functional model (``sim/``) with the host program's reference check; a reduced-L1 wormhole forces the
streamed path at a small size."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

import mica
from mica.emit_metalium import render
from mica.errors import EmitError
from mica.tiling.mapping import derive_schedule

from .test_functional import run_emitted
from .test_syntax import syntax_errors

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def _small_l1(kb: int):
    return dataclasses.replace(mica.get_target("wormhole"), sram_bytes=kb * 1024)


@pytest.fixture(scope="module")
def searched_bf16():
    # K = 256 keeps the bf16 reference (rounded after every update) within the host check's tolerance
    return mica.compile_affine(mica.ops.matmul(128, 96, 256, dtype="bf16"), mesh=(4, 3), target=_small_l1(6))


def test_searched_bf16_streamed_plan_runs_in_the_functional_model(searched_bf16, tmp_path):
    assert searched_bf16.schedule.dram == ("A", "B")
    files = render(searched_bf16)
    reader = files["kernels/reader_c0.cpp"]
    assert "noc_async_read_page" in reader and "dram_stream_A" in reader and "dram_stream_B" in reader
    assert "dram_stream_A" in files["host.cpp"]
    assert syntax_errors(files, tmp_path / "syntax") == {}
    code, out = run_emitted(files, tmp_path / "run")
    assert code == 0 and "C: max" in out and " ok" in out, out[-2000:]


@pytest.mark.parametrize("buffers", [1, 2])
def test_two_tile_panels_with_a_partial_last_step_and_the_plan_record(buffers, tmp_path):
    """Double-buffered loads become two-slot CBs: the reader reads step t+1's pages while compute runs step t."""
    op = mica.ops.matmul(128, 96, 200, dtype="f32")       # K = 200: the last panel is 8 wide (zero padding)
    sched = derive_schedule(op, (3, 4), dram=("A", "B"), step_tile=64, buffers=buffers)
    prog = mica.compile_affine(op, mesh=(3, 4), target="wormhole", schedule=sched)
    files = render(prog)
    plan = json.loads(files["plan.json"])
    if buffers == 2:
        db = plan["double_buffering"]
        assert db["emitted"] is True and db["dram_loads_emitted"] == ["dram_S1_A_recv", "dram_S1_B_recv"]
        assert {c["name"]: c.get("slots", 1) for c in plan["circular_buffers"]}["cb_A_recv"] == 2
        assert "the next step's DRAM pages" in files["kernels/reader_c0.cpp"]
    else:
        assert "double_buffering" not in plan
    assert syntax_errors(files, tmp_path / "syntax") == {}
    code, out = run_emitted(files, tmp_path / "run")
    assert code == 0 and " ok" in out, out[-2000:]


def test_panels_off_tile_boundaries_are_refused():
    op = mica.ops.matmul(64, 64, 128, dtype="f32")
    sched = derive_schedule(op, (2, 2), dram=("A", "B"), step_tile=16)     # 16-wide panels: half a DRAM page
    prog = mica.compile_affine(op, mesh=(2, 2), target="wormhole", schedule=sched)
    with pytest.raises(EmitError, match="tile boundary"):
        render(prog)


def test_csl_refuses_a_streamed_plan():
    op = mica.ops.matmul(64, 64, 256, dtype="f32")
    sched = derive_schedule(op, (2, 2), dram=("A", "B"), step_tile=32)
    prog = mica.compile_affine(op, mesh=(2, 2), target="wormhole", schedule=sched)
    from mica.emit_csl import render as render_csl
    with pytest.raises(EmitError, match="targets wse2 and wse3"):     # a Tenstorrent plan: no CSL for it
        render_csl(prog)


@pytest.mark.parametrize("buffers", [1, 2])
def test_root_reads_multicast_along_lines_run_in_the_functional_model(buffers, tmp_path):
    """dram_roots: the first core of each line reads the panel into its receive buffer and multicasts it (through
    a landing buffer, as an exchange that sends and receives one buffer); single-buffered on the device."""
    op = mica.ops.matmul(128, 96, 200, dtype="f32")
    sched = derive_schedule(op, (3, 4), dram=("A", "B"), step_tile=64, buffers=buffers, dram_roots=True)
    prog = mica.compile_affine(op, mesh=(3, 4), target="wormhole", schedule=sched)
    files = render(prog)
    assert "cb_A_recv_landing" in files["kernels/reader_c0.cpp"]
    code, out = run_emitted(files, tmp_path)
    assert code == 0 and " ok" in out, out[-2000:]
