"""Staged loads straight into the arenas (``mica_host_gather``, :func:`staging.load_staged`): every
arena byte equals what the numpy staging (:func:`staging.staged_load` + ``host_load``) puts there, for
skewed ring tiles, ragged edges, windows with ghost zones, and regions not starting at core (0, 0)."""

from __future__ import annotations

import numpy as np
import pytest

import mica
from mica.errors import SimError
from mica.meshir.ir import Region
from mica.native_sim.opcode import AXIS_X, AXIS_Y, Box, BoxDim, Rect
from mica.native_sim.runtime import NativeMesh
from mica.native_sim.staging import load_staged, needs_staging, staged_load

from test_stencils import WIDE1D, jacobi2d


def _programs():
    mm = mica.ops.matmul(100, 37, 53)
    yield "interleaved ragged", mica.compile_affine(mm, mesh=(7, 7), schedule=mica.plans.interleaved(mm, (7, 7)))
    yield "cannon", mica.compile_affine(mm, mesh=(6, 6), schedule=mica.plans.cannon(mm, (6, 6)))
    j2 = mica.affine.from_c(jacobi2d(20), "jacobi", params={"tsteps": 2, "n": 20})
    yield "jacobi-2d halo", mica.compile_affine(j2, mesh=(3, 5), schedule=mica.plans.halo(j2, (3, 5)))
    w1 = mica.affine.from_c(WIDE1D, "wide", params={"T": 2, "n": 30})
    yield "wide 1-d halo", mica.compile_affine(w1, mesh=(7, 1), schedule=mica.plans.halo(w1, (7, 1)))


def _arenas(mesh: NativeMesh, nbytes: int, rect=None) -> np.ndarray:
    """Every arena byte of the cores of ``rect`` (default: the whole mesh), shaped (H, W, nbytes)."""
    w, h = mesh.width, mesh.height
    box = Box(0, 1, (BoxDim(AXIS_Y, 1, h), BoxDim(AXIS_X, 1, w), BoxDim.whole(nbytes)))
    return mesh.host_store(box, rect or (0, w, 0, h), (h, w, nbytes), np.uint8)


@pytest.mark.parametrize("name, prog", list(_programs()), ids=lambda v: v if isinstance(v, str) else "")
def test_gather_matches_numpy_staging(name, prog):
    mp = prog.mesh_program
    rng = np.random.default_rng(7)
    staged = [ld for ld in mp.body if type(ld).__name__ == "HostLoad" and needs_staging(mp.tensor(ld.buffer))]
    assert staged, name
    w, h = mp.mesh
    for shift in (False, True):
        meshes = []
        for via_gather in (False, True):
            m = NativeMesh(w, h, prog.target.colours, prog.target.sram_bytes)
            r = mp.region
            m.reserve((r.x0, r.x1, r.y0, r.y1), mp.arena_bytes)
            m.commit()
            meshes.append(m)
        for ld in staged:
            t = mp.tensor(ld.buffer)
            arr = prog.program.array(ld.array)
            data = rng.standard_normal(arr.shape).astype({"f32": np.float32, "f64": np.float64}[arr.dtype])
            region = ld.region
            if shift:           # a region that does not start at core (0, 0)
                region = Region(region.name, min(1, region.x1 - 1), region.x1, min(1, region.y1 - 1), region.y1)
            tiles, box, rect = staged_load(data, t, region, mp.skew)
            meshes[0].host_load(tiles, box, rect)
            load_staged(meshes[1], data, t, region, mp.skew)
        a, b = (_arenas(m, mp.arena_bytes, (r.x0, r.x1, r.y0, r.y1)) for m in meshes)
        for m in meshes:
            m.close()
        np.testing.assert_array_equal(a, b, err_msg=f"{name}, shifted region {shift}")


def test_gather_checks_its_arguments():
    with NativeMesh(4, 3, 1, 1024) as mesh:
        mesh.reserve((0, 4, 0, 3), 64)
        mesh.commit()
        data = np.arange(24, dtype=np.float32).reshape(4, 6)
        origins = np.zeros((12, 2), dtype=np.int64)
        with pytest.raises(SimError, match=r"core \(0,0\) spans bytes \[0,80\) outside the core's 64-byte arena"):
            mesh.host_gather(data, (4, 5), 0, Rect(0, 4, 0, 3), origins)
        with pytest.raises(SimError, match="11 origins for 12 cores"):
            mesh.host_gather(data, (2, 2), 0, Rect(0, 4, 0, 3), origins[:11])
        with pytest.raises(SimError, match="rank"):
            mesh.host_gather(data, (2,), 0, Rect(0, 4, 0, 3), origins)
        # A valid gather: core k starts at row k % 4 - 1 (row -1: zeros), column 3 (past column 5: zeros).
        origins[:, 0] = np.arange(12) % 4 - 1
        origins[:, 1] = 3
        mesh.host_gather(data, (2, 4), 8, Rect(0, 4, 0, 3), origins)
        got = _arenas(mesh, 64)[..., 8:40].copy().view(np.float32).reshape(12, 2, 4)
        padded = np.zeros((6, 10), dtype=np.float32)
        padded[1:5, 1:7] = data
        for k in range(12):
            r0 = origins[k, 0]
            np.testing.assert_array_equal(got[k], padded[r0 + 1:r0 + 3, 4:8])


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_large_host_copies_on_several_threads_match_one(threads):
    """Copies of 4 MB and more are split over the host threads by rows: every byte as with one thread
    (loads, gathers with origins past the array, stores), on a strided rectangle too."""
    w, h, arena = 72, 60, 8192
    rng = np.random.default_rng(3)
    data = rng.standard_normal((h, w, arena // 8)).astype(np.float64)
    box = Box(0, 8, (BoxDim(AXIS_Y, 1, h), BoxDim(AXIS_X, 1, w), BoxDim.whole(arena // 8)))
    strided = Rect(1, w, 0, h, xs=3, xp=1, ys=2, yp=1)
    grid = np.arange(h * w * 8, dtype=np.float32).reshape(h * 4, w * 2)
    n_cells = len(range(1, w, 3)) * len(range(1, h, 2))
    origins = np.stack([np.arange(n_cells) % 37 * 4 - 3, np.arange(n_cells) % 11 * 8 + 5], axis=1)
    results = []
    for t in (1, threads):
        with NativeMesh(w, h, 1, arena) as mesh:
            mesh.reserve((0, w, 0, h), arena)
            mesh.commit()
            mesh.set_host_threads(t)
            mesh.host_load(data, box, (0, w, 0, h))
            mesh.host_gather(grid, (48, 32), 1024, strided, origins)       # 6 KB per core, 4.4 MB
            out = mesh.host_store(box, (0, w, 0, h), data.shape, np.float64)
            results.append(out)
    assert results[0].nbytes >= 4 << 20
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.array_equal(results[0], data)          # the gather changed some cores' bytes
