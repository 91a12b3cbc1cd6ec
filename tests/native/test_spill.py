"""Arenas in a spill file (:mod:`mica.native_sim.spill`): a mesh whose arenas would not fit the host's memory
backs them with a file the kernel pages to and from. Runs and resident steps on a spilled mesh compute the
same bits and model the same cycles as in memory, and match numpy; the policy spills exactly when the pool
exceeds the available memory less the reserve; a bad mode or directory is a clear SimError."""

import os
import subprocess
import sys

import numpy as np
import pytest

import mica
from mica.errors import SimError
from mica.native_sim import spill
from mica.native_sim.runtime import NativeMesh, ffi
from mica.native_sim.spill import SPILL_RESERVE_BYTES, should_spill

import samples

GiB = 1 << 30
L, D = 16, 8


def _step(mesh):
    return mica.compile_affine(samples.key_step(L, D), mesh=mesh, runtime={"pos": (0, L)}, resident=("W", "K"))


def test_the_policy_spills_a_pool_larger_than_the_available_memory_less_the_reserve():
    avail = 8 * GiB
    assert not should_spill(avail - SPILL_RESERVE_BYTES, "auto", avail)
    assert should_spill(avail - SPILL_RESERVE_BYTES + 1, "auto", avail)
    assert not should_spill(10 * GiB, "auto", None)          # unknown memory: stay in memory
    assert should_spill(1, "always", avail) and not should_spill(100 * GiB, "never", avail)
    assert not should_spill(0, "always", avail)               # nothing reserved, nothing to back


def test_the_mode_and_directory_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MICA_SPILL", "sometimes")
    with pytest.raises(SimError, match="MICA_SPILL='sometimes': expected one of auto, always, never"):
        spill.spill_mode()
    monkeypatch.setenv("MICA_SPILL", "Always")
    assert spill.spill_mode() == "always"
    monkeypatch.setenv("MICA_SPILL_DIR", str(tmp_path))
    with spill.spill_file() as f:
        f.write(b"x")
    assert list(tmp_path.iterdir()) == []                     # nameless: nothing left behind
    monkeypatch.setenv("MICA_SPILL_DIR", str(tmp_path / "missing"))
    with pytest.raises(SimError, match=r"cannot make a spill file .*missing.*MICA_SPILL_DIR"):
        spill.spill_file()


@pytest.mark.parametrize("mesh", [(4, 4), (3, 5)], ids=lambda m: f"{m[0]}x{m[1]}")
def test_a_spilled_run_computes_the_same_bits_and_cycles(monkeypatch, mesh):
    prog = mica.compile_affine(mica.ops.matmul(48, 40, 36), mesh=mesh)
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal(prog.program.array(n).shape).astype(np.float32) for n in prog.program.inputs}
    monkeypatch.setenv("MICA_SPILL", "never")
    kept = prog.run(ins)
    monkeypatch.setenv("MICA_SPILL", "always")
    spilled = prog.run(ins)
    assert spilled.stats.summary()["arenas_spilled"] and not kept.stats.summary()["arenas_spilled"]
    assert "(in a spill file)" in str(spilled.stats)
    np.testing.assert_array_equal(spilled.outputs["C"], kept.outputs["C"])
    np.testing.assert_allclose(spilled.outputs["C"], ins["A"].astype(np.float64) @ ins["B"], rtol=1e-4, atol=1e-4)
    assert spilled.stats.cycles == kept.stats.cycles
    assert spilled.stats.raw.arena_bytes == kept.stats.raw.arena_bytes


def test_auto_spills_when_the_host_is_short_of_memory(monkeypatch):
    monkeypatch.setenv("MICA_SPILL", "auto")
    monkeypatch.setattr(spill, "available_memory", lambda: SPILL_RESERVE_BYTES + 1024)
    prog = mica.compile_affine(mica.ops.matmul(32, 32, 32), mesh=(2, 2))
    ins = {n: np.ones(prog.program.array(n).shape, np.float32) for n in prog.program.inputs}
    res = prog.run(ins)                                    # 2x2 arenas of a few KB each: more than 1 KB
    assert res.stats.summary()["arenas_spilled"]
    np.testing.assert_array_equal(res.outputs["C"], np.full((32, 32), 32.0, np.float32))
    monkeypatch.setattr(spill, "available_memory", lambda: 64 * GiB)
    assert not prog.run(ins).stats.summary()["arenas_spilled"]


def test_resident_state_lives_in_the_spill_file_across_steps(monkeypatch, tmp_path):
    """Weights and a KV cache kept on a spilled mesh for many steps: each step against numpy, the cache read
    back at the end, the spill file nameless in its directory."""
    monkeypatch.setenv("MICA_SPILL", "always")
    monkeypatch.setenv("MICA_SPILL_DIR", str(tmp_path))
    prog = _step((3, 5))
    rng = np.random.default_rng(5)
    W = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    K = np.zeros((L, D), np.float64)
    with prog.load({"W": W, "K": np.zeros((L, D), np.float32)}) as dev:
        assert list(tmp_path.iterdir()) == []
        for pos in range(L):
            x = rng.standard_normal(D).astype(np.float32)
            res = dev.run({"pos": pos, "x": x, "s": np.zeros(L, np.float32)})   # rows past pos: as given
            assert res.stats.summary()["arenas_spilled"]
            K[pos] = W.astype(np.float64) @ x
            np.testing.assert_allclose(res.outputs["s"][:pos + 1], K[:pos + 1] @ x, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(dev.read("K"), K, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(dev.read("W"), W)


def test_a_spill_directory_that_does_not_exist_fails_the_load_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("MICA_SPILL", "always")
    monkeypatch.setenv("MICA_SPILL_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(SimError, match="cannot make a spill file"):
        _step((4, 4)).load({"W": np.eye(D, dtype=np.float32), "K": np.zeros((L, D), np.float32)})


def test_a_committed_mesh_cannot_change_where_its_arenas_live(monkeypatch):
    monkeypatch.setenv("MICA_SPILL", "always")
    with NativeMesh(3, 2, 4, 49152) as mesh:
        mesh.reserve((0, 3, 0, 2), 4096)
        assert mesh._lib.mica_mesh_pool_bytes(mesh._mesh()) >= 6 * 4096
        mesh.commit()
        assert mesh.spilled
        with pytest.raises(SimError, match="already committed"):
            mesh._check(mesh._lib.mica_mesh_set_spill, mesh._mesh(), 0)
        assert ffi.typeof(mesh._lib.mica_mesh_spilled).kind == "function"


def test_a_spill_file_that_cannot_grow_fails_the_run_clearly_not_later(tmp_path):
    """The spill file's blocks are allocated when the mesh commits: a file size limit (as a full disk would)
    fails the run with a SimError there, never as a signal when the kernel later writes pages back."""
    code = """
import resource, signal, numpy as np, mica
from mica.errors import SimError
prog = mica.compile_affine(mica.ops.matmul(32, 32, 32), mesh=(2, 2))
ins = {n: np.ones(prog.program.array(n).shape, np.float32) for n in prog.program.inputs}
prog.run(ins)                                   # kernels built and cached before the limit
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
try:
    prog.run(ins)
except SimError as exc:
    print("refused:", exc)
"""
    env = {**os.environ, "MICA_SPILL": "always", "MICA_SPILL_DIR": str(tmp_path), "MICA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: commit: cannot map" in done.stdout and "onto the spill file (File too large)" in done.stdout
