"""``plan.json``: the CSL back end's own record of what it emitted, from the same :class:`CslPlan` the
CSL text is rendered from.

Per colour: the channels on it; per channel: exchange, pattern, senders, receivers, routes (per router
rectangle: rx/tx), the iterations it is used at, the buffers it moves and the largest message; per buffer:
its size; plus queues, local task IDs, region classes and the steps of the PE state machine.

Public API: :func:`plan_record`.
"""

from __future__ import annotations

import numpy as np

from ..meshir import ir
from .plan import CslPlan, use_ranges

_BIT = {"RAMP": 1, "N": 2, "E": 4, "S": 8, "W": 16}


def _router_classes(plan: CslPlan) -> list[dict]:
    """Routers with identical settings on every colour: {colour: [rx, tx]}, how many, one example."""
    w, h = plan.mesh
    cols = plan.colours_used
    if not cols:
        return []
    grid = np.zeros((h, w, 2 * len(cols)), dtype=np.int16)
    for c in plan.channels:
        k = cols.index(c.colour)
        for r in c.routes:
            sl = (slice(r.box.y0, r.box.y1, r.box.ys), slice(r.box.x0, r.box.x1, r.box.xs))
            grid[sl + (2 * k,)] = sum(_BIT[d] for d in r.rx)
            grid[sl + (2 * k + 1,)] = sum(_BIT[d] for d in r.tx)
    rows, first, counts = np.unique(grid.reshape(h * w, -1), axis=0, return_index=True, return_counts=True)
    out = []
    for i in np.argsort(first):
        row = rows[i]
        routes = {str(c): [[d for d, b in _BIT.items() if row[2 * k] & b], [d for d, b in _BIT.items() if row[2 * k + 1] & b]]
                  for k, c in enumerate(cols) if row[2 * k] or row[2 * k + 1]}
        out.append({"routes": routes, "colours": len(routes), "cores": int(counts[i]),
                    "example": [int(first[i]) % w, int(first[i]) // w]})
    return out


def _exchanges(mp: ir.MeshProgram, plan: CslPlan) -> list[dict]:
    """Per exchange: its channels and the messages and bytes they carry over the whole program."""
    out = []
    names = [op for op, _ in mp.walk() if isinstance(op, ir.Exchange)]
    for xi, op in enumerate(names):
        msgs = nbytes = 0
        chans = [c for c in plan.channels if c.exchange_index == xi]
        for c in chans:
            t = mp.tensor(c.src)
            b = c.senders
            xs = np.arange(b.x0, b.x1, b.xs)[None, :]
            ys = np.arange(b.y0, b.y1, b.ys)[:, None]
            for u in c.uses:
                env = dict(u)
                size = np.full((len(range(b.y0, b.y1, b.ys)), len(range(b.x0, b.x1, b.xs))), t.elem_bytes, np.int64)
                for d in t.box:
                    f = d.fixed
                    if f is not None:
                        size = size * f
                    else:
                        cc = xs if d.coord == "x" else ys if d.coord == "y" else env.get(d.coord, 0)
                        size = size * np.clip(d.extent - d.tile * (cc - d.origin), 0, d.tile)
                msgs += int((size > 0).sum())
                nbytes += int(size.sum())
        out.append({"index": xi, "name": op.name, "guard": str(op.guard) if op.guard is not None else None,
                    "patterns": [c.name for c in op.ops], "channels": [c.id for c in chans],
                    "messages": msgs, "bytes": nbytes})
    return out


def _piece(array: str, pieces: dict) -> dict:
    """``{"piece_of": [program array, cut dimension, lo, hi]}`` for a piece of a cut array, else nothing."""
    return {"piece_of": list(pieces[array])} if array in pieces else {}


def plan_record(mp: ir.MeshProgram, plan: CslPlan, exported: list[str], pieces: dict | None = None) -> dict:
    """The ``plan.json`` record of ``plan``; ``pieces`` maps each MeshIR array that is a piece of a cut
    program array to ``(array, dimension, lo, hi)`` (:func:`.host.piece_sources`)."""
    pieces = pieces or {}
    bufs = {b.name: b for b in plan.buffers}
    chans = []
    for c in plan.channels:
        chans.append({
            "id": c.id, "colour": c.colour, "exchange": c.exchange, "exchange_index": c.exchange_index,
            "pattern": c.pattern, "part": c.part, "meshir_colour": c.meshir_colour,
            "src": c.src, "dst": c.dst, "senders": c.senders.as_list(), "receivers": c.receivers.as_list(),
            "max_hops": c.max_hops, "message_bytes_max": bufs[c.src].bytes,
            "uses": [{v: list(r) for v, r in box.items()} for box in use_ranges(c.uses)],
            "routes": [{"box": r.box.as_list(), "rx": list(r.rx), "tx": list(r.tx)} for r in c.routes],
        })
    knames = [k.name for k in mp.kernels]
    return {
        "program": plan.name, "arch": plan.arch, "mesh": list(plan.mesh), "sram_bytes": plan.sram_bytes,
        "colour_budget": plan.colour_budget,
        "box_format": "[x0, x1, xs, y0, y1, ys]: cores x in range(x0, x1, xs), y in range(y0, y1, ys)",
        "uses_format": "a channel carries one message per sender at loop values inside one of its boxes "
                       "{var: [lo, hi)} ({} = once, outside loops)",
        "colours": [{"colour": col, "channels": [c.id for c in plan.channels if c.colour == col]}
                    for col in plan.colours_used],
        "channels": chans,
        "routers": _router_classes(plan),
        "exchanges": _exchanges(mp, plan),
        "buffers": [{"name": b.name, "array": b.array, "dtype": b.dtype, "elems": b.elems, "bytes": b.bytes,
                     "role": b.role, "dims": [list(d) for d in b.dims],
                     **({"slots": b.slots, "alloc_bytes": b.alloc_bytes} if b.slots != 1 else {})}
                    for b in plan.buffers],
        "buffer_bytes_total": sum(b.alloc_bytes for b in plan.buffers),
        "landing": {b: {"buffer": l, "chunk_elems": plan.landing_chunk[b], "rounds": plan.rounds}
                    for b, l in sorted(plan.landing.items())},
        "queues": {"input": {str(k): v for k, v in sorted(plan.in_queue.items())},
                   "output": {str(k): v for k, v in sorted(plan.out_queue.items())}},
        "task_ids": dict(plan.task_ids),
        "classes": [{"id": cid, "rx_mask": rx, "tx_mask": tx, "kernel_classes": dict(zip(knames, kcs)),
                     "cores": n, "example": list(ex)} for cid, rx, tx, kcs, n, ex in plan.classes],
        "params_per_class": ["rx_mask", "tx_mask"] + [f"kc_{k}" for k in knames],
        "exported": exported + ["scalars"] + (["rparams"] if mp.runtime else []) + ["main"],
        "host": {"loads": [{"array": ld.array, "buffer": ld.buffer, "region": [ld.region.x0, ld.region.x1,
                                                                                ld.region.y0, ld.region.y1],
                            **_piece(ld.array, pieces)} for ld in plan.loads],
                 "stores": [{"array": st.array, "buffer": st.buffer, "region": [st.region.x0, st.region.x1,
                                                                                 st.region.y0, st.region.y1],
                             **_piece(st.array, pieces)} for st in plan.stores]},
        "steps": [{"pc": s.pc, "kind": s.kind, "text": s.text} for s in plan.steps],
        **_double_buffering(mp, plan),
        # innermost loops that stayed scalar (every other innermost loop is DSD operations), with the reason
        "scalar_loops": list(plan.kernels.scalar_loops) if plan.kernels is not None else [],
        **({"runtime_parameters": [{"name": n, "lo": lo, "hi": hi, "rparams_index": k}
                                   for k, (n, lo, hi) in enumerate(mp.runtime)]} if mp.runtime else {}),
    }


def _double_buffering(mp: ir.MeshProgram, plan: CslPlan) -> dict:
    """The ``double_buffering`` entry, only for a program whose MeshIR double-buffers (single-buffered
    programs' records are unchanged): ``emitted`` is true when every prefetched exchange is emitted
    double-buffered; otherwise ``emitted_exchanges`` lists those that are and ``dropped`` says why each
    of the others is not."""
    db = mp.double_buffering()
    if db is None:
        return {}
    d = plan.double
    names = [op.name for op, _ in mp.walk() if isinstance(op, ir.Exchange)]
    done = [names[i] for i in sorted(d.exchanges)]
    if not d.dropped:
        return {"double_buffering": {**db, "emitted": True, "note": EMITTED_NOTE}}
    return {"double_buffering": {**db, "emitted": False, "emitted_exchanges": done, "dropped": dict(d.dropped),
                                 "note": PARTIAL_NOTE if done else DROPPED_NOTE}}


EMITTED_NOTE = ("every prefetched exchange is emitted double-buffered: each two-slot buffer is one array of two "
                "slots; step t+1's sends and receives start (asynchronous @mov) into the other slot right after "
                "step t's panels arrived and before step t's compute, which reads slot slot_<buffer>; the next "
                "step waits for them (activate/unblock join). Ring shifts need no landing buffer then.")
PARTIAL_NOTE = ("the exchanges in emitted_exchanges are emitted double-buffered; those in dropped are emitted "
                "single-buffered (each step's exchange completes before that step's compute, one slot), for "
                "the reason given")


DROPPED_NOTE = ("this back end emits the single-buffered program (still correct): each step's exchange completes before that step's compute, one receive buffer per panel; the overlap the cost model and the emulator assume is not realised on hardware")
