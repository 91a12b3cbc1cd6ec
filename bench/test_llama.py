"""LLM decode and prefill on the mesh: per-token latency of LLaMA-style models with weights and KV caches
resident, its per-program breakdown, compile time, and the emulator's step time against numpy's; the prefill
throughput of prompt chunks through the GEMM-shaped layer against decode steps over the same prompt.

    python -m pytest bench/test_llama.py --benchmark-only -s -m "slow or not slow"

Each row compiles the three programs of :mod:`mica.models.llama` for a region of ``mesh`` cores (one region
per program: ``layers + 2`` of them) and runs decode steps in the emulator with random weights: the modelled
cycles per token are the programs' emulated cycles at the step's position plus the estimated hand-offs
between regions (:class:`mica.models.generate.StepResult`); tokens/s at the target's clock. The benchmark
times one emulated step; its baseline, timed in the same run, is the same step in numpy (float32 matrix-vector
products). LLaMA-3-8B's decode is in bench/test_llama3_8b.py.

Prefill rows (:func:`test_prefill_chunk`): ``Decoder(prefill=T)`` feeds a prompt of half the context in
chunks of ``T`` tokens (:meth:`mica.models.generate.Decoder.prefill`); the modelled cycles per chunk (``T``
embedding gathers, every layer, the hand-offs of ``T`` hidden states), tokens/s at the target's clock, the
cores computing in a layer's run, and — the baseline in the same run — the same prompt fed by decode steps
(``speedup``: prefill tokens/s over decode-step tokens/s; the KV caches carried between the two copies of a
layer through the host are reported in bytes, not cycles). The benchmark times one emulated prefill of the
prompt; its baseline is the same prefill in numpy (float32 GEMMs, causal attention). The slow LLaMA-3-8B
prefill row compiles the layer for ``T`` = 4,096 tokens on the whole WSE-2 (750x994) and prints the reason
when no plan is found. In CI (the smoke run) only the first decode row runs (the prefill rows are slow: the
prefill path's correctness is checked in tests/models/test_llama.py).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mica.errors import MicaError
from mica.models.generate import Decoder
from mica.models.llama import LLAMA3_8B, LlamaConfig, prefill_source
from mica.models.weights import random_weights
from mica.pipeline import compile_affine

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
    acc = 0.0          # (SiLU through tanh: the same sigmoid, without exp's overflow on this unnormalised state)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        q = w[p + "self_attn.q_proj.weight"] @ x
        k = w[p + "self_attn.k_proj.weight"] @ x
        kc = np.broadcast_to(k, (pos + 1, k.size))
        s = kc @ q[:k.size]
        e = np.exp(s - s.max())
        x = x + w[p + "self_attn.o_proj.weight"] @ np.resize(e @ kc, x.size)
        g = w[p + "mlp.gate_proj.weight"] @ x
        x = x + w[p + "mlp.down_proj.weight"] @ (g * (0.5 + 0.5 * np.tanh(0.5 * g)) * (w[p + "mlp.up_proj.weight"] @ x))
        acc += float(x[0])
    return acc + float((w["lm_head.weight"] @ x)[0])


def _numpy_prefill(cfg: LlamaConfig, w: dict, tokens: int) -> float:
    """The work of prefilling ``tokens`` tokens in numpy (float32): the projections as GEMMs, causal
    attention over the chunk, the MLP of every layer, and the last token's logits. Returns a checksum."""
    x = w["model.embed_tokens.weight"][np.arange(tokens) % cfg.vocab]
    hd, mask = cfg.head_dim, np.triu(np.full((tokens, tokens), -np.inf, np.float32), 1)
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        q = (x @ w[p + "self_attn.q_proj.weight"].T).reshape(tokens, cfg.heads, hd)
        k = (x @ w[p + "self_attn.k_proj.weight"].T).reshape(tokens, cfg.kv_heads, hd)
        v = (x @ w[p + "self_attn.v_proj.weight"].T).reshape(tokens, cfg.kv_heads, hd)
        k, v = np.repeat(k, cfg.group, axis=1), np.repeat(v, cfg.group, axis=1)
        s = np.einsum("thd,lhd->htl", q, k) / np.sqrt(hd) + mask
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        at = np.einsum("htl,lhd->thd", e / e.sum(axis=-1, keepdims=True), v).reshape(tokens, -1)
        x = x + at @ w[p + "self_attn.o_proj.weight"].T
        g = x @ w[p + "mlp.gate_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return float((w["lm_head.weight"] @ x[-1])[0])


def _why(exc: MicaError, most: int = 4) -> str:
    """The first line of ``exc`` and the distinct reasons its detail gives for the ways the search tried
    (``rejected <strategy>: <reason> [...]``), each cut to 110 characters, at most ``most`` of them."""
    reasons = []
    for line in (exc.detail or "").splitlines():
        line = line.strip()
        if not line.startswith("rejected") or ": " not in line:
            continue
        why = line.split(": ", 1)[1].split(" [", 1)[0][:110]
        if why not in reasons:
            reasons.append(why)
    head = str(exc).splitlines()[0]
    return (head[:120] + (" ..." if len(head) > 120 else "")
            + "".join(f" / {r}" for r in reasons[:most]))


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


#: name -> (decode model of MODELS, tokens per prefill chunk)
PREFILLS = {"tiny-2x64-4x4-wse2-T4": ("tiny-2x64-4x4-wse2", 4), "tiny-2x64-8x8-wse2-T8": ("tiny-2x64-8x8-wse2", 8)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PREFILLS))
def test_prefill_chunk(benchmark, name):
    model, T = PREFILLS[name]
    cfg, mesh, target = MODELS[model]
    w = random_weights(cfg, seed=1)
    prompt = [int(t) for t in np.random.default_rng(2).integers(0, cfg.vocab, cfg.context // 2)]
    t0 = time.process_time()
    dec = Decoder(cfg, w, mesh=mesh, target=target, prefill=T)
    compile_s = time.process_time() - t0
    try:
        r = dec.prefill(prompt)
        dec.position = 0
        steps = sum(dec.step(tok).total_cycles for tok in prompt)        # the baseline: decode steps
        clock = dec.target.clock_ghz * 1e9
        row = {"tokens": T, "chunks": len(r.chunk_cycles), "chunk_cycles": float(np.mean(r.chunk_cycles)),
               "last_chunk_cycles": r.chunk_cycles[-1], "cycles": r.total_cycles,
               "tokens_per_s": len(prompt) * clock / r.total_cycles, "decode_tokens_per_s": len(prompt) * clock / steps,
               "speedup": steps / r.total_cycles, "layer_cores": dec.prefill_layer.cost.cores,
               "computing_cores": r.computing_cores, "model_cycles": dec.prefill_layer.cost.total_cycles,
               "cache_bytes": r.cache_bytes, "regions": 2 * cfg.layers + 2, "compile_s": compile_s}
        t0 = time.perf_counter()
        for _ in range(3):
            _numpy_prefill(cfg, w, len(prompt))
        row["numpy_prefill_s"] = (time.perf_counter() - t0) / 3
        benchmark.extra_info.update(row)
        benchmark.pedantic(lambda: dec.prefill(prompt), rounds=3, iterations=1)
    finally:
        dec.close()
    assert row["computing_cores"] > 1 and row["chunks"] == len(prompt) // T and row["cache_bytes"] > 0
    ROWS[name] = row


@pytest.mark.slow
def test_llama3_8b_prefill_layer_compiles_for_the_wafer(benchmark):
    """The prefill layer at LLaMA-3-8B's dimensions for 4,096 tokens on the whole WSE-2: its modelled cycles
    and tokens/s when a plan is found, else the reason (printed in the table)."""
    T, mesh = 4096, (750, 994)

    def attempt():
        t0 = time.process_time()
        try:
            cp = compile_affine(prefill_source(LLAMA3_8B, T), mesh=mesh,
                                runtime={"pos": (0, LLAMA3_8B.context - T + 1)},
                                resident=("wq", "wk", "wv", "wo", "w1", "w2", "w3", "kc", "vc"))
            clock = cp.target.clock_ghz * 1e9
            return {"tokens": T, "chunk_cycles": cp.cost.total_cycles, "cycles": cp.cost.total_cycles,
                    "tokens_per_s": T * clock / (LLAMA3_8B.layers * cp.cost.total_cycles),
                    "layer_cores": cp.cost.cores, "compile_s": time.process_time() - t0, "reason": ""}
        except MicaError as exc:
            return {"tokens": T, "cycles": float("nan"), "layer_cores": 0, "compile_s": time.process_time() - t0,
                    "reason": _why(exc)}
    row = benchmark.pedantic(attempt, rounds=1, iterations=1)
    benchmark.extra_info.update(row)
    ROWS["llama3-8b-prefill-T4096-750x994-wse2"] = row
    assert row["compile_s"] > 0


def teardown_module():
    if any("tokens" not in r for r in ROWS.values()):
        _print_decode_rows()
    _print_prefill_rows()


def _print_decode_rows():
    print("\n| model | region | cores per layer | cycles/token | us/token | tokens/s | layer | embed | head | "
          "hand-offs | compile s | numpy step s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in ROWS.items():
        if "tokens" in r:
            continue
        if r.get("reason"):
            print(f"| {name} | | | not compiled: {r['reason']} |")
            continue
        print(f"| {name} | {r.get('regions', 1)} regions | {r['layer_cores']:,} | {r['cycles']:,.0f} | "
              f"{r.get('us', float('nan')):,.2f} | {r.get('tokens_per_s', float('nan')):,.0f} | "
              f"{r.get('layer_cycles', r['cycles']):,.0f} | {r.get('embed_cycles', 0):,.0f} | "
              f"{r.get('head_cycles', 0):,.0f} | {r.get('transfer_cycles', 0):,.0f} | {r['compile_s']:.1f} | "
              f"{r.get('numpy_step_s', float('nan')):.2e} |")


def _print_prefill_rows():
    prefill = {n: r for n, r in ROWS.items() if "tokens" in r}
    if not prefill:
        return
    print("\n| prefill | T | cycles/chunk | prefill tokens/s | decode-step tokens/s | speedup | cores (plan) | "
          "cores computing | cache bytes carried | compile s | numpy prefill s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in prefill.items():
        if r.get("reason"):
            print(f"| {name} | {r['tokens']} | not compiled ({r['compile_s']:.0f} s): {r['reason']} |")
            continue
        print(f"| {name} | {r['tokens']} | {r['chunk_cycles']:,.0f} | {r['tokens_per_s']:,.0f} | "
              f"{r.get('decode_tokens_per_s', float('nan')):,.0f} | {r.get('speedup', float('nan')):.2f} | "
              f"{r['layer_cores']:,} | {r.get('computing_cores', 0):,} | {r.get('cache_bytes', 0):,} | "
              f"{r['compile_s']:.1f} | {r.get('numpy_prefill_s', float('nan')):.2e} |")
