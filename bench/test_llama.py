"""LLM decode on the mesh: per-token latency of LLaMA-style models with weights and KV caches resident,
its per-program breakdown, compile time, and the emulator's step time against numpy's.

    python -m pytest bench/test_llama.py --benchmark-only -s -m "slow or not slow"

Each row compiles the three programs of :mod:`mica.models.llama` for a region of ``mesh`` cores (one region
per program: ``layers + 2`` of them) and runs decode steps in the emulator with random weights: the modelled
cycles per token are the programs' emulated cycles at the step's position plus the estimated hand-offs
between regions (:class:`mica.models.generate.StepResult`); tokens/s at the target's clock. The benchmark
times one emulated step; its baseline, timed in the same run, is the same step in numpy (float32 matrix-vector
products). LLaMA-3-8B's dimensions are in bench/test_llama3_8b.py. In CI (the smoke run) only the first row
runs.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mica.models.generate import Decoder
from mica.models.llama import LlamaConfig
from mica.models.weights import random_weights

ROWS: dict[str, dict] = {}

#: name -> (config, region mesh, target)
MODELS = {
    "tiny-2x64-4x4-wse2": (LlamaConfig(layers=2, dim=64, heads=4, kv_heads=2, ffn=128, vocab=256, context=64),
                           (4, 4), "wse2"),
    "tiny-2x64-8x8-wse2": (LlamaConfig(layers=2, dim=64, heads=4, kv_heads=2, ffn=128, vocab=256, context=64),
                           (8, 8), "wse2"),
    "tiny-2x64-8x8-wse3": (LlamaConfig(layers=2, dim=64, heads=4, kv_heads=2, ffn=128, vocab=256, context=64),
                           (8, 8), "wse3"),
    "tiny-f16-2x64-8x8-wse2": (LlamaConfig(layers=2, dim=64, heads=4, kv_heads=2, ffn=128, vocab=256, context=64,
                                           weights="f16"), (8, 8), "wse2"),
}


def _numpy_step(cfg: LlamaConfig, w: dict, pos: int) -> float:
    """The work of one decode step in numpy (float32): the projections, attention over ``pos + 1`` rows and
    the MLP of every layer, and the logits. Returns a checksum (so nothing is optimised away)."""
    x = w["model.embed_tokens.weight"][3]
    acc = 0.0
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        q = w[p + "self_attn.q_proj.weight"] @ x
        k = w[p + "self_attn.k_proj.weight"] @ x
        kc = np.broadcast_to(k, (pos + 1, k.size))
        s = kc @ q[:k.size]
        e = np.exp(s - s.max())
        x = x + w[p + "self_attn.o_proj.weight"] @ np.resize(e @ kc, x.size)
        g = w[p + "mlp.gate_proj.weight"] @ x
        x = x + w[p + "mlp.down_proj.weight"] @ (g / (1 + np.exp(-g)) * (w[p + "mlp.up_proj.weight"] @ x))
        acc += float(x[0])
    return acc + float((w["lm_head.weight"] @ x)[0])


def decode_row(name: str) -> tuple[dict, Decoder]:
    cfg, mesh, target = MODELS[name]
    w = random_weights(cfg, seed=1)
    t0 = time.process_time()
    dec = Decoder(cfg, w, mesh=mesh, target=target)
    compile_s = time.process_time() - t0
    dec.generate([1, 2, 3], cfg.context // 2 - 2)              # fill half the context
    step = dec.step(5)
    clock = dec.target.clock_ghz * 1e9
    row = {"cycles": step.total_cycles, "us": step.total_cycles / clock * 1e6,
           "tokens_per_s": clock / step.total_cycles, "layer_cycles": step.cycles["layer0"],
           "embed_cycles": step.cycles["embed"], "head_cycles": step.cycles["head"],
           "transfer_cycles": step.transfer_cycles, "layer_cores": dec.layer.cost.cores,
           "regions": cfg.layers + 2, "compile_s": compile_s, "host_bytes": step.host_bytes}
    return row, dec


@pytest.mark.parametrize("name", list(MODELS))
def test_decode_step(benchmark, name):
    row, dec = decode_row(name)
    cfg = MODELS[name][0]
    try:
        benchmark.extra_info.update(row)
        w = random_weights(cfg, seed=1)
        t0 = time.perf_counter()
        for _ in range(3):
            _numpy_step(cfg, w, cfg.context // 2)
        numpy_s = (time.perf_counter() - t0) / 3
        pos = dec.position

        def one_step():
            dec.step(5, pos)
        benchmark.pedantic(one_step, rounds=3, iterations=1)
        row["numpy_step_s"] = numpy_s
    finally:
        dec.close()
    assert row["layer_cores"] > 1 and row["cycles"] > row["transfer_cycles"] > 0
    ROWS[name] = row


def teardown_module():
    if not ROWS:
        return
    print("\n| model | region | cores per layer | cycles/token | us/token | tokens/s | layer | embed | head | "
          "hand-offs | compile s | numpy step s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in ROWS.items():
        if r.get("reason"):
            print(f"| {name} | | | not compiled: {r['reason']} |")
            continue
        print(f"| {name} | {r.get('regions', 1)} regions | {r['layer_cores']:,} | {r['cycles']:,.0f} | "
              f"{r.get('us', float('nan')):,.2f} | {r.get('tokens_per_s', float('nan')):,.0f} | "
              f"{r.get('layer_cycles', r['cycles']):,.0f} | {r.get('embed_cycles', 0):,.0f} | "
              f"{r.get('head_cycles', 0):,.0f} | {r.get('transfer_cycles', 0):,.0f} | {r['compile_s']:.1f} | "
              f"{r.get('numpy_step_s', float('nan')):.2e} |")
