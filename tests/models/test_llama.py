"""A tiny LLaMA-style model generating greedily on the mesh with weights and KV caches resident, token for
token against a numpy reference written here; weights from a safetensors file the test writes itself; the
prefill path (prompt chunks of T tokens through the GEMM-shaped layer) against the same reference and the
token-by-token caches; the errors a user meets, each leaving the resident state intact."""

import math

import numpy as np
import pytest

from mica.errors import ArgumentError, InputError
from mica.meshir.ir import HostLoad, HostStore
from mica.models.generate import Decoder
from mica.models.llama import LlamaConfig, cache_shapes, layer_source, prefill_source
from mica.models.weights import hf_shapes, random_weights, read_checkpoint, write_checkpoint

CFG = LlamaConfig(layers=2, dim=64, heads=4, kv_heads=2, ffn=128, vocab=256, context=64)
PROMPT = [3, 141, 59, 26]
NEW = 16
#: region size -> prefill chunk of the decoder compiled for it (None: decode steps only)
MESHES = {(4, 4): 4, (2, 5): None, (3, 2): None}
#: region sizes the decode tests run on only outside CI (each costs a compile of 30 to 60 s)
SLOW_DECODE = {(2, 5)}
#: region sizes the prefill tests also run on outside CI (a prefill compile costs 100 to 140 s)
SLOW_PREFILL = {(3, 2): 4}
LONG = [3, 141, 59, 26, 7, 99, 200, 1, 45, 12]      # two chunks of 4 and a remainder of 2
NEW_LONG = 8


class Reference:
    """The decoder in numpy (float64), written from the LLaMA definition: RMSNorm, RoPE with rotate_half,
    grouped-query attention with max-subtracted softmax over the cache, SiLU-gated MLP, residuals."""

    def __init__(self, cfg, w, cache=np.float32):
        self.cfg, self.w, self.cache = cfg, {k: v.astype(np.float64) for k, v in w.items()}, cache
        self.k = np.zeros((cfg.layers, cfg.context, cfg.kv_heads, cfg.head_dim))
        self.v = np.zeros_like(self.k)
        half = cfg.head_dim // 2
        inv = cfg.theta ** (-np.arange(half) * 2.0 / cfg.head_dim)
        ang = np.arange(cfg.context)[:, None] * inv[None, :]
        self.cos, self.sin = np.cos(ang).astype(np.float32).astype(np.float64), np.sin(ang).astype(np.float32).astype(np.float64)

    def norm(self, x, g):
        return x / np.sqrt((x * x).mean() + self.cfg.eps) * g

    def rope(self, x, pos):                     # x: [heads][head_dim]
        half = self.cfg.head_dim // 2
        a, b = x[:, :half], x[:, half:]
        c, s = self.cos[pos], self.sin[pos]
        return np.concatenate([a * c - b * s, b * c + a * s], axis=1)

    def step(self, tok, pos):
        cfg, w = self.cfg, self.w
        hd, rep = cfg.head_dim, cfg.heads // cfg.kv_heads
        x = w["model.embed_tokens.weight"][tok]
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            h = self.norm(x, w[p + "input_layernorm.weight"])
            q = self.rope((w[p + "self_attn.q_proj.weight"] @ h).reshape(cfg.heads, hd), pos)
            k = self.rope((w[p + "self_attn.k_proj.weight"] @ h).reshape(cfg.kv_heads, hd), pos)
            v = (w[p + "self_attn.v_proj.weight"] @ h).reshape(cfg.kv_heads, hd)
            self.k[i, pos] = k.astype(self.cache)            # the cache's storage type
            self.v[i, pos] = v.astype(self.cache)
            att = np.empty((cfg.heads, hd))
            for head in range(cfg.heads):
                kv = head // rep
                s = self.k[i, :pos + 1, kv] @ q[head] / np.sqrt(hd)
                e = np.exp(s - s.max())
                att[head] = (e / e.sum()) @ self.v[i, :pos + 1, kv]
            x = x + w[p + "self_attn.o_proj.weight"] @ att.reshape(-1)
            h = self.norm(x, w[p + "post_attention_layernorm.weight"])
            g, u = w[p + "mlp.gate_proj.weight"] @ h, w[p + "mlp.up_proj.weight"] @ h
            x = x + w[p + "mlp.down_proj.weight"] @ (g / (1 + np.exp(-g)) * u)
        return w["lm_head.weight"] @ self.norm(x, w["model.norm.weight"])

    def generate(self, prompt, n):
        for pos, tok in enumerate(prompt):
            logits = self.step(tok, pos)
        out, gaps = [], []
        for pos in range(len(prompt), len(prompt) + n):
            top = np.sort(logits)[-2:]
            gaps.append(top[1] - top[0])
            out.append(int(np.argmax(logits)))
            if len(out) < n:
                logits = self.step(out[-1], pos)
        return out, min(gaps)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    w = random_weights(CFG, seed=11)
    path = write_checkpoint(tmp_path_factory.mktemp("model") / "tiny.safetensors", w)
    return path, w


@pytest.fixture(scope="module")
def reference(checkpoint):
    tokens, gap = Reference(CFG, checkpoint[1]).generate(PROMPT, NEW)
    assert gap > 1e-3, "the reference's choices are near ties: the comparison would not mean much"
    return tokens


@pytest.fixture(scope="module")
def decoders(checkpoint):
    """The model compiled for a region size and loaded (weights and caches resident; with the prefill layer
    where :data:`MESHES` says), once per size, shared by the tests of this module (compiling is what costs)."""
    made = {}

    def get(mesh, prefill=None):
        if mesh not in made or (prefill and made[mesh].prefill_layer is None):
            if mesh in made:
                made.pop(mesh).close()
            made[mesh] = Decoder(CFG, read_checkpoint(checkpoint[0], CFG), mesh=mesh,
                                 prefill=prefill or MESHES.get(mesh))
        return made[mesh]
    yield get
    for dec in made.values():
        dec.close()


@pytest.fixture(scope="module", params=[pytest.param(m, marks=pytest.mark.slow) if m in SLOW_DECODE else m
                                        for m in MESHES], ids=lambda m: f"{m[0]}x{m[1]}")
def decoder(request, decoders):
    return decoders(request.param)


@pytest.fixture(params=[m for m, t in MESHES.items() if t] + [pytest.param(m, marks=pytest.mark.slow)
                                                               for m in SLOW_PREFILL],
                ids=lambda m: f"{m[0]}x{m[1]}-prefill")
def prefiller(request, decoders):
    """A decoder with the prefill layer (chunks of 4 tokens)."""
    return decoders(request.param, MESHES.get(request.param) or SLOW_PREFILL[request.param])


@pytest.fixture(scope="module")
def long_reference(checkpoint):
    tokens, gap = Reference(CFG, checkpoint[1]).generate(LONG, NEW_LONG)
    assert gap > 1e-3
    return tokens


def test_sixteen_greedy_tokens_match_numpy(decoder, reference):
    dec = decoder
    assert dec.layer.cost.cores > 1          # the layer spreads over the region's cores
    tokens = dec.generate(PROMPT, NEW)
    assert tokens == reference
    last = dec.step(tokens[-1])
    assert set(last.cycles) == {"embed", "layer0", "layer1", "head"}
    assert last.total_cycles > last.transfer_cycles > 0
    # only the hidden state between regions (once per layout a layer's operators read it in), the logits and
    # the chosen token cross the host boundary: never a weight or a cache
    runs = [(dec.embed, 1), (dec.layer, CFG.layers), (dec.head, 1)]
    crossing = [(c, n, [c.program.array(op.array) for op in c.mesh_program.body if isinstance(op, (HostLoad, HostStore))
                        and op.array not in c.mesh_program.on_mesh]) for c, n in runs]
    assert {a.name for _, _, arrays in crossing for a in arrays} <= {"x", "y", "logits", "best", "next"}
    assert last.host_bytes == sum(n * math.prod(a.shape) * a.elem_bytes for _, n, arrays in crossing for a in arrays)
    cache = dec.read_cache(1)
    assert np.abs(cache["kc"][:len(PROMPT) + NEW]).sum() > 0 and not cache["kc"][len(PROMPT) + NEW + 1:].any()


def test_bad_input_is_refused_and_leaves_the_caches_intact(decoder):
    dec = decoder
    dec.generate(PROMPT, 2)
    before = dec.read_cache(0)
    for tok, pos, message in ((CFG.vocab, 5, "token id 256 is out of range"), (-1, 5, "token id"),
                              (3, CFG.context, "the context is full"), (3.0, 5, "token id")):
        with pytest.raises(InputError, match=message):
            dec.step(tok, pos)
    after = dec.read_cache(0)
    for c in before:
        np.testing.assert_array_equal(before[c], after[c])
    with pytest.raises(InputError, match="overflow the context"):
        dec.generate(PROMPT, CFG.context)


def test_a_weight_file_with_wrong_shapes_or_dtypes_is_named(tmp_path):
    w = random_weights(CFG)
    bad = dict(w)
    bad["model.layers.1.mlp.up_proj.weight"] = bad["model.layers.1.mlp.up_proj.weight"][:, :32].copy()
    with pytest.raises(InputError, match=r"model.layers.1.mlp.up_proj.weight has shape \(128, 32\), expected"):
        read_checkpoint(write_checkpoint(tmp_path / "shape.safetensors", bad), CFG)
    bad = dict(w)
    bad["lm_head.weight"] = bad["lm_head.weight"].astype(np.int32)
    with pytest.raises(InputError, match="lm_head.weight has dtype int32"):
        read_checkpoint(write_checkpoint(tmp_path / "dtype.safetensors", bad), CFG)
    bad = {k: v for k, v in w.items() if k != "model.norm.weight"}
    with pytest.raises(InputError, match="missing tensor.*model.norm.weight"):
        read_checkpoint(write_checkpoint(tmp_path / "missing.safetensors", bad), CFG)
    (tmp_path / "junk.safetensors").write_bytes(b"not a model")
    with pytest.raises(InputError, match="not a readable safetensors file"):
        read_checkpoint(tmp_path / "junk.safetensors", CFG)
    with pytest.raises(InputError, match="no such weight file"):
        read_checkpoint(tmp_path / "absent.safetensors", CFG)


def test_configurations_are_checked():
    with pytest.raises(ArgumentError, match="multiple of"):
        LlamaConfig(layers=1, dim=64, heads=4, kv_heads=3, ffn=8, vocab=8, context=8)
    with pytest.raises(ArgumentError, match="even width"):
        LlamaConfig(layers=1, dim=60, heads=4, kv_heads=2, ffn=8, vocab=8, context=8)
    assert len(hf_shapes(CFG)) == 3 + 9 * CFG.layers
    assert "kc[pos][g][0][e]" in layer_source(CFG)


def test_f16_weights_and_caches(checkpoint):
    """Weights and KV caches stored as f16 (half the SRAM), arithmetic in f32: the reference rounds the
    weights and every cache row it stores to f16 the same way, and the greedy tokens agree."""
    cfg = LlamaConfig(**{**CFG.__dict__, "weights": "f16"})
    w16 = {k: v.astype(np.float16).astype(np.float32) for k, v in checkpoint[1].items()}
    tokens, gap = Reference(cfg, w16, cache=np.float16).generate(PROMPT, 8)
    assert gap > 1e-3
    with Decoder(cfg, checkpoint[1], mesh=(2, 5)) as dec:
        assert dec.layer.program.array("wq").dtype == "f16" and dec.layer.program.array("kc").dtype == "f16"
        assert dec.generate(PROMPT, 8) == tokens


def test_prefill_then_greedy_matches_numpy_and_the_token_by_token_caches(prefiller, long_reference):
    """Ten prompt tokens as two chunks of 4 through the prefill layers and 2 decode steps, then greedy decode
    steps: the tokens of the numpy reference, and the caches token-by-token decoding leaves (rows of the
    prompt, within 1e-5: the chunk's GEMMs sum in another order than the steps' GEMVs)."""
    dec, n = prefiller, len(LONG)
    assert dec.prefill_layer.cost.cores > 1                   # the prefill layer spreads over the region
    assert dec.generate(LONG, NEW_LONG, prefill=False) == long_reference
    by_step = [dec.read_cache(i) for i in range(CFG.layers)]
    r = dec.prefill(LONG)
    assert r.token == long_reference[0] and dec.position == n
    assert len(r.chunk_cycles) == 2 and len(r.step_cycles) == 2 and r.head_cycles == 0
    assert min(r.chunk_cycles) > 0 and r.total_cycles > sum(r.chunk_cycles)
    assert r.computing_cores > 1
    # one carry of both caches of every layer, prefill copy -> decode copy (read and written)
    assert r.cache_bytes == 2 * CFG.layers * sum(4 * np.prod(s) for s in cache_shapes(CFG).values())
    for i in range(CFG.layers):
        ours, theirs = dec.read_cache(i), dec.read_cache(i, "prefill")
        for c in ("kc", "vc"):
            np.testing.assert_allclose(ours[c][:n], by_step[i][c][:n], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(ours[c][:8], theirs[c][:8])     # the chunks' rows; 8, 9 by steps
    assert dec.generate(LONG, NEW_LONG) == long_reference       # the prompt by prefill, then decode steps
    # a prompt continued by prefill at position 5 after 5 decode steps: the decode copies' rows are carried
    # to the prefill copies first (a second carry), then one chunk and one step
    dec.generate(LONG[:5], 1, prefill=False)
    r = dec.prefill(LONG[5:], pos=5)
    assert r.token == long_reference[0] and len(r.chunk_cycles) == 1 and len(r.step_cycles) == 1
    assert r.cache_bytes == 2 * 2 * CFG.layers * sum(4 * np.prod(s) for s in cache_shapes(CFG).values())


def test_bad_prefill_input_is_refused_and_leaves_both_caches_intact(prefiller, decoders):
    dec = prefiller
    dec.generate(LONG, 2)
    before = [dec.read_cache(0), dec.read_cache(0, "prefill")]
    for prompt, pos, message in (([3] * (CFG.context + 1), 0, "overflows the context of 64"),
                                 (LONG, CFG.context - 4, "10 tokens from position 60 overflows"),
                                 ([3, CFG.vocab, 4], 0, r"token id 256 \(prompt\[1\]\) is out of range"),
                                 ([3, -1], 0, "token id -1"), ([3.0, 4], 0, "token id 3.0"),
                                 ([True], 0, "token id True"), ([], 0, "at least one token"),
                                 ("abc", 0, "at least one token"), (LONG, -1, "position -1"),
                                 (LONG, CFG.context, "position 64 is out of range"), (LONG, True, "position True")):
        with pytest.raises(InputError, match=message):
            dec.prefill(prompt, pos)
    after = [dec.read_cache(0), dec.read_cache(0, "prefill")]
    for b, a in zip(before, after):
        for c in b:
            np.testing.assert_array_equal(b[c], a[c])
    with pytest.raises(InputError, match="construct the Decoder with prefill=T"):
        decoders((3, 2)).prefill(LONG)
    with pytest.raises(InputError, match="no 'prefill' copy"):
        decoders((3, 2)).read_cache(0, "prefill")
    # a chunk longer than the context is refused before anything is compiled
    with pytest.raises(ArgumentError, match="prefill tokens must be an int in 1..64"):
        Decoder(CFG, random_weights(CFG), mesh=(2, 2), prefill=CFG.context + 1)
    assert "kc[l][g][c][e] = kr[l - pos][g][c][e]" in prefill_source(CFG, 4)


def test_the_4x4_layer_changes_layouts_line_by_line(decoders):
    """The 4x4 layer's plan re-lays out activations line by line (mica.lower.regather: each row gathers and
    broadcasts its share, then each column what it needs), so the greedy tokens checked above run that change
    end to end. If a search change picks another plan, this coverage must move to a program that still does."""
    text = decoders((4, 4)).layer.meshir
    assert "regather_lines1_own" in text and "regather_lines_out" in text
