"""Arrays kept on the mesh share its SRAM (mica.meshir.on_mesh.on_mesh_caps).

A LLaMA-style layer at width 192 (f16 weights, a 256-row KV cache) on 6x6 needs it: every operator's own
best layout piles the weight matrices onto the same cores, and the program then needs more SRAM than a core
has. With the shares it compiles, spreads over the whole mesh, and matches the native C at three positions.
A wider layer on a 125x165 region (slow: not in CI) spreads over the region only when the operators around
its KV cache agree on the cache's layout and the activations are re-laid out line by line, as the
LLaMA-3-8B layer of bench/test_llama3_8b.py needs."""

import numpy as np
import pytest

import mica
from mica.meshir.on_mesh import ON_MESH_SHARE, ON_MESH_SMALL, on_mesh_caps
from mica.models.llama import LlamaConfig, cache_shapes, layer_shapes, layer_source, rope_tables
from mica.targets import get_target
from mica.testing import run_c

SRAM = get_target("wse2").sram_bytes


def test_caps_split_the_share_by_size():
    assert on_mesh_caps({"a": 1000, "b": 3000}, SRAM) == {}          # they fit one core together
    caps = on_mesh_caps({"w1": 3_000_000, "w2": 1_000_000, "gain": 1_000}, SRAM)
    assert abs(caps["w1"] - 3 * caps["w2"]) <= 3          # in proportion (whole bytes)
    assert caps["w1"] + caps["w2"] <= ON_MESH_SHARE * SRAM
    assert caps["gain"] == int(ON_MESH_SMALL * SRAM)                  # a small array is not squeezed


CFG = LlamaConfig(layers=1, dim=192, heads=4, kv_heads=2, ffn=512, vocab=8, context=256, weights="f16")
KEPT = tuple(layer_shapes(CFG)) + tuple(cache_shapes(CFG))


@pytest.fixture(scope="module")
def layer():
    return mica.compile_affine(layer_source(CFG), mesh=(6, 6), runtime={"pos": (0, CFG.context)}, resident=KEPT)


def test_the_kept_arrays_spread_within_their_shares(layer):
    reasons = "\n".join(layer.schedule.reasons)
    assert "within their shares of SRAM" in reasons
    assert layer.cost.cores == 36
    assert layer.cost.sram_bytes <= SRAM


def _inputs(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in {**layer_shapes(CFG), **cache_shapes(CFG)}.items():
        scale = 1.0 if name.startswith("ln") else 0.5 if name in ("kc", "vc") else 1 / np.sqrt(shape[-1])
        out[name] = (rng.standard_normal(shape) * scale).astype(np.float16)
    cos, sin = rope_tables(CFG)
    out["rope_cos"], out["rope_sin"] = cos, sin
    out["x"] = rng.standard_normal(CFG.dim).astype(np.float32)
    return out


def test_one_step_matches_the_native_c(layer):
    ins = _inputs(11)
    kept = {a: ins[a] for a in KEPT}
    with layer.load(kept) as dev:
        for pos in (0, 129, CFG.context - 1):
            want = run_c(layer_source(CFG), None, {**ins, "pos": pos})
            got = dev.run({"x": ins["x"], "pos": pos}).outputs
            np.testing.assert_allclose(got["y"], want["y"], rtol=2e-3, atol=2e-3)
            ins = {**ins, "kc": want["kc"], "vc": want["vc"]}     # the native cache follows the device's
            np.testing.assert_allclose(dev.read("kc").astype(np.float32), want["kc"].astype(np.float32),
                                       rtol=2e-3, atol=2e-3)


WIDE = LlamaConfig(layers=1, dim=1024, heads=8, kv_heads=8, ffn=512, vocab=8, context=4096, weights="f16")


@pytest.mark.slow
def test_a_cache_too_large_to_move_is_laid_out_as_the_attention_reads_it():
    """Width 1,024 with head dimension 128 and a 4,096-row cache on a 125x165 region (about 60 s to compile,
    so not in CI): the cache (8 MB) cannot be changed on the mesh, so the operators around it must agree on
    its layout. At 3023dd4 the best plan was on the 63x63 square (2,919 cores, 129,466 modelled cycles); with
    line-by-line layout changes of the activations and the operators also mapped on the transposed region,
    the layer spreads over more than 10,000 of the region's cores (16,000, 71,428 cycles, when written). One
    step matches the native C."""
    kept = tuple(layer_shapes(WIDE)) + tuple(cache_shapes(WIDE))
    cp = mica.compile_affine(layer_source(WIDE), mesh=(125, 165), runtime={"pos": (0, WIDE.context)},
                             resident=kept)
    assert cp.cost.cores > 10_000
    rng = np.random.default_rng(5)
    ins = {n: (rng.standard_normal(s) * (0.5 if n.startswith("ln") else 1 / np.sqrt(s[-1]))).astype(np.float16)
           for n, s in {**layer_shapes(WIDE), **cache_shapes(WIDE)}.items()}
    ins["rope_cos"], ins["rope_sin"] = rope_tables(WIDE)
    ins["x"] = rng.standard_normal(WIDE.dim).astype(np.float32)
    with cp.load({a: ins[a] for a in kept}) as dev:
        got = dev.run({"x": ins["x"], "pos": 3000}).outputs
    want = run_c(layer_source(WIDE), None, {**ins, "pos": 3000})
    np.testing.assert_allclose(got["y"], want["y"], rtol=2e-3, atol=2e-3)
