"""The emulator's DRAM level (mica_rt.h "DRAM level", rt_dram.c), at the op-code level: a DRAM op copies each
core's box of a DRAM-resident array into its arena at the step's loop values, charges every reading core
latency + bytes / min(its own rate, the chip's bandwidth shared by the readers), counts the bytes, and fails
loudly on a box past the arena, an array of the wrong size, arrays beyond the DRAM capacity, or a mesh
without a DRAM level."""

from __future__ import annotations

import numpy as np
import pytest

from mica.errors import SimError
from mica.native_sim.opcode import AXIS_V0, AXIS_X, AXIS_Y, Box, BoxDim, Dram, Loop, encode
from mica.native_sim.runtime import NativeMesh

W, H, K, KT = 3, 2, 8, 2          # A is H*2 x K (2 rows per core row), read in K/KT steps of KT columns


def panel_box(offset: int = 0) -> Box:
    """A_recv[y/2, t/KT]: core row y's rows, step t's columns (int32)."""
    return Box(offset, 4, (BoxDim(AXIS_Y, 2, 2 * H), BoxDim(AXIS_V0, KT, K)))


def mesh_with_dram(arena: int = 64, bw: float = 12.0, core_bw: float = 4.0, latency: float = 10.0) -> NativeMesh:
    mesh = NativeMesh(W, H, 2, 1024)
    mesh.reserve((0, W, 0, H), arena)
    mesh.commit()
    mesh.set_dram(1 << 20, bw, core_bw, latency)
    return mesh


def arenas(mesh: NativeMesh, nbytes: int) -> np.ndarray:
    box = Box(0, 1, (BoxDim(AXIS_Y, 1, H), BoxDim(AXIS_X, 1, W), BoxDim.whole(nbytes)))
    return mesh.host_store(box, (0, W, 0, H), box.shape, np.uint8)


def test_each_step_reads_its_panel_and_is_charged_for_its_bytes():
    A = np.arange(2 * H * K, dtype=np.int32).reshape(2 * H, K)
    with mesh_with_dram() as mesh:
        mesh.dram_bind(0, A)
        # step t reads columns [KT t, KT t + KT) of the core row's rows; only the last step's stays
        mesh.run(encode([Loop(0, K // KT, (Dram(7, 0, (0, W, 0, H), panel_box()),))]))
        got = arenas(mesh, 16).view(np.int32).reshape(H, W, 2, KT)
        for y in range(H):
            for x in range(W):
                assert np.array_equal(got[y, x], A[2 * y:2 * y + 2, K - KT:])
        st = mesh.stats()
        per = 2 * KT * 4                                   # bytes per core per step
        assert st.dram_bytes == W * H * per * (K // KT)
        # 6 readers share 12 B/cycle = 2 each (below one core's 4): 10 + 16 / 2 cycles per step
        assert np.allclose(st.core_clock, (K // KT) * (10 + per / 2))
        assert np.allclose(st.core_comm, st.core_clock) and st.cycles == pytest.approx((K // KT) * 18)


def test_a_lone_reader_is_capped_by_its_own_rate():
    A = np.arange(2 * H * K, dtype=np.int32).reshape(2 * H, K)
    with mesh_with_dram() as mesh:
        mesh.dram_bind(0, A)
        mesh.run(encode([Dram(1, 0, (1, 2, 0, 1), panel_box())]))      # core (1, 0) alone
        st = mesh.stats()
        assert st.core_clock[0, 1] == pytest.approx(10 + 16 / 4) and st.core_clock[1, 1] == 0.0


@pytest.mark.parametrize("case, words", [
    ("no dram level", ["DRAM op 3", "no DRAM level"]),
    ("wrong size", ["DRAM op 3", "slot 0 holds 4 bytes", "array of 128"]),
    ("past the arena", ["DRAM op 3", "core (0,0)", "outside the core's 64-byte arena"]),
])
def test_faults_name_the_op_core_and_slot(case, words):
    A = np.arange(2 * H * K, dtype=np.int32).reshape(2 * H, K)
    mesh = NativeMesh(W, H, 2, 1024)
    mesh.reserve((0, W, 0, H), 64)
    mesh.commit()
    box = panel_box()
    if case != "no dram level":
        mesh.set_dram(1 << 20, 12.0, 4.0, 10.0)
    if case == "wrong size":
        A = np.zeros(1, np.int32)
    if case == "past the arena":
        box = panel_box(offset=56)
    if case != "no dram level":
        mesh.dram_bind(0, A)
    with pytest.raises(SimError) as info:
        mesh.run(encode([Dram(3, 0, (0, W, 0, H), box)]))
    for w in words:
        assert w in str(info.value)
    mesh.close()


def test_bad_figures_and_slots_are_refused():
    with NativeMesh(1, 1, 1, 64) as mesh:
        with pytest.raises(SimError, match="capacity and bandwidths must be > 0"):
            mesh.set_dram(1024, 0.0, 1.0, 0.0)
        with pytest.raises(SimError, match="no DRAM level"):
            mesh.dram_bind(0, np.zeros(4, np.int32))
        mesh.set_dram(1024, 1.0, 1.0, 0.0)
        with pytest.raises(SimError, match="slot 16 not in 0..15"):
            mesh.dram_bind(16, np.zeros(4, np.int32))
        mesh.dram_bind(0, np.zeros(128, np.int32))                        # 512 B
        mesh.dram_bind(0, np.zeros(200, np.int32))                        # rebinding replaces: 800 B
        with pytest.raises(SimError, match="slot 1's 512 bytes would make 1312 bytes of DRAM arrays, more "
                                           "than the 1024-byte DRAM level"):
            mesh.dram_bind(1, np.zeros(128, np.int32))
    with pytest.raises(SimError, match="DRAM slot 16"):
        Dram(1, 16, (0, 1, 0, 1), panel_box())
