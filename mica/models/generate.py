"""Greedy generation with a LLaMA-style decoder whose weights and KV caches stay on the mesh.

:class:`Decoder` compiles the three programs of :mod:`mica.models.llama` once each for a mesh — the
embedding gather (``tok`` a runtime parameter), one decoder layer (``pos`` a runtime parameter; every layer
has the same shapes, so the one compiled layer serves all of them), the head (final norm, logits, arg-max)
— and loads them: the embedding table, each layer's weights, RoPE tables and KV cache, and the head's
weights stay resident, each program on a region of the wafer of the compiled mesh's size ("resident per
region": ``layers + 2`` regions). A step moves only the token id in, the hidden state (``dim`` floats)
from region to region, and the chosen token out::

    dec = Decoder(cfg, read_checkpoint("model.safetensors", cfg), mesh=(8, 8))
    tokens = dec.generate([1, 5, 9], 16)          # the prompt, then 16 greedy tokens

The per-token latency :attr:`StepResult.cycles` is the sum of the programs' modelled cycles in the emulator
(each run on its own mesh, timed from the work and messages it does) plus :attr:`StepResult.transfer_cycles`,
an estimate of carrying the hidden state between adjacent regions: for each of the ``layers + 1`` hand-offs,
the region's width in hops at the target's hop latency plus ``dim`` floats at its link bandwidth (the
emulator runs each region separately, so this part is modelled, not emulated).

Public API: :class:`Decoder`, :class:`StepResult`, :func:`handoff_cycles`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..pipeline import compile_affine
from ..targets import Target, get_target
from .llama import LlamaConfig, cache_shapes, embed_source, head_source, layer_source
from .weights import program_weights


@dataclass(frozen=True)
class StepResult:
    """One decode step: the greedy ``token`` (the first index of the largest logit), the ``logits``, the
    modelled ``cycles`` per program (``{"embed": ..., "layer0": ..., "head": ...}``), the estimated
    ``transfer_cycles`` between regions, and the bytes that crossed the host boundary."""

    token: int
    logits: np.ndarray
    cycles: dict[str, float]
    transfer_cycles: float
    host_bytes: int

    @property
    def total_cycles(self) -> float:
        return sum(self.cycles.values()) + self.transfer_cycles


class Decoder:
    """A decoder of ``cfg`` with ``weights`` (Hugging Face tensor names: :mod:`mica.models.weights`)
    compiled for ``mesh`` cores of ``target`` per region and loaded (see the module text). Use it as a
    context manager, or :meth:`close` it."""

    def __init__(self, cfg: LlamaConfig, weights: Mapping[str, np.ndarray], mesh=(8, 8), target="wse2", *,
                 threads: int | None = None):
        self.cfg = cfg
        self.target = get_target(target)
        per = program_weights(cfg, weights)              # checked before anything is compiled or loaded
        caches = cache_shapes(cfg)
        self.embed = compile_affine(embed_source(cfg), mesh=mesh, target=self.target,
                                    runtime={"tok": (0, cfg.vocab)}, resident=("emb",))
        self.layer = compile_affine(layer_source(cfg), mesh=mesh, target=self.target,
                                    runtime={"pos": (0, cfg.context)},
                                    resident=(*per["layer0"], *caches))
        self.head = compile_affine(head_source(cfg), mesh=mesh, target=self.target, resident=("lnf", "wout"))
        self.mesh = tuple(self.layer.mesh_program.mesh)
        self._devices = []
        cache_dtype = np.float16 if cfg.weights == "f16" else np.float32
        try:
            self._embed = self._load(self.embed, per["embed"], threads)
            self._layers = [self._load(self.layer, {**per[f"layer{i}"],
                                                    **{c: np.zeros(s, cache_dtype) for c, s in caches.items()}},
                                       threads) for i in range(cfg.layers)]
            self._head = self._load(self.head, per["head"], threads)
        except BaseException:
            self.close()
            raise
        self.position = 0

    def _load(self, prog, arrays, threads):
        dev = prog.load(arrays, threads=threads)
        self._devices.append(dev)
        return dev

    # -- steps ------------------------------------------------------------------------------------------
    def step(self, token: int, pos: int | None = None) -> StepResult:
        """Feeds ``token`` at position ``pos`` (default: the next one) through every region and returns the
        greedy choice. A token id or position out of range raises :class:`InputError` before any region
        runs, so the caches stay as they were."""
        pos = self.position if pos is None else pos
        for what, v, hi in (("token id", token, self.cfg.vocab), ("position", pos, self.cfg.context)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < hi:
                raise InputError(f"{what} {v!r} is out of range: 0 <= {what} < {hi}"
                                 + (" (the context is full)" if what == "position" and isinstance(v, int) and v >= hi
                                    else ""))
        cycles, host = {}, 0
        res = self._embed.run({"tok": int(token)})
        x, cycles["embed"], host = res.outputs["x"], res.stats.cycles, host + _host(res)
        for i, dev in enumerate(self._layers):
            res = dev.run({"pos": int(pos), "x": x})
            x, cycles[f"layer{i}"], host = res.outputs["y"], res.stats.cycles, host + _host(res)
        res = self._head.run({"x": x})
        cycles["head"], host = res.stats.cycles, host + _host(res)
        self.position = int(pos) + 1
        return StepResult(int(res.outputs["next"][0]), res.outputs["logits"], cycles, self.transfer_cycles(),
                          host)

    def generate(self, prompt: Sequence[int], n: int) -> list[int]:
        """The ``n`` tokens greedy decoding chooses after ``prompt`` (fed from position 0; the caches are
        overwritten from there)."""
        if not prompt:
            raise InputError("generate needs a prompt of at least one token")
        if len(prompt) + n > self.cfg.context + 1:
            raise InputError(f"a prompt of {len(prompt)} and {n} new tokens overflow the context of "
                             f"{self.cfg.context}")
        self.position = 0
        out = []
        for tok in prompt:
            r = self.step(tok)
        for _ in range(n):
            out.append(r.token)
            if len(out) == n:
                break
            r = self.step(r.token)
        return out

    def transfer_cycles(self) -> float:
        """The estimated cycles of the ``layers + 1`` hand-offs of the hidden state between adjacent regions
        (see the module text)."""
        return handoff_cycles(self.cfg, self.mesh, self.target)

    def read_cache(self, layer: int) -> dict[str, np.ndarray]:
        """Layer ``layer``'s KV cache as the steps left it (``kc``, ``vc``: :func:`cache_shapes` shapes)."""
        return {c: self._layers[layer].read(c) for c in ("kc", "vc")}

    # -- lifetime -----------------------------------------------------------------------------------------
    def close(self) -> None:
        for dev in getattr(self, "_devices", ()):
            dev.close()
        self._devices = []

    def __enter__(self) -> "Decoder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _host(res) -> int:
    return res.stats.host_bytes_in + res.stats.host_bytes_out


def handoff_cycles(cfg: LlamaConfig, region: tuple[int, int], target: Target) -> float:
    """The estimated cycles of the ``layers + 1`` hand-offs of the hidden state between adjacent regions of
    ``region`` cores on ``target``: each crosses the region's width in hops at the hop latency and sends
    ``dim`` floats at the link bandwidth (see the module text)."""
    per = region[0] * target.hop_latency + cfg.dim * 4 / target.link_bytes_per_cycle
    return (cfg.layers + 1) * per
