"""Cross-check of the CSL back end's ``plan.json`` against the emulator: the op code ``native_sim.lower``
produces (decoded here word by word, independently of the back end) and ``comm.traffic``'s declared
per-link bytes. :func:`crosscheck` returns a list of mismatches (empty when they agree)."""

from __future__ import annotations

import numpy as np

from mica.comm.traffic import declared_traffic
from mica.meshir import ir
from mica.native_sim import opcode as oc
from mica.native_sim.lower import lower

BITS = {oc.RAMP: "RAMP", oc.NORTH: "N", oc.EAST: "E", oc.SOUTH: "S", oc.WEST: "W"}
STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}
LINK = {"N": 0, "E": 1, "S": 2, "W": 3}


def _dirs(bits):
    return frozenset(n for b, n in BITS.items() if bits & b)


def _aff(w, v):
    return (w[0] + sum(c * v[i] for i, c in enumerate(w[1:1 + oc.MAX_VARS]))) // w[1 + oc.MAX_VARS]


def _rect(w, v, mesh):
    """Cells of the rectangle encoded at words ``w`` for loop values ``v``."""
    bounds = []
    for k in range(4):
        terms = [_aff(w[k * oc.WORDS_BOUND + j * oc.WORDS_AFFINE:][:oc.WORDS_AFFINE], v) for j in range(oc.MAX_TERMS)]
        bounds.append(max(terms) if k in (0, 2) else min(terms))
    p = 4 * oc.WORDS_BOUND
    a = oc.WORDS_AFFINE
    xs, xp, ys, yp = w[p], _aff(w[p + 1:p + 1 + a], v), w[p + 1 + a], _aff(w[p + 2 + a:p + 2 + 2 * a], v)
    x0, x1, y0, y1 = max(bounds[0], 0), min(bounds[1], mesh[0]), max(bounds[2], 0), min(bounds[3], mesh[1])
    return [(x, y) for y in range(y0, y1) for x in range(x0, x1) if (x - xp) % xs == 0 and (y - yp) % ys == 0]


def _box_elems(w, x, y, v):
    n = 1
    for d in range(w[2]):
        axis, tile, extent, origin = w[3 + 4 * d:7 + 4 * d]
        c = (0 if axis == oc.AXIS_WHOLE else x - origin if axis == oc.AXIS_X else y - origin if axis == oc.AXIS_Y
             else v[axis - oc.AXIS_V0])
        n *= tile if axis == oc.AXIS_WHOLE else max(0, min(tile, extent - tile * c))
    return n * w[1]


def _decode(code, mesh, on_exchange):
    """Walks the op code, calling ``on_exchange(op_id, v, routes, sends, recvs)`` for every exchange
    executed (routes: {(x, y, colour): (rx, tx)}, sends/recvs: {(x, y, colour): bytes})."""
    v = [0] * oc.MAX_VARS

    def block(pos, end):
        while pos < end:
            kind = code[pos]
            if kind == oc.OP_LOOP:
                slot, count, body = code[pos + 1:pos + 4]
                for i in range(count if body > 0 else 0):
                    v[slot] = i
                    block(pos + 4, pos + 4 + body)
                v[slot] = 0
                pos += 4 + body
            elif kind in (oc.OP_EXCHANGE, oc.OP_PREFETCH):    # a prefetch moves the same data
                op_id, nr, ns, nv = code[pos + 1:pos + 5]
                p = pos + 5
                routes, sends, recvs = {}, {}, {}
                for _ in range(nr):
                    col, rx, tx = code[p:p + 3]
                    for cell in _rect(code[p + 3:], v, mesh):
                        routes[(*cell, col)] = (_dirs(rx), _dirs(tx))
                    p += oc.WORDS_ROUTE
                for _ in range(ns):
                    col = code[p]
                    for (x, y) in _rect(code[p + 2:], v, mesh):
                        b = _box_elems(code[p + 2 + oc.WORDS_RECT:], x, y, v)
                        if b:
                            sends[(x, y, col)] = b
                    p += oc.WORDS_SEND
                for _ in range(nv):
                    col = code[p]
                    for (x, y) in _rect(code[p + 1:], v, mesh):
                        b = _box_elems(code[p + 1 + oc.WORDS_RECT:], x, y, v)
                        if b:
                            recvs[(x, y, col)] = b
                    p += oc.WORDS_RECV
                on_exchange(op_id, tuple(v), routes, sends, recvs)
                pos = p
            elif kind == oc.OP_COMPUTE:
                pos += 3 + code[pos + 2] * oc.WORDS_COMPUTE_ENTRY
            else:
                raise AssertionError(f"unknown op {kind}")
    block(0, len(code))


def _plan_bytes(buf, x, y, env):
    n = {"f32": 4, "f16": 2}[buf["dtype"]]
    for coord, tile, extent, padded, offset, span, origin in buf["dims"]:
        if span:
            n *= span
        elif padded or coord == "kb":
            n *= tile
        elif coord is None:
            n *= min(tile, extent)
        else:
            c = {"x": x - origin, "y": y - origin}.get(coord, env.get(coord, 0))
            n *= max(0, min(tile, extent - tile * c))
    return n


def _cells(b):
    x0, x1, xs, y0, y1, ys = b
    return [(x, y) for y in range(y0, y1, ys) for x in range(x0, x1, xs)]


def _exchange_slots(mp) -> list[tuple[tuple[str, int], ...]]:
    """(loop variable, slot) of the loops around each exchange, in program order, outermost first: a loop's
    slot is its depth among the loops that are not phase loops, a phase loop's the last free one (the rule of
    the op code, mica.native_sim.lower)."""
    out = []

    def go(ops, slots, phases):
        for op in ops:
            if isinstance(op, ir.Loop):
                slot = oc.MAX_VARS - 1 - phases if op.phase else len(slots) - phases
                go(op.body, slots + ((op.var, slot),), phases + op.phase)
            elif isinstance(op, ir.Exchange):
                out.append(slots)
    go(mp.body, (), 0)
    return out


def crosscheck(compiled, plan: dict) -> list[str]:
    mp = compiled.mesh_program
    mesh = tuple(mp.mesh)
    problems: list[str] = []
    code = lower(mp, compiled.kernel_module).code.tolist()
    scopes = _exchange_slots(mp)
    exch_ids = []
    bufs = {b["name"]: b for b in plan["buffers"]}
    link = np.zeros((mesh[1], mesh[0], 4), dtype=np.int64)

    def on_exchange(op_id, v, routes, sends, recvs):
        if op_id not in exch_ids:
            exch_ids.append(op_id)
        xi = exch_ids.index(op_id)
        env = {var: v[slot] for var, slot in scopes[xi]}
        key = {k: val for k, val in env.items()}
        chans = [c for c in plan["channels"] if c["exchange_index"] == xi and any(
            set(box) == set(key) and all(lo <= key[v] < hi for v, (lo, hi) in box.items()) for box in c["uses"])]
        p_routes, p_sends, p_recvs = {}, {}, {}
        for c in chans:
            mc = c["meshir_colour"]
            for r in c["routes"]:
                for cell in _cells(r["box"]):
                    p_routes[(*cell, mc)] = (frozenset(r["rx"]), frozenset(r["tx"]))
            for cell in _cells(c["senders"]):
                b = _plan_bytes(bufs[c["src"]], *cell, env)
                if b:
                    p_sends[(*cell, mc)] = b
                    _trace_link(c, cell, b)
            for cell in _cells(c["receivers"]):
                b = _plan_bytes(bufs[c["dst"]], *cell, env)
                if b:
                    p_recvs[(*cell, mc)] = b
        where = f"exchange #{xi} at {env}"
        if p_routes != routes:
            diff = set(p_routes.items()) ^ set(routes.items())
            problems.append(f"{where}: routes differ at {sorted(diff, key=str)[:4]}")
        if p_sends != sends:
            problems.append(f"{where}: sends differ: plan {sorted(p_sends.items())[:4]} emulator {sorted(sends.items())[:4]}")
        if p_recvs != recvs:
            problems.append(f"{where}: receives differ: plan {sorted(p_recvs.items())[:4]} emulator {sorted(recvs.items())[:4]}")

    table = {}
    for c in plan["channels"]:
        for r in c["routes"]:
            for cell in _cells(r["box"]):
                table[(c["id"], *cell)] = r

    def _trace_link(c, cell, nbytes):
        stack = [(cell, "RAMP")]
        seen = set()
        while stack:
            (x, y), came = stack.pop()
            if (x, y) in seen:
                return
            seen.add((x, y))
            r = table.get((c["id"], x, y))
            if r is None or came not in r["rx"]:
                problems.append(f"channel {c['id']}: no route at ({x},{y}) from {came}")
                return
            for d in r["tx"]:
                if d == "RAMP":
                    continue
                link[y, x, LINK[d]] += nbytes
                stack.append(((x + STEP[d][0], y + STEP[d][1]), {"N": "S", "S": "N", "E": "W", "W": "E"}[d]))

    _decode(code, mesh, on_exchange)
    traffic = declared_traffic(mp)
    if sum(x["messages"] for x in plan["exchanges"]) != traffic.messages:
        problems.append(f"plan.json's exchanges carry {sum(x['messages'] for x in plan['exchanges'])} messages, "
                        f"comm.traffic declares {traffic.messages}")
    if sum(x["bytes"] for x in plan["exchanges"]) != traffic.total_link_bytes and traffic.max_hops <= 1:
        problems.append("single-hop program: message bytes differ from link bytes")
    want = traffic.link_bytes
    if not np.array_equal(link, want):
        bad = np.argwhere(link != want)[:4]
        problems.append(f"per-link bytes traced through the plan's routes differ from comm.traffic at "
                        f"{[(int(x), int(y), 'NESW'[int(l)]) for y, x, l in bad]}")
    for t in mp.tensors:
        if t.name not in bufs or bufs[t.name]["bytes"] != t.max_bytes:
            problems.append(f"buffer {t.name}: plan {bufs.get(t.name, {}).get('bytes')} B, MeshIR {t.max_bytes} B")
    return problems
