"""LLaMA-style decoders as affine programs: the C a user would write for one decode step, in three programs
that MICA compiles once each and runs token after token.

* :func:`embed_source` — ``void llama_embed(int tok, float emb[V][D], float x[D])``: the token's row of the
  embedding table (``tok`` a runtime parameter: the row's owner provides it).
* :func:`layer_source` — ``void llama_layer(int pos, float x[D], <the layer's weights>, rope_cos, rope_sin,
  kc, vc, float y[D])``: RMSNorm; the Q/K/V projections; rotary position embedding (HF's ``rotate_half``
  convention: element ``e`` of a head pairs with ``e + HD/2``, angles from rows ``rope_cos[pos]`` /
  ``rope_sin[pos]`` of resident tables, ``pos`` a runtime parameter); the key and value appended to the
  layer's cache at row ``pos``; grouped-query attention over rows ``0..pos`` with max-subtracted softmax
  (query head ``g*G + r`` reads kv head ``g``, as two loops: ``K[h/G]`` is not affine); the output
  projection and its residual; RMSNorm and the SiLU-gated MLP with its residual. Every layer of a model has
  the same shapes, so one compiled layer serves them all (each loaded with its own weights and cache).
* :func:`prefill_source` — ``void llama_prefill(int pos, float x[T][D], <the layer's weights>, rope_cos,
  rope_sin, kc, vc, float y[T][D])``: the same layer over a chunk of ``T`` prompt tokens at positions
  ``pos .. pos + T - 1`` (GEMM-shaped projections, RoPE per token, ``T`` cache rows written, causal
  attention: token ``t`` over rows ``0 .. pos + t``), with the same arrays by the same names and shapes, so
  one layer's weights and caches load into both programs.
* :func:`head_source` — ``void llama_head(float x[D], float lnf[D], float wout[V][D], float logits[V],
  float best[1], int next[1])``: the final RMSNorm, the logits and their arg-max (greedy sampling on the
  mesh: ``next[0]`` is the first index of the largest logit, ``best[0]`` its value).

Projections are laid out by head, as row-major reshapes of a checkpoint's ``W[out][in]`` (no data moves;
:func:`layer_shapes`). :func:`hf_names` maps the arrays to the tensor names of a Hugging Face LLaMA
checkpoint (``model.layers.0.self_attn.q_proj.weight`` is layer 0's ``wq``).

Public API: :class:`LlamaConfig`, :data:`LLAMA3_8B`, :func:`embed_source`, :func:`layer_source`, :func:`prefill_source`,
:func:`head_source`, :func:`layer_shapes`, :func:`cache_shapes`, :func:`hf_names`, :func:`rope_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError

#: Per-layer weights: (name suffix, Hugging Face tensor name under ``model.layers.<i>.``).
LAYER_WEIGHTS = (("ln1", "input_layernorm.weight"), ("wq", "self_attn.q_proj.weight"),
                 ("wk", "self_attn.k_proj.weight"), ("wv", "self_attn.v_proj.weight"),
                 ("wo", "self_attn.o_proj.weight"), ("ln2", "post_attention_layernorm.weight"),
                 ("w1", "mlp.gate_proj.weight"), ("w3", "mlp.up_proj.weight"), ("w2", "mlp.down_proj.weight"))


@dataclass(frozen=True)
class LlamaConfig:
    """The dimensions of a LLaMA-style decoder: ``layers``, model width ``dim``, ``heads`` query heads and
    ``kv_heads`` key/value heads (``heads`` a multiple of ``kv_heads``; head width ``dim // heads``, even),
    MLP width ``ffn``, ``vocab`` tokens, ``context`` cache rows, RMSNorm ``eps`` and RoPE base ``theta``;
    ``weights`` the dtype the weights and KV caches are stored in (``"f32"``, or ``"f16"``: half the SRAM,
    read as f32, arithmetic in f32 as on the targets: :mod:`mica.codeprint.half`)."""

    layers: int
    dim: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int
    eps: float = 1e-5
    theta: float = 10000.0
    weights: str = "f32"

    def __post_init__(self):
        for f in ("layers", "dim", "heads", "kv_heads", "ffn", "vocab", "context"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ArgumentError(f"LlamaConfig.{f} must be a positive int, got {v!r}")
        if self.dim % self.heads or (self.dim // self.heads) % 2:
            raise ArgumentError(f"LlamaConfig: dim {self.dim} must split into {self.heads} heads of an even width")
        if self.weights not in ("f32", "f16"):
            raise ArgumentError(f"LlamaConfig.weights must be 'f32' or 'f16', got {self.weights!r}")
        if self.heads % self.kv_heads:
            raise ArgumentError(f"LlamaConfig: {self.heads} query heads must be a multiple of {self.kv_heads} kv heads")

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def group(self) -> int:
        """Query heads per kv head."""
        return self.heads // self.kv_heads


#: LLaMA-3-8B's dimensions (32 layers, width 4,096, 32 query / 8 key-value heads, FFN 14,336, vocabulary
#: 128,256, context 4,096), weights and caches in f16: the size bench/test_llama3_8b.py models on a wafer.
LLAMA3_8B = LlamaConfig(layers=32, dim=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, context=4096,
                        weights="f16")


def layer_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """The weights of one layer by C name, with their shapes: ``wq`` ``[kv_heads][group][2][head_dim/2][dim]``
    (query head ``g*group + r``; the two halves ``rotate_half`` pairs), ``wk`` ``[kv_heads][2][head_dim/2][dim]``,
    ``wv`` ``[kv_heads][head_dim][dim]``, ``wo`` ``[dim][kv_heads][group][head_dim]`` (row-major reshapes of the
    checkpoint's ``[out][in]`` matrices), the RMSNorm gains ``ln1`` / ``ln2``, the MLP's ``w1`` (gate), ``w3``
    (up) ``[ffn][dim]`` and ``w2`` (down) ``[dim][ffn]``, and the RoPE tables ``rope_cos`` / ``rope_sin``
    ``[context][head_dim/2]`` (:func:`rope_tables`)."""
    d, f, g, r, half, hd = cfg.dim, cfg.ffn, cfg.kv_heads, cfg.group, cfg.head_dim // 2, cfg.head_dim
    return {"ln1": (d,), "wq": (g, r, 2, half, d), "wk": (g, 2, half, d), "wv": (g, hd, d), "wo": (d, g, r, hd),
            "ln2": (d,), "w1": (f, d), "w3": (f, d), "w2": (d, f),
            "rope_cos": (cfg.context, half), "rope_sin": (cfg.context, half)}


def cache_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """One layer's KV cache by C name: ``kc`` ``[context][kv_heads][2][head_dim/2]`` (keys after RoPE, by
    ``rotate_half`` halves) and ``vc`` ``[context][kv_heads][head_dim]``: row ``p`` is position ``p`` (a
    reshape of the usual ``[context][kv_dim]``)."""
    return {"kc": (cfg.context, cfg.kv_heads, 2, cfg.head_dim // 2),
            "vc": (cfg.context, cfg.kv_heads, cfg.head_dim)}


#: The arrays that are not per layer: (program, C name, Hugging Face tensor name).
HF_TOP = (("embed", "emb", "model.embed_tokens.weight"), ("head", "lnf", "model.norm.weight"),
          ("head", "wout", "lm_head.weight"))


def hf_names(cfg: LlamaConfig) -> dict[str, tuple[str, str]]:
    """``{Hugging Face tensor name: (program, C name)}`` for every checkpoint weight, the program being
    ``"embed"``, ``"head"`` or ``"layer<i>"`` (the RoPE tables are computed: :func:`rope_tables`)."""
    out = {hf: (prog, name) for prog, name, hf in HF_TOP}
    for i in range(cfg.layers):
        for name, hf in LAYER_WEIGHTS:
            out[f"model.layers.{i}.{hf}"] = (f"layer{i}", name)
    return out


def rope_tables(cfg: LlamaConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, ``[context][head_dim/2]`` float32: the angle of position ``p`` and frequency ``i`` is
    ``p * theta ** (-2i / head_dim)``."""
    half = cfg.head_dim // 2
    inv = cfg.theta ** (-np.arange(half, dtype=np.float64) * 2.0 / cfg.head_dim)
    ang = np.arange(cfg.context, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _decl(name: str, shape, ctype: str = "float") -> str:
    return f"{ctype} {name}" + "".join(f"[{n}]" for n in shape)


def _ctype(cfg: LlamaConfig) -> str:
    """The C type of the weights and caches."""
    return "_Float16" if cfg.weights == "f16" else "float"


def _norm(o: list, d: int, eps: float, src: str, gain: str, dst: str, tag: str) -> None:
    """RMSNorm of ``src`` with gains ``gain`` into a new local ``dst``."""
    o.append(f"  float ss{tag} = 0.0f;")
    o.append(f"  for (int e = 0; e < {d}; e++) ss{tag} += {src}[e] * {src}[e];")
    o.append(f"  float rs{tag} = 1.0f / sqrtf(ss{tag} / {float(d)!r}f + {eps!r}f);")
    o.append(f"  float {dst}[{d}];")
    o.append(f"  for (int e = 0; e < {d}; e++) {dst}[e] = {src}[e] * rs{tag} * {gain}[e];")


def embed_source(cfg: LlamaConfig) -> str:
    """The C source of ``llama_embed`` (see the module text)."""
    d = cfg.dim
    return (f"/* Generated by mica.models.llama: the embedding row of one token. */\n"
            f"void llama_embed(int tok, {_ctype(cfg)} emb[{cfg.vocab}][{d}], float x[{d}]) {{\n"
            f"  for (int e = 0; e < {d}; e++) x[e] = emb[tok][e];\n}}\n")


def head_source(cfg: LlamaConfig) -> str:
    """The C source of ``llama_head`` (see the module text)."""
    d, v = cfg.dim, cfg.vocab
    o = ["/* Generated by mica.models.llama: final norm, logits and the greedy choice. */", "#include <math.h>",
         f"void llama_head(float x[{d}], {_ctype(cfg)} lnf[{d}], {_ctype(cfg)} wout[{v}][{d}], float logits[{v}], "
         f"float best[1], "
         f"int next[1]) {{"]
    _norm(o, d, cfg.eps, "x", "lnf", "hf", "f")
    o += [f"  for (int j = 0; j < {v}; j++) {{",
          "    logits[j] = 0.0f;",
          f"    for (int e = 0; e < {d}; e++) logits[j] += wout[j][e] * hf[e];",
          "  }",
          "  best[0] = -INFINITY;",
          "  next[0] = 0;",
          f"  for (int j = 0; j < {v}; j++) {{",
          "    next[0] = logits[j] > best[0] ? j : next[0];",
          "    best[0] = logits[j] > best[0] ? logits[j] : best[0];",
          "  }",
          "}"]
    return "\n".join(o) + "\n"


def layer_source(cfg: LlamaConfig) -> str:
    """The C source of ``llama_layer`` (see the module text)."""
    d, hd, half, f = cfg.dim, cfg.head_dim, cfg.head_dim // 2, cfg.ffn
    G, R, t = cfg.kv_heads, cfg.group, cfg.context
    scale = 1.0 / float(np.sqrt(hd))
    shapes = {**layer_shapes(cfg), **cache_shapes(cfg)}
    params = (["int pos", f"float x[{d}]"] + [_decl(a, s, "float" if a.startswith("rope") else _ctype(cfg))
                                               for a, s in shapes.items()] + [f"float y[{d}]"])
    o = ["/* Generated by mica.models.llama: one decoder layer for one token at position pos. */",
         "#include <math.h>",
         f"void llama_layer({', '.join(params)}) {{",
         f"  float cs[{half}], sn[{half}];",
         f"  for (int e = 0; e < {half}; e++) {{ cs[e] = rope_cos[pos][e]; sn[e] = rope_sin[pos][e]; }}"]
    _norm(o, d, cfg.eps, "x", "ln1", "h", "a")
    o += [f"  float q[{G}][{R}][2][{half}], k[{G}][2][{half}], v[{G}][{hd}], qr[{G}][{R}][2][{half}];",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int r = 0; r < {R}; r++)",
          "      for (int c = 0; c < 2; c++)",
          f"        for (int e = 0; e < {half}; e++) {{",
          "          q[g][r][c][e] = 0.0f;",
          f"          for (int j = 0; j < {d}; j++) q[g][r][c][e] += wq[g][r][c][e][j] * h[j];",
          "        }",
          f"  for (int g = 0; g < {G}; g++)",
          "    for (int c = 0; c < 2; c++)",
          f"      for (int e = 0; e < {half}; e++) {{",
          "        k[g][c][e] = 0.0f;",
          f"        for (int j = 0; j < {d}; j++) k[g][c][e] += wk[g][c][e][j] * h[j];",
          "      }",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int e = 0; e < {hd}; e++) {{",
          "      v[g][e] = 0.0f;",
          f"      for (int j = 0; j < {d}; j++) v[g][e] += wv[g][e][j] * h[j];",
          "    }",
          # RoPE (rotate_half): half 0 of a head pairs with half 1, element by element.
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int r = 0; r < {R}; r++)",
          f"      for (int e = 0; e < {half}; e++) {{",
          "        qr[g][r][0][e] = q[g][r][0][e] * cs[e] - q[g][r][1][e] * sn[e];",
          "        qr[g][r][1][e] = q[g][r][1][e] * cs[e] + q[g][r][0][e] * sn[e];",
          "      }",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int e = 0; e < {half}; e++) {{",
          "      kc[pos][g][0][e] = k[g][0][e] * cs[e] - k[g][1][e] * sn[e];",
          "      kc[pos][g][1][e] = k[g][1][e] * cs[e] + k[g][0][e] * sn[e];",
          "    }",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int e = 0; e < {hd}; e++) vc[pos][g][e] = v[g][e];",
          # Grouped-query attention: query head (g, r) reads kv head g.
          f"  float s[{G}][{R}][{t}], m[{G}][{R}], z[{G}][{R}], at[{G}][{R}][{hd}];",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int r = 0; r < {R}; r++)",
          "      for (int l = 0; l <= pos; l++) {",
          "        s[g][r][l] = 0.0f;",
          "        for (int c = 0; c < 2; c++)",
          f"          for (int e = 0; e < {half}; e++) s[g][r][l] += qr[g][r][c][e] * kc[l][g][c][e];",
          f"        s[g][r][l] = s[g][r][l] * {scale!r}f;",
          "      }",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int r = 0; r < {R}; r++) {{",
          "      m[g][r] = -INFINITY;",
          "      for (int l = 0; l <= pos; l++) m[g][r] = fmaxf(m[g][r], s[g][r][l]);",
          "      z[g][r] = 0.0f;",
          "      for (int l = 0; l <= pos; l++) { s[g][r][l] = expf(s[g][r][l] - m[g][r]); z[g][r] += s[g][r][l]; }",
          "    }",
          f"  for (int g = 0; g < {G}; g++)",
          f"    for (int r = 0; r < {R}; r++)",
          f"      for (int e = 0; e < {hd}; e++) {{",
          "        at[g][r][e] = 0.0f;",
          "        for (int l = 0; l <= pos; l++) at[g][r][e] += s[g][r][l] * vc[l][g][e];",
          "        at[g][r][e] = at[g][r][e] / z[g][r];",
          "      }",
          f"  float o1[{d}];",
          f"  for (int j = 0; j < {d}; j++) {{",
          "    o1[j] = x[j];",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          f"        for (int e = 0; e < {hd}; e++) o1[j] += wo[j][g][r][e] * at[g][r][e];",
          "  }"]
    _norm(o, d, cfg.eps, "o1", "ln2", "hb", "b")
    o += [f"  float u[{f}];",
          f"  for (int j = 0; j < {f}; j++) {{",
          "    float gt = 0.0f, up = 0.0f;",
          f"    for (int e = 0; e < {d}; e++) {{ gt += w1[j][e] * hb[e]; up += w3[j][e] * hb[e]; }}",
          "    u[j] = gt / (1.0f + expf(-gt)) * up;",
          "  }",
          f"  for (int j = 0; j < {d}; j++) {{",
          "    y[j] = o1[j];",
          f"    for (int e = 0; e < {f}; e++) y[j] += w2[j][e] * u[e];",
          "  }",
          "}"]
    return "\n".join(o) + "\n"


def prefill_source(cfg: LlamaConfig, tokens: int) -> str:
    """The C source of ``llama_prefill``: one decoder layer over ``tokens`` (``T``) tokens at positions
    ``pos .. pos + T - 1`` (``pos`` a runtime parameter with ``pos + T <= context``) — the prefill of a
    prompt, GEMM-shaped: ``x[T][dim]`` in, ``y[T][dim]`` out. The same arithmetic as :func:`layer_source` token
    by token (RMSNorm, Q/K/V projections, RoPE at row ``pos + t`` of the tables, keys and values written to
    rows ``pos + t`` of the caches, causal attention of token ``t`` over rows ``0 .. pos + t`` with
    max-subtracted softmax, output projection, MLP, residuals), and the same arrays by the same names and
    shapes (:func:`layer_shapes`, :func:`cache_shapes`): the weights and caches one layer is loaded with serve
    both programs. Raises :class:`ArgumentError` unless ``1 <= tokens <= context``."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= cfg.context:
        raise ArgumentError(f"prefill tokens must be an int in 1..{cfg.context} (the context), got {tokens!r}")
    T, d, hd, half, f = tokens, cfg.dim, cfg.head_dim, cfg.head_dim // 2, cfg.ffn
    G, R, ctx = cfg.kv_heads, cfg.group, cfg.context
    scale = 1.0 / float(np.sqrt(hd))
    shapes = {**layer_shapes(cfg), **cache_shapes(cfg)}
    params = (["int pos", f"float x[{T}][{d}]"]
              + [_decl(a, s, "float" if a.startswith("rope") else _ctype(cfg)) for a, s in shapes.items()]
              + [f"float y[{T}][{d}]"])
    o = [f"/* Generated by mica.models.llama: one decoder layer for {T} tokens at positions pos .. pos + {T - 1}. */",
         "#include <math.h>",
         f"void llama_prefill({', '.join(params)}) {{"]
    _norm_rows(o, T, d, cfg.eps, "x", "ln1", "h", "a")
    o += [f"  float q[{T}][{G}][{R}][2][{half}], k[{T}][{G}][2][{half}], v[{T}][{G}][{hd}];",
          f"  float qr[{T}][{G}][{R}][2][{half}];",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          "        for (int c = 0; c < 2; c++)",
          f"          for (int e = 0; e < {half}; e++) {{",
          "            q[t][g][r][c][e] = 0.0f;",
          f"            for (int j = 0; j < {d}; j++) q[t][g][r][c][e] += wq[g][r][c][e][j] * h[t][j];",
          "          }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          "      for (int c = 0; c < 2; c++)",
          f"        for (int e = 0; e < {half}; e++) {{",
          "          k[t][g][c][e] = 0.0f;",
          f"          for (int j = 0; j < {d}; j++) k[t][g][c][e] += wk[g][c][e][j] * h[t][j];",
          "        }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int e = 0; e < {hd}; e++) {{",
          "        v[t][g][e] = 0.0f;",
          f"        for (int j = 0; j < {d}; j++) v[t][g][e] += wv[g][e][j] * h[t][j];",
          "      }",
          # RoPE (rotate_half) at each token's own position: the table rows first, then the rotations.
          f"  float cs[{T}][{half}], sn[{T}][{half}], kr[{T}][{G}][2][{half}];",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int e = 0; e < {half}; e++) {{ cs[t][e] = rope_cos[pos + t][e]; sn[t][e] = rope_sin[pos + t][e]; }}",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          f"        for (int e = 0; e < {half}; e++) {{",
          "          qr[t][g][r][0][e] = q[t][g][r][0][e] * cs[t][e] - q[t][g][r][1][e] * sn[t][e];",
          "          qr[t][g][r][1][e] = q[t][g][r][1][e] * cs[t][e] + q[t][g][r][0][e] * sn[t][e];",
          "        }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int e = 0; e < {half}; e++) {{",
          "        kr[t][g][0][e] = k[t][g][0][e] * cs[t][e] - k[t][g][1][e] * sn[t][e];",
          "        kr[t][g][1][e] = k[t][g][1][e] * cs[t][e] + k[t][g][0][e] * sn[t][e];",
          "      }",
          # The chunk's keys and values go to cache rows pos .. pos + T - 1 (indexed by the row, as attention reads them).
          f"  for (int l = pos; l < pos + {T}; l++)",
          f"    for (int g = 0; g < {G}; g++)",
          "      for (int c = 0; c < 2; c++)",
          f"        for (int e = 0; e < {half}; e++) kc[l][g][c][e] = kr[l - pos][g][c][e];",
          f"  for (int l = pos; l < pos + {T}; l++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int e = 0; e < {hd}; e++) vc[l][g][e] = v[l - pos][g][e];",
          # Causal grouped-query attention: token t attends over rows 0 .. pos + t.
          f"  float s[{T}][{G}][{R}][{ctx}], p[{T}][{G}][{R}][{ctx}], m[{T}][{G}][{R}], z[{T}][{G}][{R}];",
          f"  float at[{T}][{G}][{R}][{hd}];",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          "        for (int l = 0; l <= pos + t; l++) {",
          "          s[t][g][r][l] = 0.0f;",
          "          for (int c = 0; c < 2; c++)",
          f"            for (int e = 0; e < {half}; e++) s[t][g][r][l] += qr[t][g][r][c][e] * kc[l][g][c][e];",
          f"          s[t][g][r][l] = s[t][g][r][l] * {scale!r}f;",
          "        }",
          # The softmax in three loop nests (max, exponentials, sum), each free to keep l spread over cores.
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++) {{",
          "        m[t][g][r] = -INFINITY;",
          "        for (int l = 0; l <= pos + t; l++) m[t][g][r] = fmaxf(m[t][g][r], s[t][g][r][l]);",
          "      }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          "        for (int l = 0; l <= pos + t; l++) p[t][g][r][l] = expf(s[t][g][r][l] - m[t][g][r]);",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++) {{",
          "        z[t][g][r] = 0.0f;",
          "        for (int l = 0; l <= pos + t; l++) z[t][g][r] += p[t][g][r][l];",
          "      }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int g = 0; g < {G}; g++)",
          f"      for (int r = 0; r < {R}; r++)",
          f"        for (int e = 0; e < {hd}; e++) {{",
          "          at[t][g][r][e] = 0.0f;",
          "          for (int l = 0; l <= pos + t; l++) at[t][g][r][e] += p[t][g][r][l] * vc[l][g][e];",
          "          at[t][g][r][e] = at[t][g][r][e] / z[t][g][r];",
          "        }",
          f"  float o1[{T}][{d}];",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int j = 0; j < {d}; j++) {{",
          "      o1[t][j] = x[t][j];",
          f"      for (int g = 0; g < {G}; g++)",
          f"        for (int r = 0; r < {R}; r++)",
          f"          for (int e = 0; e < {hd}; e++) o1[t][j] += wo[j][g][r][e] * at[t][g][r][e];",
          "    }"]
    _norm_rows(o, T, d, cfg.eps, "o1", "ln2", "hb", "b")
    o += [f"  float u[{T}][{f}];",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int j = 0; j < {f}; j++) {{",
          "      float gt = 0.0f, up = 0.0f;",
          f"      for (int e = 0; e < {d}; e++) {{ gt += w1[j][e] * hb[t][e]; up += w3[j][e] * hb[t][e]; }}",
          "      u[t][j] = gt / (1.0f + expf(-gt)) * up;",
          "    }",
          f"  for (int t = 0; t < {T}; t++)",
          f"    for (int j = 0; j < {d}; j++) {{",
          "      y[t][j] = o1[t][j];",
          f"      for (int e = 0; e < {f}; e++) y[t][j] += w2[j][e] * u[t][e];",
          "    }",
          "}"]
    return "\n".join(o) + "\n"


def _norm_rows(o: list, rows: int, d: int, eps: float, src: str, gain: str, dst: str, tag: str) -> None:
    """RMSNorm of each of the ``rows`` rows of ``src`` with gains ``gain`` into a new local ``dst``."""
    o.append(f"  float ss{tag}[{rows}], rs{tag}[{rows}], {dst}[{rows}][{d}];")
    o.append(f"  for (int t = 0; t < {rows}; t++) {{")
    o.append(f"    ss{tag}[t] = 0.0f;")
    o.append(f"    for (int e = 0; e < {d}; e++) ss{tag}[t] += {src}[t][e] * {src}[t][e];")
    o.append(f"    rs{tag}[t] = 1.0f / sqrtf(ss{tag}[t] / {float(d)!r}f + {eps!r}f);")
    o.append("  }")
    o.append(f"  for (int t = 0; t < {rows}; t++)")
    o.append(f"    for (int e = 0; e < {d}; e++) {dst}[t][e] = {src}[t][e] * rs{tag}[t] * {gain}[e];")
