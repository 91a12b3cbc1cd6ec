"""Compiled programs on meshes of more than 1,024 cores, where every exchange and compute is split into
bands run by several threads: outputs bit-identical and every statistic (cycles, per-link bytes and
messages, per-core compute / communication / idle cycles, totals) equal for 1, 2 and 3 threads.

The plans cover the emulator's paths: ring shifts in place with payloads of 1 KB and more (copies in
order) and smaller ones (kept aside), SUMMA multicasts, a K-tree reduction, a 2-d halo exchange into
ghost zones, and a program of two operators.
"""

from __future__ import annotations

import pytest

import mica

import samples
from test_timing import inputs_for

MM2 = samples.mm2(136, param=False)


def _plan(plan, op, mesh):
    return mica.compile_affine(op, mesh=mesh, schedule=mica.plans.REFERENCE_PLANS[plan](op, mesh))


CASES = {
    # 16 x 16 f32 tiles: 1 KB ring payloads, copied in order
    "matmul interleaved 36x36": lambda: _plan("interleaved", mica.ops.matmul(576, 576, 576), (36, 36)),
    "matmul cannon 34x34 ragged": lambda: _plan("cannon", mica.ops.matmul(530, 520, 540), (34, 34)),
    "matmul summa 40x30": lambda: _plan("summa", mica.ops.matmul(200, 160, 120), (40, 30)),
    "matmul interleaved 40x40 small tiles": lambda: _plan("interleaved", mica.ops.matmul(160, 160, 160), (40, 40)),
    "gemv ktree 40x32": lambda: _plan("ktree", mica.ops.gemv(64, 640), (40, 32)),
    "jacobi-2d halo 34x34": lambda: mica.compile_affine(
        op := mica.affine.from_c(samples.jacobi_2d(100), "jacobi", params={"tsteps": 3, "n": 100}),
        mesh=(34, 34), schedule=mica.plans.halo(op, (34, 34))),
    "mm2 two operators 34x34": lambda: mica.compile_affine(mica.affine.from_c(MM2, "mm2"), mesh=(34, 34)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_outputs_and_stats_equal_for_1_2_3_threads(name):
    prog = CASES[name]()
    assert prog.mesh_program.region.cores >= 1024, "too few cores to split the ops into bands"
    ins = inputs_for(prog, seed=11)
    runs = [prog.run(ins, threads=t) for t in (1, 2, 3)]
    first = runs[0]
    assert first.stats.raw.messages > 0 and first.stats.cycles > 0
    for res in runs[1:]:
        for array, value in first.outputs.items():
            assert res.outputs[array].tobytes() == value.tobytes(), f"{name}: {array}, {res.stats.threads} threads"
        assert res.stats.raw == first.stats.raw, f"{name}: statistics differ with {res.stats.threads} threads"
