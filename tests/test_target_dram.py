"""The DRAM level of the targets (mica.targets): Tenstorrent chips have device DRAM behind the grid, with its
size, the bandwidth the chip's cores share, one core's read rate and a latency; WSE has none."""

import pickle

import pytest

from mica.errors import TargetError
from mica.targets import TARGETS, Target, get_target


def test_tenstorrent_targets_have_a_dram_level_and_wse_none():
    wh, bh = get_target("wormhole"), get_target("blackhole")
    assert wh.has_dram and bh.has_dram
    assert wh.dram_bytes == 12 * 2 ** 30 and wh.dram_bytes_per_cycle == 288.0       # 288 GB/s at 1 GHz
    assert bh.dram_bytes == 32 * 10 ** 9 and bh.dram_bytes_per_cycle * bh.clock_ghz == pytest.approx(512.0)
    for name in ("wse2", "wse3", "generic"):
        assert not TARGETS[name].has_dram
        with pytest.raises(TargetError, match="has no DRAM level"):
            TARGETS[name].dram_read_cycles(1024, 1)


def test_dram_reads_share_the_chip_bandwidth():
    wh = get_target("wormhole")
    # one core alone reads at its own rate; 64 cores share 288 B/cycle (4.5 each)
    assert wh.dram_read_cycles(22_000, 1) == pytest.approx(wh.dram_latency + 1000)
    assert wh.dram_read_cycles(4_500, 64) == pytest.approx(wh.dram_latency + 1000)
    assert wh.dram_read_cycles(0, 64) == 0.0


def test_a_dram_level_needs_its_figures_and_survives_pickling():
    with pytest.raises(TargetError, match="DRAM level needs"):
        Target("t", (2, 2), 1024, 1.0, {"f16": 1, "f32": 1, "f64": 1}, 4.0, 1.0, 1.0, 4, dram_bytes=1 << 20)
    wh = get_target("wormhole")
    assert pickle.loads(pickle.dumps(wh)) == wh
