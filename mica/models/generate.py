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

Prefill: ``Decoder(..., prefill=T)`` also compiles :func:`mica.models.llama.prefill_source` for ``T`` tokens
(GEMM-shaped projections, causal attention over the chunk) and loads it once per layer on a region of its own,
with that layer's weights (a second copy: each loaded program is its own mesh in the emulator, so the two
programs of a layer cannot share one buffer; ``2 * layers + 2`` regions in all). :meth:`Decoder.prefill` runs a prompt in chunks of ``T`` tokens
(each chunk: ``T`` runs of the embedding gather, then every layer once, ``T`` hidden states per hand-off) and
the remainder of fewer than ``T`` tokens as decode steps; :meth:`Decoder.generate` then continues by decode
steps. The KV caches live in both copies of a layer; after the chunks, the rows they wrote are carried to the
decode copy through the host (the emulator reads and writes whole arrays, so :attr:`PrefillResult.cache_bytes`
counts both caches of every layer, read and written), and before a chunk at position ``p`` the prefill copy
is brought up to date the same way when decode steps have since written rows below ``p``.

Every loaded program is its own emulated mesh; when their arenas together outgrow the host's memory (a
LLaMA-3-8B decoder's 32 layers take about 31 GB), the later ones are kept in spill files
(:mod:`mica.native_sim.spill`): the tokens are the same, the steps slower.

Public API: :class:`Decoder`, :class:`StepResult`, :class:`PrefillResult`, :func:`handoff_cycles`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..pipeline import compile_affine
from ..targets import Target, get_target
from .llama import LlamaConfig, cache_shapes, embed_source, head_source, layer_source, prefill_source
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


@dataclass(frozen=True)
class PrefillResult:
    """A prompt fed by :meth:`Decoder.prefill`: the greedy ``token`` after it and the last token's
    ``logits``; the modelled cycles of each chunk of ``T`` tokens (``chunk_cycles``: the ``T`` embedding
    gathers, every layer, and the estimated hand-offs of ``T`` hidden states), of each decode step that fed
    the remainder (``step_cycles``, each with its head) and of the head after the last chunk
    (``head_cycles``, 0 when a decode step ended the prompt); the bytes of the runs' inputs and outputs that
    crossed the host boundary (``host_bytes``) and of the KV caches carried between the prefill and decode
    copies through the host (``cache_bytes``); ``computing_cores``, the cores that computed in the first
    layer's run of the last chunk (0 when the prompt was shorter than a chunk)."""

    token: int
    logits: np.ndarray
    chunk_cycles: tuple[float, ...]
    step_cycles: tuple[float, ...]
    head_cycles: float
    host_bytes: int
    cache_bytes: int
    computing_cores: int

    @property
    def total_cycles(self) -> float:
        return sum(self.chunk_cycles) + sum(self.step_cycles) + self.head_cycles


class Decoder:
    """A decoder of ``cfg`` with ``weights`` (Hugging Face tensor names: :mod:`mica.models.weights`)
    compiled for ``mesh`` cores of ``target`` per region and loaded (see the module text); with ``prefill=T``
    also the prefill layer for chunks of ``T`` tokens (:meth:`prefill`). Use it as a context manager, or
    :meth:`close` it."""

    def __init__(self, cfg: LlamaConfig, weights: Mapping[str, np.ndarray], mesh=(8, 8), target="wse2", *,
                 threads: int | None = None, prefill: int | None = None):
        self.cfg = cfg
        self.target = get_target(target)
        self.prefill_tokens = prefill
        pf_source = None if prefill is None else prefill_source(cfg, prefill)     # checks prefill first
        per = program_weights(cfg, weights)              # checked before anything is compiled or loaded
        caches = cache_shapes(cfg)
        self.embed = compile_affine(embed_source(cfg), mesh=mesh, target=self.target,
                                    runtime={"tok": (0, cfg.vocab)}, resident=("emb",))
        self.layer = compile_affine(layer_source(cfg), mesh=mesh, target=self.target,
                                    runtime={"pos": (0, cfg.context)},
                                    resident=(*per["layer0"], *caches))
        self.head = compile_affine(head_source(cfg), mesh=mesh, target=self.target, resident=("lnf", "wout"))
        self.prefill_layer = None if pf_source is None else compile_affine(
            pf_source, mesh=mesh, target=self.target, runtime={"pos": (0, cfg.context - prefill + 1)},
            resident=(*per["layer0"], *caches))
        self.mesh = tuple(self.layer.mesh_program.mesh)
        self._devices = []
        cache_dtype = np.float16 if cfg.weights == "f16" else np.float32
        try:
            self._embed = self._load(self.embed, per["embed"], threads)
            self._layers = [self._load(self.layer, {**per[f"layer{i}"],
                                                    **{c: np.zeros(s, cache_dtype) for c, s in caches.items()}},
                                       threads) for i in range(cfg.layers)]
            self._head = self._load(self.head, per["head"], threads)
            self._prefills = [] if self.prefill_layer is None else [
                self._load(self.prefill_layer, {**per[f"layer{i}"],
                                                **{c: np.zeros(s, cache_dtype) for c, s in caches.items()}},
                           threads) for i in range(cfg.layers)]
        except BaseException:
            self.close()
            raise
        self.position = 0
        #: cache rows 0 .. n-1 of the prefill copies that hold what the decode copies hold
        self._prefill_rows = cfg.context

    def _load(self, prog, arrays, threads):
        dev = prog.load(arrays, threads=threads)
        self._devices.append(dev)
        return dev

    # -- steps ------------------------------------------------------------------------------------------
    def step(self, token: int, pos: int | None = None) -> StepResult:
        """Feeds ``token`` at position ``pos`` (default: the next one) through every region and returns the
        greedy choice; the key and value go to row ``pos`` of the decode copies of the caches (a later
        :meth:`prefill` that reads the row carries it to the prefill copies first). A token id or position out
        of range raises :class:`InputError` before any region runs, so the caches stay as they were."""
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
        self._prefill_rows = min(self._prefill_rows, int(pos))
        return StepResult(int(res.outputs["next"][0]), res.outputs["logits"], cycles, self.transfer_cycles(),
                          host)

    def prefill(self, prompt: Sequence[int], pos: int = 0) -> PrefillResult:
        """Feeds ``prompt`` at positions ``pos .. pos + len(prompt) - 1`` (default from 0: a new prompt; the
        caches are overwritten from ``pos`` on) in chunks of ``T`` tokens through the prefill layers, the
        remainder of fewer than ``T`` tokens by decode steps, and returns the greedy choice after it (see the
        module text); afterwards the decode copies of the caches hold every row, and :attr:`position` is
        the one after the prompt. An empty prompt, a token id out of range, a ``pos`` out of range or a prompt
        that does not fit the context from ``pos`` raises :class:`InputError` before any region runs, so
        the caches stay as they were. Needs ``Decoder(..., prefill=T)``."""
        if self.prefill_layer is None:
            raise InputError("prefill needs the prefill layer: construct the Decoder with prefill=T (tokens per "
                             "chunk)")
        cfg, T = self.cfg, self.prefill_tokens
        if isinstance(prompt, (str, bytes)) or not isinstance(prompt, Sequence) or not prompt:
            raise InputError(f"prefill needs a prompt of at least one token id, got {prompt!r}")
        for i, tok in enumerate(prompt):
            if isinstance(tok, (bool, np.bool_)) or not isinstance(tok, (int, np.integer)) \
                    or not 0 <= int(tok) < cfg.vocab:
                raise InputError(f"token id {tok!r} (prompt[{i}]) is out of range: 0 <= token id < {cfg.vocab}")
        if isinstance(pos, (bool, np.bool_)) or not isinstance(pos, (int, np.integer)) \
                or not 0 <= int(pos) < cfg.context:
            raise InputError(f"position {pos!r} is out of range: 0 <= position < {cfg.context}")
        pos = int(pos)
        if pos + len(prompt) > cfg.context:
            raise InputError(f"a prompt of {len(prompt)} tokens from position {pos} overflows the context of "
                             f"{cfg.context}")
        chunks, rest = divmod(len(prompt), T)
        chunk_cycles, host, moved, x, cores = [], 0, 0, None, 0
        if chunks and self._prefill_rows < pos:          # decode steps wrote rows the chunks will read
            moved += self._carry(self._layers, self._prefills)
            self._prefill_rows = cfg.context
        hand_off = handoff_cycles(cfg, self.mesh, self.target, tokens=T)
        for c in range(chunks):
            p, cyc = pos + c * T, hand_off
            rows = []
            for tok in prompt[c * T:(c + 1) * T]:
                res = self._embed.run({"tok": int(tok)})
                rows.append(res.outputs["x"])
                cyc, host = cyc + res.stats.cycles, host + _host(res)
            x = np.stack(rows)
            for i, dev in enumerate(self._prefills):
                res = dev.run({"pos": p, "x": x})
                x, cyc, host = res.outputs["y"], cyc + res.stats.cycles, host + _host(res)
                if i == 0:
                    cores = res.stats.summary()["computing_cores"]
            chunk_cycles.append(cyc)
        if chunks:                                       # the decode copies take the chunks' rows
            moved += self._carry(self._prefills, self._layers)
            self._prefill_rows = cfg.context
        step_cycles, head_cycles = [], 0.0
        if rest:
            for i, tok in enumerate(prompt[chunks * T:]):
                r = self.step(int(tok), pos + chunks * T + i)
                step_cycles.append(r.total_cycles)
                host += r.host_bytes
            token, logits = r.token, r.logits
        else:
            res = self._head.run({"x": x[T - 1]})
            head_cycles, host = res.stats.cycles, host + _host(res)
            token, logits = int(res.outputs["next"][0]), res.outputs["logits"]
        self.position = pos + len(prompt)
        return PrefillResult(token, logits, tuple(chunk_cycles), tuple(step_cycles), head_cycles, host, moved,
                             cores)

    def _carry(self, src: list, dst: list) -> int:
        """Copies every layer's ``kc`` / ``vc`` from the devices ``src`` to ``dst`` through the host; returns
        the bytes read and written."""
        moved = 0
        for a, b in zip(src, dst):
            for c in ("kc", "vc"):
                v = a.read(c)
                b.write(c, v)
                moved += 2 * v.nbytes
        return moved

    def generate(self, prompt: Sequence[int], n: int, *, prefill: bool | None = None) -> list[int]:
        """The ``n`` tokens greedy decoding chooses after ``prompt`` (fed from position 0; the caches are
        overwritten from there): the prompt by :meth:`prefill` when the prefill layer was compiled (unless
        ``prefill=False``), else by decode steps; the new tokens by decode steps."""
        if not prompt:
            raise InputError("generate needs a prompt of at least one token")
        if len(prompt) + n > self.cfg.context + 1:
            raise InputError(f"a prompt of {len(prompt)} and {n} new tokens overflow the context of "
                             f"{self.cfg.context}")
        use = self.prefill_layer is not None if prefill is None else prefill
        self.position = 0
        out = []
        if use:
            r = self.prefill(prompt)
        else:
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

    def read_cache(self, layer: int, copy: str = "decode") -> dict[str, np.ndarray]:
        """Layer ``layer``'s KV cache as the steps (and prefills) left it (``kc``, ``vc``: :func:`cache_shapes`
        shapes): the decode copy, or with ``copy="prefill"`` the prefill layer's own."""
        devs = {"decode": self._layers, "prefill": self._prefills}.get(copy)
        if not devs:
            raise InputError(f"no {copy!r} copy of the caches (copies: 'decode', and 'prefill' with prefill=T)")
        return {c: devs[layer].read(c) for c in ("kc", "vc")}

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


def handoff_cycles(cfg: LlamaConfig, region: tuple[int, int], target: Target, tokens: int = 1) -> float:
    """The estimated cycles of the ``layers + 1`` hand-offs of the hidden states of ``tokens`` tokens between
    adjacent regions of ``region`` cores on ``target``: each crosses the region's width in hops at the hop
    latency and sends ``tokens * dim`` floats at the link bandwidth (see the module text)."""
    per = region[0] * target.hop_latency + tokens * cfg.dim * 4 / target.link_bytes_per_cycle
    return (cfg.layers + 1) * per
