"""LLaMA-3-8B decode on a wafer: modelled per-token latency with weights and KV caches resident, the
per-operator breakdown of a layer, compile times, and one emulated layer step against numpy.

    python -m pytest bench/test_llama3_8b.py --benchmark-only -s -m "slow or not slow"

The model (32 layers, width 4096, 32/8 heads, FFN 14,336, vocabulary 128,256, context 4,096, f16 weights
and caches) runs resident per region (:mod:`mica.models.generate`): each layer on a 125x165 region (36 of
them tile WSE-2's 750x994, 42 WSE-3's 755x1170), the embedding table and the head (1 GB of f16 each) on two
regions each (125x330). The modelled cycles per token are 32 layers at the last position of the context
(the cost model counts a runtime range at its last value) plus the embedding gather, the head and the
hand-offs between regions (:func:`mica.models.generate.handoff_cycles`, an estimate); tokens/s at the
target's clock.

The emulated row loads one layer's random f16 weights and a full KV cache onto the 125x165 region and
times one step at position 4,095 (the benchmark); its baseline, timed in the same run, is numpy doing the
layer's seven weight GEMVs in float32 (the bytes/s of both are printed: the emulator streams the f16
weights through its kernels). The largest of those GEMVs alone (w1, 14,336 x 4,096) is a row of its own:
the emulator's bytes/s of weights for the GEMV the issue's measure names, without the layer's attention over
the cache and its other operators. The whole step loads all 32 layers, each with its own random weights and full
cache on its own region (about 31 GB of emulated SRAM: the layers that do not fit this 24 GB machine's memory
spill to a file, :mod:`mica.native_sim.spill`) and runs one step through them against a numpy reference of the
32 layers written here (:func:`_reference_layer`). In CI (the smoke run) only the compile of the tiny model's
layer with the same code path runs (bench/test_llama.py).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mica.affine.from_c import from_c
from mica.models.generate import handoff_cycles
from mica.models.llama import (LLAMA3_8B, LlamaConfig, cache_shapes, embed_source, head_source, layer_shapes,
                               layer_source, rope_tables)
from mica.pipeline import compile_affine
from mica.targets import get_target

REGION = (125, 165)          # one layer
TOP = (125, 330)             # the embedding table, the head: two regions each
KEPT = tuple(layer_shapes(LLAMA3_8B)) + tuple(cache_shapes(LLAMA3_8B))
WEIGHTS = ("wq", "wk", "wv", "wo", "w1", "w3", "w2")

ROWS: dict[str, dict] = {}
COMPILED: dict[str, object] = {}


def _layer(target: str):
    if target not in COMPILED:
        t0 = time.process_time()
        cp = compile_affine(layer_source(LLAMA3_8B), mesh=REGION, target=target,
                            runtime={"pos": (0, LLAMA3_8B.context)}, resident=KEPT)
        COMPILED[target] = (cp, time.process_time() - t0)
    return COMPILED[target]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["wse2", "wse3"])
def test_llama3_8b_decode_latency(benchmark, target):
    cfg, tgt = LLAMA3_8B, get_target(target)

    def compile_all():
        layer, layer_s = _layer(target)
        t0 = time.process_time()
        embed = compile_affine(embed_source(cfg), mesh=TOP, target=target, runtime={"tok": (0, cfg.vocab)},
                               resident=("emb",))
        head = compile_affine(head_source(cfg), mesh=TOP, target=target, resident=("lnf", "wout"))
        return layer, layer_s, embed, head, time.process_time() - t0
    layer, layer_s, embed, head, top_s = benchmark.pedantic(compile_all, rounds=1, iterations=1)
    hand = handoff_cycles(cfg, REGION, tgt)
    cycles = cfg.layers * layer.cost.total_cycles + embed.cost.total_cycles + head.cost.total_cycles + hand
    clock = tgt.clock_ghz * 1e9
    parts = layer.operator_cycles()
    alone = sum(p.cycles for p in parts)
    row = {"target": target, "cycles": cycles, "us": cycles / clock * 1e6, "tokens_per_s": clock / cycles,
           "layer_cycles": layer.cost.total_cycles, "layer_cores": layer.cost.cores,
           "embed_cycles": embed.cost.total_cycles, "head_cycles": head.cost.total_cycles,
           "head_cores": head.cost.cores, "handoff_cycles": hand, "compile_layer_s": layer_s,
           "compile_whole_model_s": layer_s + top_s, "layer_sram": layer.cost.sram_bytes,
           "between_operators": layer.cost.total_cycles - alone}
    benchmark.extra_info.update(row)
    ROWS[target] = row
    print(f"\nLLaMA-3-8B layer on {REGION[0]}x{REGION[1]} {target}, operators alone (modelled cycles, cores):")
    for p in parts:
        if p.cycles >= 0.01 * layer.cost.total_cycles:
            print(f"  op {p.index:2d} writes {', '.join(p.writes):<12} {p.cycles:>10,.0f}  {p.cores:>6,}")
    print(f"  the {sum(p.cycles < 0.01 * layer.cost.total_cycles for p in parts)} others {sum(p.cycles for p in parts if p.cycles < 0.01 * layer.cost.total_cycles):>14,.0f}")
    print(f"  layout changes and hand-offs between operators {row['between_operators']:>10,.0f}")
    assert layer.cost.cores > 10_000 and layer.cost.sram_bytes <= tgt.sram_bytes
    assert cycles > cfg.layers * layer.cost.compute_cycles


def _inputs():
    rng = np.random.default_rng(0)
    ins = {n: (rng.standard_normal(s, dtype=np.float32) * 0.02).astype(np.float16)
           for n, s in {**layer_shapes(LLAMA3_8B), **cache_shapes(LLAMA3_8B)}.items()}
    ins["rope_cos"], ins["rope_sin"] = rope_tables(LLAMA3_8B)
    return ins, rng.standard_normal(LLAMA3_8B.dim).astype(np.float32)


@pytest.mark.slow
def test_llama3_8b_layer_step_in_the_emulator(benchmark):
    layer, _ = _layer("wse2")
    ins, x = _inputs()
    weights32 = {w: ins[w].astype(np.float32).reshape(-1, LLAMA3_8B.dim if w != "w2" else LLAMA3_8B.ffn)
                 for w in WEIGHTS}
    gemv_in = {w: np.ones(m.shape[1], np.float32) for w, m in weights32.items()}
    t0 = time.perf_counter()
    for _ in range(3):
        for w, m in weights32.items():
            m @ gemv_in[w]
    numpy_s = (time.perf_counter() - t0) / 3
    with layer.load({a: ins[a] for a in KEPT}) as dev:
        last = {}

        walls = []

        def step():
            t0 = time.perf_counter()
            last["res"] = dev.run({"x": x, "pos": LLAMA3_8B.context - 1})
            walls.append(time.perf_counter() - t0)
        benchmark.pedantic(step, rounds=3, iterations=1)
    stats = last["res"].stats.summary()
    f16_bytes = sum(ins[w].nbytes for w in WEIGHTS)
    emu_s = sum(walls) / len(walls)
    row = {"emulated_step_s": emu_s, "emulated_cycles": stats["cycles"],
           "computing_cores": stats["computing_cores"], "numpy_gemv_s": numpy_s,
           "emulator_weight_bytes_per_s": f16_bytes / emu_s,
           "numpy_weight_bytes_per_s": 2 * f16_bytes / numpy_s}
    want = _reference_layer(LLAMA3_8B, ins, x, LLAMA3_8B.context - 1)
    row["max_error"] = float(np.max(np.abs(last["res"].outputs["y"] - want)) / np.max(np.abs(want)))
    benchmark.extra_info.update(row)
    ROWS["emulated"] = row
    assert stats["computing_cores"] == layer.cost.cores
    assert row["max_error"] < 1e-4, f"the emulated layer differs from numpy by {row['max_error']:.2e} of the largest output"


def _gemv_source(rows: int, cols: int) -> str:
    """One of the layer's weight GEMVs alone, as the layer computes it: f16 weights, f32 vector in and out."""
    return (f"void gemv(_Float16 W[{rows}][{cols}], float h[{cols}], float g[{rows}]) {{\n"
            f"  for (int i = 0; i < {rows}; i++) {{ g[i] = 0.0f; for (int k = 0; k < {cols}; k++) "
            f"g[i] += W[i][k] * h[k]; }}\n}}\n")


@pytest.mark.slow
def test_llama3_8b_weight_gemv_in_the_emulator(benchmark):
    """The layer's largest weight GEMV alone (w1: 14,336 x 4,096 f16, resident on the 125x165 region, an f32
    vector in and out): the emulator's bytes/s of weights against numpy's f32 GEMV of the same matrix timed in
    the same run (best of 10), the measure issue 18 names for the weight-streaming GEMVs (the layer step above
    adds attention over the cache and the layer's other operators to the same weights)."""
    rows, cols = LLAMA3_8B.ffn, LLAMA3_8B.dim
    cp = compile_affine(from_c(_gemv_source(rows, cols)), mesh=REGION, resident=("W",))
    rng = np.random.default_rng(3)
    W = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)
    h = rng.standard_normal(cols).astype(np.float32)
    W32 = W.astype(np.float32)
    numpy_s = []
    for _ in range(10):
        t0 = time.perf_counter()
        want = W32 @ h
        numpy_s.append(time.perf_counter() - t0)
    walls, last = [], {}
    with cp.load({"W": W}) as dev:
        def step():
            t0 = time.perf_counter()
            last["res"] = dev.run({"h": h})
            walls.append(time.perf_counter() - t0)
        step()                                  # the first run pages the arenas in
        walls.clear()
        benchmark.pedantic(step, rounds=5, iterations=1)
    got = last["res"].outputs["g"]
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    row = {"emulated_s": min(walls), "numpy_s": min(numpy_s), "cores": cp.cost.cores,
           "modelled_cycles": cp.cost.total_cycles,
           "emulator_weight_bytes_per_s": W.nbytes / min(walls), "numpy_weight_bytes_per_s": W32.nbytes / min(numpy_s),
           "max_error": err}
    benchmark.extra_info.update(row)
    ROWS["gemv"] = row
    assert err < 1e-5, f"the emulated GEMV differs from numpy's by {err:.1e} of the largest output"
    assert last["res"].stats.summary()["computing_cores"] == cp.cost.cores


def _layer_weights(cfg, i: int) -> dict[str, np.ndarray]:
    """Layer ``i``'s random weights and KV cache (every row filled; f16 when ``cfg`` says so) and the RoPE
    tables, made from seed ``i`` array by array (a layer's float32 draws never all exist at once)."""
    rng = np.random.default_rng(1000 + i)
    dtype = np.float16 if cfg.weights == "f16" else np.float32
    out = {n: (rng.standard_normal(s, dtype=np.float32) * 0.02).astype(dtype)
           for n, s in {**layer_shapes(cfg), **cache_shapes(cfg)}.items() if not n.startswith("rope")}
    for gain in ("ln1", "ln2"):
        out[gain] = (1.0 + out[gain].astype(np.float32) * 10).astype(dtype)
    out["rope_cos"], out["rope_sin"] = rope_tables(cfg)
    return out


def _reference_layer(cfg, w: dict, x: np.ndarray, pos: int) -> np.ndarray:
    """One decode step of :func:`mica.models.llama.layer_source` for ``cfg`` in numpy (float64 but for the
    new KV cache row, stored in the cache's dtype as the program stores it), written here from the LLaMA
    definition in the program's array layout (:func:`layer_shapes`); ``w`` as :func:`_layer_weights` gives
    it."""
    G, R, hd, half = cfg.kv_heads, cfg.group, cfg.head_dim, cfg.head_dim // 2

    def gemv(name, v):
        return w[name].reshape(-1, v.size).astype(np.float64) @ v

    def norm(v, gain):
        return v / np.sqrt(np.mean(v * v) + cfg.eps) * w[gain].astype(np.float64)
    x = x.astype(np.float64)
    h = norm(x, "ln1")
    q, k, v = gemv("wq", h).reshape(G, R, 2, half), gemv("wk", h).reshape(G, 2, half), gemv("wv", h).reshape(G, hd)
    cs, sn = w["rope_cos"][pos].astype(np.float64), w["rope_sin"][pos].astype(np.float64)
    qr = np.stack([q[:, :, 0] * cs - q[:, :, 1] * sn, q[:, :, 1] * cs + q[:, :, 0] * sn], axis=2)
    kc, vc = w["kc"][:pos + 1].astype(np.float64), w["vc"][:pos + 1].astype(np.float64)
    kc[pos] = np.stack([k[:, 0] * cs - k[:, 1] * sn, k[:, 1] * cs + k[:, 0] * sn], axis=1).astype(w["kc"].dtype)
    vc[pos] = v.astype(w["vc"].dtype)
    s = np.einsum("grce,lgce->grl", qr, kc) / np.sqrt(hd)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    at = np.einsum("grl,lge->gre", p, vc) / p.sum(axis=-1)[..., None]
    o1 = x + gemv("wo", at.reshape(-1))
    hb = norm(o1, "ln2")
    gt, up = gemv("w1", hb), gemv("w3", hb)
    return o1 + gemv("w2", gt / (1.0 + np.exp(-gt)) * up)


def _whole_step(benchmark, cfg, layer) -> dict:
    """Every layer of ``cfg`` loaded at once from ``layer`` (compiled), each with its own random weights and
    full cache (:func:`_layer_weights`), then one decode step at the last position through them, timed by
    ``benchmark``; the hidden state against :func:`_reference_layer` chained over the layers."""
    pos = cfg.context - 1
    kept = tuple(layer_shapes(cfg)) + tuple(cache_shapes(cfg))
    x0 = np.random.default_rng(7).standard_normal(cfg.dim).astype(np.float32)
    devices, want = [], x0
    t0 = time.perf_counter()
    try:
        for i in range(cfg.layers):
            w = _layer_weights(cfg, i)
            devices.append(layer.load({a: w[a] for a in kept}))
            want = _reference_layer(cfg, w, want, pos)
            del w
        load_s = time.perf_counter() - t0
        last = {}

        def step():
            t0 = time.perf_counter()
            x, cycles, spilled = x0, [], 0
            for dev in devices:
                res = dev.run({"x": x, "pos": pos})
                x = res.outputs["y"]
                cycles.append(res.stats.cycles)
                spilled += res.stats.summary()["arenas_spilled"]
            last.update(y=x, cycles=cycles, spilled=spilled, seconds=time.perf_counter() - t0)
        benchmark.pedantic(step, rounds=1, iterations=1)
    finally:
        for dev in devices:
            dev.close()
    err = float(np.max(np.abs(last["y"] - want)) / np.max(np.abs(want)))
    row = {"layers": len(devices), "load_s": load_s, "step_s": last["seconds"], "cycles": sum(last["cycles"]),
           "spilled_layers": last["spilled"], "max_error": err}
    benchmark.extra_info.update(row)
    assert err < 1e-2, f"{cfg.layers} layers differ from numpy by {err:.2e} of the largest output"
    assert len(set(last["cycles"])) == 1        # one plan at one position: the same work and messages per layer
    return row


@pytest.mark.slow
def test_llama3_8b_whole_decode_step_in_the_emulator(benchmark):
    """All 32 layers of LLaMA-3-8B resident at once, each on its own emulated 125x165 region with its own
    random f16 weights and a full KV cache, and one decode step at position 4,095 through them: the hidden
    state carried from layer to layer, the result against the numpy reference of the 32 layers. The arenas
    (about 1 GB a layer) exceed this machine's memory, so the later layers' spill to a file
    (:mod:`mica.native_sim.spill`): the step's wall time includes paging them in."""
    ROWS["whole"] = _whole_step(benchmark, LLAMA3_8B, _layer("wse2")[0])


@pytest.mark.slow
def test_small_whole_decode_step_with_spilled_arenas(benchmark, monkeypatch):
    """The whole step's code at a small size (about 30 s, most of it the layer's compile): three layers of a
    small f16 model on 3x2 regions, every layer's arenas in a spill file, against the same numpy reference.
    CI checks the parts: resident steps on spilled meshes (tests/native/test_spill.py) and whole tiny models
    token for token against numpy (tests/models/test_llama.py)."""
    monkeypatch.setenv("MICA_SPILL", "always")
    cfg = LlamaConfig(layers=3, dim=32, heads=2, kv_heads=1, ffn=64, vocab=64, context=16, weights="f16")
    layer = compile_affine(layer_source(cfg), mesh=(3, 2), runtime={"pos": (0, cfg.context)},
                           resident=tuple(layer_shapes(cfg)) + tuple(cache_shapes(cfg)))
    row = _whole_step(benchmark, cfg, layer)
    assert row["spilled_layers"] == cfg.layers and layer.cost.cores > 1


def teardown_module():
    if not ROWS:
        return
    print("\n| target | cycles/token | us/token | tokens/s | layer (cores) | embed | head (cores) | hand-offs | "
          "compile layer s | compile model s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in ("wse2", "wse3"):
        if t in ROWS:
            r = ROWS[t]
            print(f"| {t} | {r['cycles']:,.0f} | {r['us']:,.1f} | {r['tokens_per_s']:,.0f} | "
                  f"{r['layer_cycles']:,.0f} ({r['layer_cores']:,}) | {r['embed_cycles']:,.0f} | "
                  f"{r['head_cycles']:,.0f} ({r['head_cores']:,}) | {r['handoff_cycles']:,.0f} | "
                  f"{r['compile_layer_s']:.1f} | {r['compile_whole_model_s']:.1f} |")
    if "emulated" in ROWS:
        r = ROWS["emulated"]
        print(f"\none emulated layer step (wse2, pos 4095): {r['emulated_step_s']:.2f} s, "
              f"{r['emulated_cycles']:,.0f} cycles on {r['computing_cores']:,} computing cores; weights "
              f"streamed at {r['emulator_weight_bytes_per_s'] / 1e9:.2f} GB/s (f16) against numpy's "
              f"{r['numpy_weight_bytes_per_s'] / 1e9:.2f} GB/s (f32 GEMVs, {r['numpy_gemv_s'] * 1e3:.1f} ms); "
              f"largest difference from numpy {r['max_error']:.1e} of the largest output")
    if "gemv" in ROWS:
        r = ROWS["gemv"]
        print(f"w1's GEMV alone (14,336 x 4,096 f16 on {r['cores']:,} cores, {r['modelled_cycles']:,.0f} modelled "
              f"cycles): emulated in {r['emulated_s'] * 1e3:.1f} ms, {r['emulator_weight_bytes_per_s'] / 1e9:.2f} GB/s "
              f"of f16 weights against numpy's {r['numpy_weight_bytes_per_s'] / 1e9:.2f} GB/s of f32 "
              f"({r['numpy_s'] * 1e3:.1f} ms): "
              f"{r['emulator_weight_bytes_per_s'] / r['numpy_weight_bytes_per_s']:.0%}")
    if "whole" in ROWS:
        r = ROWS["whole"]
        print(f"whole emulated decode step (32 layers resident, wse2, pos 4095): {r['step_s']:.1f} s "
              f"({r['load_s']:.0f} s to load them; {r['spilled_layers']} layers' arenas in spill files), "
              f"{r['cycles']:,.0f} cycles for the layers; largest difference from numpy {r['max_error']:.1e} "
              f"of the largest output")
