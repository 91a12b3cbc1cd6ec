"""A LLaMA-style checkpoint's weights for the programs of :mod:`mica.models.llama`: read from a safetensors
file (the ``safetensors`` package), checked name by name, reshaped by head (row-major reshapes: no data
moves) and split per program.

Every problem is an :class:`~mica.errors.InputError` naming the tensor and what is wrong with it (missing,
shape, dtype, not finite), raised before anything is loaded on a mesh.

Public API: :func:`read_checkpoint`, :func:`write_checkpoint`, :func:`program_weights`, :func:`random_weights`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import InputError
from .llama import LAYER_WEIGHTS, LlamaConfig, hf_names, layer_shapes, rope_tables

#: The dtypes a checkpoint may hold (converted to the programs' f32).
ACCEPTED = (np.float32, np.float16, np.float64)


def hf_shapes(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """``{Hugging Face tensor name: shape}`` of every weight a checkpoint of ``cfg`` holds."""
    d, kv, f, v = cfg.dim, cfg.kv_dim, cfg.ffn, cfg.vocab
    per = {"ln1": (d,), "wq": (d, d), "wk": (kv, d), "wv": (kv, d), "wo": (d, d), "ln2": (d,), "w1": (f, d),
           "w3": (f, d), "w2": (d, f)}
    out = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,), "lm_head.weight": (v, d)}
    for i in range(cfg.layers):
        for name, hf in LAYER_WEIGHTS:
            out[f"model.layers.{i}.{hf}"] = per[name]
    return out


def check_weights(cfg: LlamaConfig, tensors: Mapping[str, np.ndarray], source: str = "weights") -> dict[str, np.ndarray]:
    """``tensors`` (Hugging Face names) as C-contiguous f32 arrays after checking every name, shape, dtype and
    value; :class:`InputError` names the first problem (``source``: where they came from, for the message)."""
    want = hf_shapes(cfg)
    missing = [n for n in want if n not in tensors]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise InputError(f"{source}: missing tensor(s) {', '.join(missing[:3])}{more} for a {cfg.layers}-layer model")
    out = {}
    for name, shape in want.items():
        t = tensors[name]
        if not isinstance(t, np.ndarray):
            raise InputError(f"{source}: tensor {name} is a {type(t).__name__}, not an array")
        if tuple(t.shape) != shape:
            raise InputError(f"{source}: tensor {name} has shape {tuple(t.shape)}, expected {shape} for {cfg}")
        if t.dtype.type not in ACCEPTED:
            raise InputError(f"{source}: tensor {name} has dtype {t.dtype}; the decoder takes "
                             f"{', '.join(np.dtype(a).name for a in ACCEPTED)} (computed in f32)")
        a = np.ascontiguousarray(t, dtype=np.float32)
        if not np.isfinite(a).all():
            raise InputError(f"{source}: tensor {name} holds non-finite values")
        out[name] = a
    return out


def read_checkpoint(path, cfg: LlamaConfig) -> dict[str, np.ndarray]:
    """The checked weights (Hugging Face names, f32) of the safetensors file ``path`` for ``cfg``. Extra
    tensors (rotary caches some checkpoints carry) are ignored."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file
    p = Path(path)
    try:
        tensors = load_file(str(p))
    except FileNotFoundError:
        raise InputError(f"{p}: no such weight file") from None
    except (SafetensorError, OSError, ValueError, TypeError) as exc:
        raise InputError(f"{p}: not a readable safetensors file ({exc})") from None
    return check_weights(cfg, tensors, str(p))


def write_checkpoint(path, tensors: Mapping[str, np.ndarray]) -> Path:
    """Writes ``tensors`` (Hugging Face names) to the safetensors file ``path``; returns the path."""
    from safetensors.numpy import save_file
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path))
    return Path(path)


def random_weights(cfg: LlamaConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Random f32 weights of ``cfg`` (Hugging Face names), scaled so that activations stay of order one:
    projections ``N(0, 1/in)``, norm gains near 1, embeddings ``N(0, 1)``."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in hf_shapes(cfg).items():
        if len(shape) == 1:
            out[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        elif name == "model.embed_tokens.weight":
            out[name] = rng.standard_normal(shape).astype(np.float32)
        else:
            out[name] = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
    return out


def program_weights(cfg: LlamaConfig, tensors: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """The checked weights split per program: ``{"embed": {...}, "layer0": {...}, ..., "head": {...}}`` by
    the programs' C names, projections reshaped by head (:func:`mica.models.llama.layer_shapes`), every layer
    with its RoPE tables (f32); weights in ``cfg.weights``' dtype (f16 rounds to nearest)."""
    w = check_weights(cfg, tensors)
    shapes = layer_shapes(cfg)
    cos, sin = rope_tables(cfg)
    out: dict[str, dict[str, np.ndarray]] = {"embed": {}, "head": {}}
    for i in range(cfg.layers):
        out[f"layer{i}"] = {"rope_cos": cos, "rope_sin": sin}
    for hf, (prog, name) in hf_names(cfg).items():
        a = w[hf].astype(np.float16) if cfg.weights == "f16" else w[hf]
        out[prog][name] = a.reshape(shapes[name]) if prog.startswith("layer") else a
    return out
