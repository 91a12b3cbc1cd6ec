"""The emulator's speed-and-scale machinery, checked for correctness (speed itself is measured in
bench/test_emulator.py, never asserted here):

* register-blocked contraction kernels give results bit-identical to the plain loop nests isl prints,
  for every loop order, transposed and strided operands, ``+=``/``-=``, partial tiles, f32 and f64;
* results and statistics are bit-identical for any thread count (phases run in dynamically claimed
  chunks);
* host memory follows what the program allocates, not SRAM capacity x cores;
* the progress bar stays off unless asked for or stderr is a terminal;
* reference libraries built by ``mica.testing`` are unmapped after use.
"""

from __future__ import annotations

import io
import types

import numpy as np
import pytest

import mica
from mica.emit_c.kernels import emit_kernel_module
from mica.native_sim import runtime as rt
from mica.native_sim.execute import execute
from mica.native_sim.runtime import NativeMesh, Progress
from mica.progress import PROGRESS_ENV, progress_wanted
from mica.testing import run_c

_DECL = {"f32": "float", "f64": "double"}

# name -> (C body with placeholders for the element type T and sizes M, N, K, array declarations)
CONTRACTIONS = {
    "ijk+=": ("A[M][K], T B[K][N], T C[M][N]",
              "for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) for (int k = 0; k < K; k++) "
              "C[i][j] += A[i][k] * B[k][j];"),
    "kij": ("A[M][K], T B[K][N], T C[M][N]",
            "for (int k = 0; k < K; k++) for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) "
            "C[i][j] = C[i][j] + A[i][k] * B[k][j];"),
    "Bt-=": ("A[M][K], T B[N][K], T C[M][N]",
             "for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) for (int k = 0; k < K; k++) "
             "C[i][j] -= A[i][k] * B[j][k];"),
    "BA+C": ("A[M][K], T B[K][N], T C[M][N]",
             "for (int i = 0; i < M; i++) for (int k = 0; k < K; k++) for (int j = 0; j < N; j++) "
             "C[i][j] = B[k][j] * A[i][k] + C[i][j];"),
    "colmajor": ("A[K][M], T B[N][K], T C[N][M]",
                 "for (int j = 0; j < N; j++) for (int k = 0; k < K; k++) for (int i = 0; i < M; i++) "
                 "C[j][i] += A[k][i] * B[j][k];"),
}


def _source(name: str, dtype: str, m: int, n: int, k: int) -> str:
    decl, body = CONTRACTIONS[name]
    t = _DECL[dtype]
    decl = decl.replace("T ", f"{t} ").replace("M", str(m)).replace("N", str(n)).replace("K", str(k))
    body = body.replace("< M", f"< {m}").replace("< N", f"< {n}").replace("< K", f"< {k}")
    return f"void f({t} {decl}) {{ {body} }}"


def _inputs(prog, rng) -> dict:
    out = {}
    for name in prog.inputs:
        arr = prog.array(name)
        dt = np.float32 if arr.dtype == "f32" else np.float64
        v = rng.standard_normal(arr.shape).astype(dt)
        flat = v.reshape(-1)
        flat[::7] = 0.0                       # signed zeros and infinities exercise exact rounding paths
        flat[3::11] = -0.0
        flat[5::97] = np.inf
        out[name] = v
    return out


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, except that any two NaNs count as equal (payloads may differ)."""
    nan = np.isnan(a)
    if not np.array_equal(nan, np.isnan(b)):
        return False
    return np.array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))


def _plain(compiled):
    """``compiled`` with every kernel class printed as isl's plain loop nest (no blocking)."""
    return types.SimpleNamespace(program=compiled.program, mesh_program=compiled.mesh_program,
                                 target=compiled.target,
                                 kernel_module=emit_kernel_module(compiled.mesh_program, blocked=False))


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_blocked_contraction_is_bit_identical_to_the_plain_nest(name, dtype):
    prog = mica.affine.from_c(_source(name, dtype, 37, 45, 29))
    rng = np.random.default_rng(7)
    ins = _inputs(prog, rng)
    for mesh in [(1, 1), (3, 2)]:
        compiled = mica.compile_affine(prog, mesh=mesh, target="wormhole")
        blocked = [n for n, f in compiled.kernel_module.sources if "mica_contract_" in f]
        assert blocked, f"{name}: no class was blocked on {mesh}"
        got = compiled.run(ins, threads=2).outputs
        want = execute(_plain(compiled), ins, threads=1).outputs
        for arr in want:
            assert _bits_equal(got[arr], want[arr]), f"{name} {dtype} {arr} on {mesh}"


def test_blocked_matmul_with_register_block_remainders_matches_numpy():
    # 64x64 C tiles with M, N not multiples of any register block; 2 k-panels of depth UK_KC.
    op = mica.ops.matmul(70, 83, 300)
    compiled = mica.compile_affine(op, mesh=(1, 1), target="wormhole")
    assert "mica_contract_f32_add(" in compiled.kernel_module.source
    rng = np.random.default_rng(3)
    A = rng.standard_normal((70, 300), dtype=np.float32)
    B = rng.standard_normal((300, 83), dtype=np.float32)
    got = compiled.run({"A": A, "B": B}).outputs["C"]
    want = execute(_plain(compiled), {"A": A, "B": B}).outputs["C"]
    assert _bits_equal(got, want)
    np.testing.assert_allclose(got, A @ B, rtol=1e-4, atol=1e-4)


def test_not_a_contraction_is_not_blocked():
    # C[i][j] += C[i][k] * B[k][j] reads what it writes: blocking would change the results.
    src = ("void f(double B[8][8], double C[8][8]) { for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) "
           "for (int k = 0; k < 8; k++) C[i][j] += C[i][k] * B[k][j]; }")
    compiled = mica.compile_affine(mica.affine.from_c(src), mesh=(1, 1), target="wormhole")
    assert "mica_contract_" not in compiled.kernel_module.source


def test_results_and_stats_are_bit_identical_for_any_thread_count():
    op = mica.ops.matmul(96, 80, 72)
    compiled = mica.compile_affine(op, mesh=(12, 10))
    rng = np.random.default_rng(5)
    ins = {"A": rng.standard_normal((96, 72), dtype=np.float32),
           "B": rng.standard_normal((72, 80), dtype=np.float32)}
    runs = {t: compiled.run(ins, threads=t) for t in (1, 2, 3, 5)}
    base = runs[1]
    for t, res in runs.items():
        assert _bits_equal(res.outputs["C"], base.outputs["C"]), f"{t} threads"
        assert res.stats.raw == base.stats.raw, f"{t} threads"


def test_host_memory_follows_the_program_not_the_sram():
    # The full WSE-2 rectangle with 64-byte arenas: per-core bookkeeping + the arenas, nowhere near
    # 745,500 x 48 KB (34 GB).
    w, h = 750, 994
    with NativeMesh(w, h, 24, 48 * 1024) as mesh:
        before = mesh.host_bytes()
        mesh.reserve((0, w, 0, h), 64)
        mesh.commit()
        committed = mesh.host_bytes()
        assert before < 150 * w * h                        # bookkeeping: ~100 B per core
        assert committed - before < (64 + 16) * w * h       # the arenas as reserved, plus the prefix sums
        assert committed < 250 * w * h                      # ~190 MB in all for 745,500 cores


def test_route_planes_are_allocated_per_colour_used():
    from mica.native_sim import opcode as oc
    with NativeMesh(64, 64, 24, 1024) as mesh:
        mesh.reserve((0, 64, 0, 64), 16)
        mesh.commit()
        idle = mesh.host_bytes()
        box = oc.Box(0, 4, (oc.BoxDim(oc.AXIS_WHOLE, 1, 1),))
        code = oc.encode([oc.Exchange(0, (oc.Route(3, oc.RAMP, oc.EAST, oc.Rect(0, 1, 0, 1)),
                                          oc.Route(3, oc.WEST, oc.RAMP, oc.Rect(1, 2, 0, 1))),
                                      (oc.Send(3, 1, oc.Rect(0, 1, 0, 1), box),),
                                      (oc.Recv(3, oc.Rect(1, 2, 0, 1), box),))])
        mesh.run(code)
        assert mesh.host_bytes() - idle == 64 * 64 * (2 + 4)   # one colour: (rx, tx) + receive slot


def test_progress_bar_is_off_in_tests_and_for_non_terminals(monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert not progress_wanted(None, io.StringIO())
    monkeypatch.setenv(PROGRESS_ENV, "0")
    assert not progress_wanted(None, types.SimpleNamespace(isatty=lambda: True))
    monkeypatch.setenv(PROGRESS_ENV, "1")
    assert progress_wanted(None, io.StringIO())
    assert not progress_wanted(False, io.StringIO())


def test_progress_bar_draws_for_long_runs_and_clears_its_line(monkeypatch):
    monkeypatch.setattr(rt, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(rt, "PROGRESS_EVERY_S", 0.01)
    compiled = mica.compile_affine(mica.ops.matmul(64, 64, 64), mesh=(8, 8))
    stream = io.StringIO()
    orig = rt.NativeMesh.run
    bars = []

    def run(self, code, kernels=None, scalars=(), threads=1, progress=None):
        bar = Progress(self, enabled=True, stream=stream)
        with bar:
            import time
            time.sleep(0.05)                  # let the watcher draw at least once
            orig(self, code, kernels, scalars, threads, progress=False)
        bars.append(bar)
        assert self.progress()[0] == self.progress()[1] > 0

    monkeypatch.setattr(rt.NativeMesh, "run", run)
    compiled.run({"A": np.ones((64, 64), np.float32), "B": np.ones((64, 64), np.float32)})
    text = stream.getvalue()
    assert bars and bars[0].drawn > 0 and "mica emulator [" in text and text.endswith("\r")
    assert "ops" in Progress.line(bars[0], 5, 10, 3.0) and "50.0%" in Progress.line(bars[0], 5, 10, 3.0)


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/maps"), reason="needs /proc/self/maps")
def test_run_c_unmaps_its_reference_libraries():
    def src(k):
        return f"void f(double A[4]) {{ for (int i = 0; i < 4; i++) A[i] = A[i] * {k}.0 + 1.0; }}"
    run_c(src(0), "f", {"A": np.zeros(4)})
    before = _mappings()
    for k in range(1, 16):
        out = run_c(src(k), "f", {"A": np.ones(4)})["A"]
        np.testing.assert_array_equal(out, np.full(4, k + 1.0))
    assert _mappings() - before < 15             # ~5 mappings per library if they stayed open


_WAFER_RSS_CHILD = """
import json, resource, numpy as np, mica
op = mica.ops.scaled_add((994, 750))
p = mica.compile_affine(op, mesh=(750, 994))
ins = {n: np.full(op.array(n).shape, 1.5, np.float32) for n in op.inputs}
ins["alpha"] = 2.0
out = p.run(ins, threads=2).outputs["C"]
def peak_mb():
    # VmHWM: this process image's own peak (ru_maxrss would keep the forking pytest process's peak across exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"ok": bool(np.all(out == 4.5)), "cores": p.mesh_program.region.cores, "rss_mb": peak_mb()}))
"""


def test_whole_wafer_with_tiny_buffers_stays_small():
    """An elementwise op on all 745,500 cores of mesh=(750, 994), one element per core, in a fresh process:
    its peak RSS is far below what SRAM-sized arenas (745,500 x 48 KB = 34 GB) would take."""
    import json
    import os
    import subprocess
    import sys
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [root, os.environ.get("PYTHONPATH")] if p))
    done = subprocess.run([sys.executable, "-c", _WAFER_RSS_CHILD], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["ok"] and got["cores"] == 750 * 994
    assert got["rss_mb"] < 1024, got


def test_native_arch_builds_have_their_own_cache_key(monkeypatch):
    from mica.emit_c import build
    src = "int mica_probe_native(void) { return 3; }"
    if build.host_target(build.compiler()) is None:
        pytest.skip("the C compiler cannot target the host CPU")
    assert build.native_flags() == ("-march=native",)
    native = build.compile_shared(src, name="probe_native", native=True)
    plain = build.compile_shared(src, name="probe_native")
    assert native != plain                       # -march=native and the host's target are in the key
    monkeypatch.setenv(build.NATIVE_ENV, "0")
    assert build.native_flags() == ()
    assert build.compile_shared(src, name="probe_native", native=True) == plain
