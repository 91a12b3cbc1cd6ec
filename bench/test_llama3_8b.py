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
weights through its kernels). A whole 32-layer step would hold 32 such regions: about 29 GB of emulated
SRAM, more than this 24 GB machine has, so it is not run here. In CI (the smoke run) only the compile of
the tiny model's layer with the same code path runs (bench/test_llama.py).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mica.models.generate import handoff_cycles
from mica.models.llama import (LLAMA3_8B, cache_shapes, embed_source, head_source, layer_shapes, layer_source,
                               rope_tables)
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
    benchmark.extra_info.update(row)
    ROWS["emulated"] = row
    assert stats["computing_cores"] == layer.cost.cores
    assert np.isfinite(last["res"].outputs["y"]).all()


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
              f"{r['numpy_weight_bytes_per_s'] / 1e9:.2f} GB/s (f32 GEMVs, {r['numpy_gemv_s'] * 1e3:.1f} ms)")
