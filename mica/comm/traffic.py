"""The traffic a mesh program's communication ops declare: per link, per message, and the longest path.

This is comm/'s prediction, computed from the ops alone (roots, rectangles, boxes) without routing
anything. The emulator's measured counters must equal it exactly. Memory is proportional to the mesh
(one counter per link), so this is for checking, not for the wafer-scale compile path.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

from ..meshir.ir import Exchange, MeshProgram, Multicast, RingShift, Shift

LINK = {"N": 0, "E": 1, "S": 2, "W": 3}


@dataclass(frozen=True, eq=False)
class Traffic:
    """``link_bytes[y, x, l]``: bytes leaving core (x, y) on out-link l (N, E, S, W)."""

    link_bytes: np.ndarray
    link_messages: np.ndarray
    messages: int
    max_hops: int

    @property
    def total_link_bytes(self) -> int:
        return int(self.link_bytes.sum())


def _iterations(scope):
    names = [v for v, _ in scope]
    for values in product(*(range(n) for _, n in scope)):
        yield dict(zip(names, values))


def _line_bytes(mp: MeshProgram, buffer: str, xs: np.ndarray, ys: np.ndarray, t: int) -> np.ndarray:
    tensor = mp.tensor(buffer)
    out = np.full(np.broadcast(xs, ys).shape, tensor.elem_bytes, dtype=np.int64)
    for d in tensor.box:
        if d.window or d.padded:
            out = out * d.alloc
            continue
        c = {"x": xs, "y": ys, "t": t, None: 0}[d.coord]
        lo = d.tile * (np.asarray(c) - d.origin) if d.coord else 0
        out = out * np.clip(d.extent - lo, 0, d.tile)
    return out


def declared_traffic(mp: MeshProgram) -> Traffic:
    w, h = mp.mesh
    link_bytes = np.zeros((h, w, 4), dtype=np.int64)
    link_msgs = np.zeros((h, w, 4), dtype=np.int64)
    messages = 0
    max_hops = 0
    for op, scope in mp.walk():
        if not isinstance(op, Exchange):
            continue
        for env in _iterations(scope):
            if not op.active(env):
                continue
            t = env.get("t", 0)
            for c in op.ops:
                if isinstance(c, RingShift):
                    nbytes = mp.tensor(c.src).max_bytes
                    for g in c.groups:
                        cols, rows = g.senders.members(env)
                        if not len(cols) or not len(rows):
                            continue
                        ys, xs = np.meshgrid(np.array(rows), np.array(cols), indexing="ij")
                        step = 1 if g.offset > 0 else -1
                        d = LINK[("E" if step > 0 else "W") if c.axis == "x" else ("S" if step > 0 else "N")]
                        for k in range(abs(g.offset)):
                            px, py = (xs + k * step, ys) if c.axis == "x" else (xs, ys + k * step)
                            link_bytes[py, px, d] += nbytes
                            link_msgs[py, px, d] += 1
                        messages += xs.size
                        max_hops = max(max_hops, abs(g.offset))
                    continue
                x0, x1, y0, y1 = c.receivers.at(env)
                if isinstance(c, Multicast):
                    r = c.root.evaluate(env)
                    if c.axis == "x":
                        ys = np.arange(y0, y1)
                        nbytes = _line_bytes(mp, c.src, np.full_like(ys, r), ys, t)
                        live = nbytes > 0
                        messages += int(live.sum())
                        link_bytes[ys, r:x1 - 1, LINK["E"]] += nbytes[:, None]
                        link_bytes[ys, x0 + 1:r + 1, LINK["W"]] += nbytes[:, None]
                        link_msgs[ys, r:x1 - 1, LINK["E"]] += live[:, None]
                        link_msgs[ys, x0 + 1:r + 1, LINK["W"]] += live[:, None]
                        if live.any():
                            max_hops = max(max_hops, r - x0, x1 - 1 - r)
                    else:
                        xs = np.arange(x0, x1)
                        nbytes = _line_bytes(mp, c.src, xs, np.full_like(xs, r), t)
                        live = nbytes > 0
                        messages += int(live.sum())
                        link_bytes[r:y1 - 1, xs, LINK["S"]] += nbytes[None, :]
                        link_bytes[y0 + 1:r + 1, xs, LINK["N"]] += nbytes[None, :]
                        link_msgs[r:y1 - 1, xs, LINK["S"]] += live[None, :]
                        link_msgs[y0 + 1:r + 1, xs, LINK["N"]] += live[None, :]
                        if live.any():
                            max_hops = max(max_hops, r - y0, y1 - 1 - r)
                elif isinstance(c, Shift):
                    sx0, sx1, sy0, sy1 = c.senders.at(env)
                    cols, rows = c.senders.members(env)
                    ys, xs = np.meshgrid(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
                                         indexing="ij")
                    nbytes = _line_bytes(mp, c.src, xs, ys, t)
                    live = nbytes > 0
                    messages += int(live.sum())
                    dx, dy = {"E": (1, 0), "W": (-1, 0), "S": (0, 1), "N": (0, -1)}[c.direction]
                    for k in range(c.distance):
                        link_bytes[ys + k * dy, xs + k * dx, LINK[c.direction]] += nbytes
                        link_msgs[ys + k * dy, xs + k * dx, LINK[c.direction]] += live
                    if live.any():
                        max_hops = max(max_hops, c.distance)
    return Traffic(link_bytes, link_msgs, messages, max_hops)
