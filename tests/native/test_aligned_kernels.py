"""Kernels that spread as sweeps whose steps multicast what an earlier statement of the step produced, from the
core that owns it (mica.lower.reads.step_owner_plan) — trisolv, LU and Cholesky only with their main nest
aligned (mica.tiling.aligned), ludcmp's factorisation aligned and the factors gathered onto the core that runs
its two substitutions (mica.lower.regather), gramschmidt as written: the compiler searches each on six meshes
(non-divisible ones included), the emulator runs it, and every output equals the natively compiled C bit for
bit (an alignment keeps every dependence, so every update runs in its original order); on 8x8 more than one
core computes."""

import sys
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.testing import run_c

sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))
from frontend_util import MANIFEST, kernel_function, kernel_source, make_inputs  # noqa: E402

MESHES = [(8, 8), (4, 3), (5, 2), (3, 7), (2, 2), (7, 5)]


@pytest.mark.parametrize("name, aligned", [("trisolv", True), ("lu", True), ("cholesky", True),
                                           ("ludcmp", True), ("gramschmidt", False)])
def test_sweep_kernel_spreads_and_matches_native_c(name, aligned):
    spec = MANIFEST[name]
    src, fn, params = kernel_source(name), kernel_function(name), spec["params"]
    prog = from_c(src, fn, params=params)
    ins = make_inputs(src, fn, params, spec, seed=5)
    want = run_c(src, fn, ins, params)
    for mesh in MESHES:
        compiled = mica.compile_affine(prog, mesh=mesh)
        res = compiled.run(ins, threads=2)
        assert res.stats.summary()["computing_cores"] == compiled.cost.cores, (name, mesh)
        for arr, value in want.items():
            assert np.array_equal(res.outputs[arr], value), f"{name} {arr} on {mesh}"
        if mesh == (8, 8):
            assert compiled.cost.cores > 1
            assert any(r.startswith("aligned: loop") for r in compiled.schedule.reasons) == aligned


def test_trisolv_runs_column_by_column_with_x_j_multicast_from_its_owner():
    spec = MANIFEST["trisolv"]
    prog = from_c(kernel_source("trisolv"), kernel_function("trisolv"), params=spec["params"])
    compiled = mica.compile_affine(prog, mesh=(8, 8))
    assert [s.loops for s in compiled.program.statements] == [("i",), ("j",), ("j", "i")]
    assert "root x = floor((t) / 4)" in compiled.meshir   # the root: the core owning x[j] at step j
    assert "x_panel0" in compiled.meshir and "k_pack_x_panel0" in compiled.meshir   # x[j] alone is sent


FW_MESHES = [(8, 8), (5, 3)]
FW_RETARGETED = [(4, 3), (3, 7), (6, 6), (7, 5)]


def test_floyd_warshall_spreads_cut_at_its_pivot_and_matches_native_c():
    """Floyd-Warshall's row k and column k change during step k (negative weights on the diagonal), so no loop
    is parallel as written; cut at i = k and j = k (mica.affine.isplit) the same instances run in the same
    order, each piece parallel over both. Searched on two meshes, retargeted to four more, bit for bit equal
    to the natively compiled C; on 8x8 every core computes."""
    name = "floyd-warshall"
    spec = MANIFEST[name]
    src, fn, params = kernel_source(name), kernel_function(name), spec["params"]
    prog = from_c(src, fn, params=params)
    n = params["n"]
    rng = np.random.default_rng(7)
    paths = rng.uniform(-1.0, 4.0, (n, n))
    paths[np.diag_indices(n)] = rng.uniform(-0.5, 0.5, n)
    ins = {"paths": paths}
    want = run_c(src, fn, ins, params)
    assert not np.array_equal(want["paths"][0], paths[0])
    for searched in FW_MESHES:
        compiled = mica.compile_affine(prog, mesh=searched)
        assert any(r.startswith("split: loop") for r in compiled.schedule.reasons)
        if searched == (8, 8):
            assert compiled.cost.cores == 64
        for mesh in [searched] + (FW_RETARGETED if searched == (8, 8) else []):
            run = compiled if mesh == searched else compiled.retarget(mesh)
            res = run.run(ins, threads=2)
            assert res.stats.summary()["computing_cores"] == run.cost.cores, mesh
            assert np.array_equal(res.outputs["paths"], want["paths"]), mesh
