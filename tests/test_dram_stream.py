"""Plans that stream operands from device DRAM (Tenstorrent), end to end and small enough for CI.

A wormhole whose L1 is cut to 24 KB per core (12 KB for bf16) cannot hold any resident plan of a 128x128x512
matmul on 4x4 cores (the rings alone need 36 KB, 18 KB in bf16), so the search streams A and B from device DRAM (``Schedule.dram``), each core
reading its panels per step (:mod:`mica.lower.dram`). The emulator's output is checked against numpy, its DRAM
bytes and cycles against the cost model; WSE (no DRAM) never gets such a plan; a program larger than the
device DRAM is a :class:`~mica.errors.DramError`.
"""

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import mica
from mica.errors import DramError, SramError
from mica.tiling.mapping import derive_schedule

SMALL_L1 = dataclasses.replace(mica.get_target("wormhole"), sram_bytes=24 * 1024)
L1_OF = {"f32": SMALL_L1, "bf16": dataclasses.replace(SMALL_L1, sram_bytes=12 * 1024)}
M, N, K = 128, 128, 512
MESH = (4, 4)


def _inputs(dtype):
    rng = np.random.default_rng(7)
    np_t = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
    return rng.uniform(-1, 1, (M, K)).astype(np_t), rng.uniform(-1, 1, (K, N)).astype(np_t)


def _per_update_reference(A, B):
    """C = 0, then C = bf16(f32(C) + f32(A[:, k]) * f32(B[k])) for k ascending: what a plan running k in order
    computes (mica.codeprint.half rounds every stored update)."""
    C = np.zeros((A.shape[0], B.shape[1]), A.dtype)
    for k in range(A.shape[1]):
        C = (C.astype(np.float32) + A[:, k:k + 1].astype(np.float32) * B[k].astype(np.float32)).astype(A.dtype)
    return C


@pytest.fixture(scope="module")
def streamed():
    return {dt: mica.compile_affine(mica.ops.matmul(M, N, K, dtype=dt), mesh=MESH, target=L1_OF[dt])
            for dt in ("f32", "bf16")}


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_search_streams_when_nothing_fits_and_the_emulator_agrees(streamed, dtype):
    prog = streamed[dtype]
    assert prog.schedule.dram == ("A", "B")
    assert prog.mesh_program.dram == ("A", "B")
    assert "A, B stay in device DRAM because no plan holding them in the cores' SRAM fits" in prog.explain()
    A, B = _inputs(dtype)
    res = prog.run({"A": A, "B": B})
    got = res.outputs["C"]
    if dtype == "f32":
        np.testing.assert_allclose(got, A @ B, rtol=1e-5, atol=1e-4)
    else:   # k ascending on every core: bit for bit the reference that rounds each update
        assert np.array_equal(got.view(np.uint16), _per_update_reference(A, B).view(np.uint16))
    # The model and the emulator charge DRAM reads alike: the same bytes, the same cycles (within 2 % when the
    # line roots multicast what they read: the model charges each step's multicast its whole path).
    assert res.stats.dram_bytes == prog.cost.dram_bytes > 0
    assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=0.02 if prog.schedule.dram_roots else 1e-9)


@pytest.mark.parametrize("buffers", [1, 2])
def test_forced_streamed_plans_model_matches_emulator(buffers):
    op = mica.ops.matmul(50, 96, 100, dtype="f32")          # a partial block of rows and a partial last step
    sched = derive_schedule(op, (3, 2), dram=("A", "B"), step_tile=32, buffers=buffers)
    assert [sm.tile for sm in sched.space] == [32, 32]        # blocks on 32x32 tile boundaries (DRAM pages)
    prog = mica.compile_affine(op, mesh=(3, 2), target="wormhole", schedule=sched)
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((50, 100)).astype(np.float32), rng.standard_normal((100, 96)).astype(np.float32)
    res = prog.run({"A": A, "B": B})
    np.testing.assert_allclose(res.outputs["C"], A @ B, rtol=1e-4, atol=1e-4)
    assert res.stats.dram_bytes == prog.cost.dram_bytes == (50 * 100 * 3 + 100 * 96 * 2) * 4   # A per column of cores, B per row
    assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=1e-9)
    assert ("hidden behind compute" in str(prog.cost)) == (buffers == 2)


@pytest.mark.parametrize("buffers", [1, 2])
def test_root_reads_multicast_along_lines(buffers):
    """dram_roots: the first core of each row reads A's panel, of each column B's, and multicasts it: one copy of
    each panel leaves DRAM; the model charges every step's multicast its whole path, the emulator only what
    the critical core waits for (within 2 %)."""
    op = mica.ops.matmul(50, 96, 100, dtype="f32")
    sched = derive_schedule(op, (3, 2), dram=("A", "B"), step_tile=32, buffers=buffers, dram_roots=True)
    prog = mica.compile_affine(op, mesh=(3, 2), target="wormhole", schedule=sched)
    assert "dram_cast_S1" in prog.meshir and "read by the first core of each line" in str(prog.schedule)
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((50, 100)).astype(np.float32), rng.standard_normal((100, 96)).astype(np.float32)
    res = prog.run({"A": A, "B": B})
    np.testing.assert_allclose(res.outputs["C"], A @ B, rtol=1e-4, atol=1e-4)
    assert res.stats.dram_bytes == prog.cost.dram_bytes == (50 * 100 + 100 * 96) * 4     # one copy of each
    assert res.stats.cycles == pytest.approx(prog.cost.total_cycles, rel=0.02)
    assert mica.Schedule.from_json(sched.to_json()) == sched


def test_streamed_runs_do_not_depend_on_the_thread_count(streamed):
    A, B = _inputs("bf16")
    one, two = (streamed["bf16"].run({"A": A, "B": B}, threads=n) for n in (1, 2))
    assert np.array_equal(one.outputs["C"].view(np.uint16), two.outputs["C"].view(np.uint16))
    assert one.stats.cycles == two.stats.cycles and one.stats.dram_bytes == two.stats.dram_bytes


def test_resident_plans_stay_when_they_fit():
    """No streamed plan's lower bound is below the resident plan's cycles here: none is evaluated or reported."""
    op = mica.ops.matmul(M, N, K, dtype="f32")
    prog = mica.compile_affine(op, mesh=MESH, target="wormhole")
    assert prog.schedule.dram == () and prog.mesh_program.dram == ()
    assert "dram" not in prog.schedule.to_json()
    assert not any(c.decisions.stream for c in prog.search_report.candidates)


def test_a_streamed_plan_competes_where_it_is_cheaper():
    """Issue 21: on a Blackhole 11x10 a resident 4096^3 bf16 plan fits on 10x10 of the cores, but streaming A and
    B (line roots read and multicast) uses all 110 and models fewer cycles; the search now chooses it, and says
    why."""
    op = mica.ops.matmul(4096, 4096, 4096, dtype="bf16")
    prog = mica.compile_affine(op, mesh=(11, 10), target="blackhole")
    assert prog.schedule.dram == ("A", "B") and prog.schedule.dram_roots
    resident = [c.cycles for c in prog.search_report.candidates if c.cycles is not None and not c.decisions.stream]
    assert resident and prog.cost.total_cycles < min(resident)
    assert "because streaming them is cheaper than the best plan holding them in the cores' SRAM" in prog.explain()


def test_wse_never_streams():
    op = mica.ops.matmul(M, N, K, dtype="f32")
    small = dataclasses.replace(mica.get_target("wse2"), sram_bytes=12 * 1024)
    with pytest.raises(SramError):
        mica.compile_affine(op, mesh=MESH, target=small)
    sched = derive_schedule(op, MESH, dram=("A", "B"), step_tile=32)
    with pytest.raises(mica.ScheduleError, match="no device DRAM"):
        mica.compile_affine(op, mesh=MESH, target="wse2", schedule=sched)


def test_more_than_the_device_dram_is_a_dram_error():
    tiny = dataclasses.replace(SMALL_L1, dram_bytes=256 * 1024)    # A and B alone are 512 KB
    with pytest.raises(DramError, match="bytes of device DRAM"):
        mica.compile_affine(mica.ops.matmul(M, N, K, dtype="f32"), mesh=MESH, target=tiny)


def test_a_loaded_program_binds_its_dram_arrays_every_run():
    """B stays on the mesh between runs (resident), A streams from DRAM: every run binds the new A."""
    op = mica.ops.matmul(128, 128, 128, dtype="f32")
    sched = derive_schedule(op, (4, 4), dram=("A",), step_tile=32)
    prog = mica.compile_affine(op, mesh=(4, 4), target="wormhole", schedule=sched, resident=("B",))
    assert prog.mesh_program.dram == ("A",)
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((128, 128)).astype(np.float32)
    with prog.load({"B": B}) as mesh:
        for scale in (1.0, 2.0):
            out = mesh.run({"A": A * np.float32(scale)}).outputs["C"]
            np.testing.assert_allclose(out, (A * np.float32(scale)) @ B, rtol=1e-4, atol=1e-4)


def test_streamed_schedule_round_trips_and_retargets(streamed):
    sched = streamed["f32"].schedule
    back = mica.Schedule.from_json(sched.to_json())
    assert back == sched and back.dram == ("A", "B")
    again = derive_schedule(streamed["f32"].program, (2, 2), like=sched)
    assert again.dram == ("A", "B") and again.step.tile == sched.step.tile
