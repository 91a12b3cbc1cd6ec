"""How far each classic kernel spreads: the cores that compute and the modelled speedup over one core.

    python -m pytest bench/test_spread.py --benchmark-only -s -m "slow or not slow"

For every kernel of ``tests/frontend/kernels`` (the PolyBench-style set, at the manifest's sizes) and the
application kernels of the tests (softmax, decode and causal prefill attention, arg-min, in-place RoPE, the LLM
decode layer of ``examples/decode_layer.c``) the searched plan is
compiled for 8x8 and for the whole WSE-2 rectangle (750x994); the baseline is the same program on one core,
costed by the same model (:func:`mica.tiling.cost.one_core_cycles`). A kernel that does
not spread prints the reason the plan gives. The table printed at the end of a run is the figure for the notes.

The same PolyBench kernels at PolyBench/C's SMALL dataset (:data:`SMALL`, about 128 KB of data each, more than
one core holds: the smallest size the suite's authors meant to leave a cache) make a second table: a kernel
without a plan at that size prints the error its compile raises.

In CI (the smoke run) only :data:`QUICK` runs, on 8x8 (one kernel at its SMALL size among them); the full tables
are marked ``slow``.
"""

from __future__ import annotations

import re
import time
from math import prod
from pathlib import Path

import pytest

import mica
from mica.affine.from_c import from_c
from mica.tiling.cost import one_core_cycles

from frontend.frontend_util import MANIFEST, POLYBENCH_SMALL, kernel_function, kernel_source, sized_kernel
from native.test_minmax_programs import ARGMIN, ATTENTION, PREFILL, SOFTMAX
from native.test_online_softmax import ONLINE_ATTENTION

ROPE = """
void rope(int T, int H, int R, float q[T][H][2*R], float cs[T][R], float sn[T][R]) {
  for (int t = 0; t < T; t++) for (int h = 0; h < H; h++) for (int i = 0; i < R; i++) {
      float a = q[t][h][2*i]; float b = q[t][h][2*i+1];
      q[t][h][2*i] = a*cs[t][i] - b*sn[t][i]; q[t][h][2*i+1] = a*sn[t][i] + b*cs[t][i]; } }
"""

#: An in-place Gauss-Seidel sweep: every loop carries a dependence of distance 1, so it spreads only as a
#: wavefront (mica.tiling.wavefront).
GAUSS_SEIDEL = """
void gauss_seidel(int N, float A[N + 2][N + 2]) {
  for (int i = 1; i <= N; i++)
    for (int j = 1; j <= N; j++)
      A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i + 1][j] + A[i][j + 1]) * 0.25f;
}
"""

#: A vector update over one long loop: spread over both mesh axes only folded (mica.tiling.folded).
AXPY = """
void axpy(int N, float a, float x[N], float y[N]) {
  for (int i = 0; i < N; i++) y[i] = a * x[i] + y[i];
}
"""

#: The LLM decode layer as one C function (examples/decode_layer.c; its sizes are macros).
DECODE_LAYER = (Path(__file__).resolve().parents[1] / "examples" / "decode_layer.c").read_text()

KERNELS = {name: (kernel_source(name), kernel_function(name), spec["params"]) for name, spec in MANIFEST.items()}
KERNELS.update({
    "softmax": (SOFTMAX, "softmax", {"N": 64, "M": 96}),
    "attention-decode-1": (ATTENTION, "attention", {"H": 1, "L": 256, "D": 32}),
    "attention-decode-32": (ATTENTION, "attention", {"H": 32, "L": 64, "D": 16}),
    "attention-online-1": (ONLINE_ATTENTION, "attention", {"H": 1, "L": 256, "D": 32}),
    "attention-prefill-causal": (PREFILL, "prefill", {"H": 2, "T": 64, "D": 16}),
    "argmin-top1": (ARGMIN, "argmin", {"N": 2048, "D": 16}),
    "rope-in-place": (ROPE, "rope", {"T": 64, "H": 8, "R": 16}),
    "gauss-seidel-wavefront": (GAUSS_SEIDEL, "gauss_seidel", {"N": 64}),
    "decode-layer": (DECODE_LAYER, "layer", {}),
    "axpy": (AXPY, "axpy", {"N": 4096}),
})
#: The PolyBench kernels at PolyBench/C's SMALL dataset sizes, named ``<kernel>@SMALL``.
def _small(name: str) -> tuple[str, str, dict]:
    src, params = sized_kernel(name, POLYBENCH_SMALL[name])
    return src, kernel_function(name), params


SMALL = {f"{name}@SMALL": _small(name) for name in POLYBENCH_SMALL}
KERNELS.update(SMALL)
NAMES = sorted(KERNELS)

# spread, triangular, aligned, stays on one core; a kernel whose data no core holds
QUICK = ("gemm", "syrk", "trisolv", "floyd-warshall", "symm@SMALL", "axpy")
MESHES = {"8x8": (8, 8), "750x994": (750, 994)}
ROWS: dict[tuple[str, str], dict] = {}


def spread_row(name: str, mesh: tuple[int, int]) -> dict:
    """The searched plan of kernel ``name`` on ``mesh`` against the one-core plan: computing cores, modelled
    cycles of both (the one-core cycles from :func:`one_core_cycles`, which exist even when the data do not
    fit one core), the speedup, compile seconds and (when it stays on one core) the reason its schedule gives."""
    src, fn, params, *defines = KERNELS[name]
    prog = from_c(src, fn, params=params, filename=f"{name}.c", defines=defines[0] if defines else None)
    t0 = time.perf_counter()
    try:
        chosen = mica.compile_affine(prog, mesh=mesh)
    except mica.errors.MicaError as exc:
        if name not in SMALL:
            raise
        return {"cores": 0, "cycles": float("nan"), "one_core_cycles": float("nan"), "speedup": float("nan"),
                "compile_s": time.perf_counter() - t0, "family": "", "fits_one_core": False, "reason": f"no plan: {str(exc)[:200]}"}
    seconds = time.perf_counter() - t0
    one = one_core_cycles(chosen.program, chosen.target)
    data = sum(a.elem_bytes * prod(a.shape) for a in chosen.program.arrays)
    row = {"cores": chosen.cost.cores, "cycles": chosen.cost.total_cycles, "one_core_cycles": one,
           "fits_one_core": data <= chosen.target.sram_bytes,
           "speedup": one / chosen.cost.total_cycles, "compile_s": seconds,
           "family": chosen.schedule.family, "reason": ""}
    if chosen.cost.cores <= 1:
        row["reason"] = one_core_reason(chosen.schedule.reasons)
    return row


def one_core_reason(reasons: tuple[str, ...]) -> str:
    """Why a plan stays on one core, from its ``reasons``: when the operators of the program were mapped over
    the mesh and one core came out cheaper, the cheapest way over the mesh against the one-core cycles (the
    rejected ways before it are not the reason); otherwise the first line saying what was rejected or which
    loop carries a dependence."""
    for k, r in enumerate(reasons):
        if "chosen: one core" in r:
            ways = [w.strip() for w in reasons[k + 1:] if " cycles " in w and not w.strip().endswith("one core")]
            cheapest = min(ways, key=lambda w: float(w.split(" cycles ")[0].replace(",", "")), default="")
            one = re.search(r"chosen: one core \(([\d,]+) modelled cycles\)", r)
            return (f"one core ({one.group(1) if one else '?'} modelled cycles) is no dearer than the cheapest "
                    f"other way: {' '.join(cheapest.split())}" if cheapest
                    else f"no way over the mesh works: {r}")
    return next((r for r in reasons if "rejected" in r or "carries" in r), reasons[0] if reasons else "")


def _check(row: dict) -> None:
    # The search never picks a plan the model says is slower than the one-core plan it also tries (when that
    # plan can hold the data at all).
    if row["cores"] and row["fits_one_core"]:
        assert row["cycles"] <= row["one_core_cycles"] * (1 + 1e-9)


@pytest.mark.parametrize("name", QUICK)
def test_spread_quick(benchmark, name):
    row = benchmark.pedantic(spread_row, args=(name, (8, 8)), rounds=1, iterations=1)
    benchmark.extra_info.update(row)
    _check(row)
    ROWS[(name, "8x8")] = row


def test_quick_rows_have_plans():
    """Every kernel of the quick run compiles (a SMALL row may record an error only in the full tables)."""
    assert all(ROWS[(name, "8x8")]["cores"] >= 1 for name in QUICK if (name, "8x8") in ROWS)
    if ("axpy", "8x8") in ROWS:         # one long loop, folded over both axes: more cores than a line holds
        assert ROWS[("axpy", "8x8")]["cores"] > 8


@pytest.mark.slow
@pytest.mark.parametrize("mesh", sorted(MESHES))
@pytest.mark.parametrize("name", NAMES)
def test_spread(benchmark, name, mesh):
    row = benchmark.pedantic(spread_row, args=(name, MESHES[mesh]), rounds=1, iterations=1)
    benchmark.extra_info.update(row)
    _check(row)
    ROWS[(name, mesh)] = row


def table(rows: dict[tuple[str, str], dict]) -> str:
    """The rows as a Markdown table: one line per kernel, cores and speedup per mesh."""
    meshes = [m for m in MESHES if any(k[1] == m for k in rows)]
    head = "| kernel | " + " | ".join(f"cores {m} | speedup {m}" for m in meshes) + " | why one core |"
    lines = [head, "|" + "---|" * (2 * len(meshes) + 2)]
    for name in sorted({k[0] for k in rows}, key=lambda n: ("@" in n, n)):
        cells, why = [], ""
        for m in meshes:
            r = rows.get((name, m))
            if r is None:
                cells += ["", ""]
                continue
            cells += [f"{r['cores']:,}", f"{r['speedup']:,.1f}x" if r["cores"] else "no plan"]
            why = why or r["reason"].strip()
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {why[:140]} |")
    return "\n".join(lines)


def teardown_module():
    if ROWS:
        print(f"\n{table(ROWS)}")
        for which, small in (("at the manifest's sizes", False), ("at PolyBench's SMALL sizes", True)):
            on = [r for (n, m), r in ROWS.items() if m == "8x8" and ("@SMALL" in n) == small]
            if on:
                spread = sum(1 for r in on if r["cores"] > 1)
                failed = sum(1 for r in on if not r["cores"])
                print(f"{which}: {spread} of {len(on)} kernels spread over more than one core on 8x8"
                      + (f" ({failed} without a plan)" if failed else ""))


#: The applications at the sizes people run them (decode attention over a 4096-token KV cache with head
#: dimension 128; causal prefill attention over 4096 tokens, 32 heads; top-1 search over 2^20 vectors of
#: 128 floats; RoPE in place over 4096 tokens, 32 heads of 128; a 4096x4096 Gauss-Seidel sweep as a
#: wavefront; the LLM decode layer with model width 1024, a 1024-token cache and MLP width 2816; a vector
#: update over 2^20 elements), compiled for the whole WSE-2 rectangle.
REAL = {
    "attention-decode-1x4096x128": (ATTENTION, "attention", {"H": 1, "L": 4096, "D": 128}),
    "attention-decode-32x4096x128": (ATTENTION, "attention", {"H": 32, "L": 4096, "D": 128}),
    # The same with the online softmax's (running max, rescaled sum) pair: one reduction across cores fewer.
    "attention-online-1x4096x128": (ONLINE_ATTENTION, "attention", {"H": 1, "L": 4096, "D": 128}),
    "attention-online-32x4096x128": (ONLINE_ATTENTION, "attention", {"H": 32, "L": 4096, "D": 128}),
    "attention-prefill-causal-32x4096x128": (PREFILL, "prefill", {"H": 32, "T": 4096, "D": 128}),
    "argmin-top1-2^20x128": (ARGMIN, "argmin", {"N": 1 << 20, "D": 128}),
    "rope-in-place-4096x32x128": (ROPE, "rope", {"T": 4096, "H": 32, "R": 64}),
    "gauss-seidel-wavefront-4096x4096": (GAUSS_SEIDEL, "gauss_seidel", {"N": 4096}),
    "decode-layer-1024x1024x2816": (DECODE_LAYER, "layer", {}, {"D": 1024, "L": 1024, "F": 2816}),
    "axpy-2^20": (AXPY, "axpy", {"N": 1 << 20}),
    # Recursive filters whose carried temporaries are expanded into wavefronts (mica.affine.recurrence).
    "deriche-1024x1024": (kernel_source("deriche").replace("24 + 0", "1024").replace("16 + 0", "1024"),
                          "kernel_deriche", {"w": 1024, "h": 1024}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL))
def test_application_at_real_size(benchmark, name):
    KERNELS[name] = REAL[name]
    row = benchmark.pedantic(spread_row, args=(name, (750, 994)), rounds=1, iterations=1)
    benchmark.extra_info.update(row)
    _check(row)
    print(f"\n{name} on 750x994: compiled in {row['compile_s']:.1f} s, {row['cores']:,} cores compute, "
          f"{row['cycles']:,.0f} modelled cycles, {row['speedup']:,.0f}x the one-core plan")
