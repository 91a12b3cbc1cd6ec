"""Cross-check: what the Metalium back end emitted against what the emulator runs and comm/ declares.

From the emitted files (``plan.json``, whose per-step transfer lists come from evaluating the C++
expressions written into the reader kernels, and the reader kernels' send calls themselves), and,
independently, from the emulator's lowered op code (``mica.native_sim.lower``: route tables, sends and
receives, decoded word by word and routed hop by hop here) and comm/'s declared traffic:

* every step's set of (sender, receivers, colour, payload bytes) is the same;
* every receiver waits for exactly the sender whose message the emulator's routes deliver to it;
* every transfer reads the buffer the emulator's send reads and lands in the one its receive writes;
* message count and total link bytes equal ``comm.traffic.declared_traffic``;
* CB pages cover every tensor's box, and the NoC byte count in each reader send call is the plan's.

A mismatch fails: the last tests corrupt the emitted output and check the cross-check notices.
"""

from __future__ import annotations

import json
import re
from math import ceil, prod

import pytest

from mica.comm.traffic import declared_traffic
from mica.meshir.ir import Exchange
from mica.native_sim import opcode as oc
from mica.native_sim.lower import lower

from .programs import PROGRAMS, compiled, rendered

# -- decoding the emulator's op code (mica/native_sim/opcode.py layout) ---------------------------------


class _Words:
    def __init__(self, code):
        self.w = [int(v) for v in code]
        self.pos = 0

    def take(self, n=1):
        out = self.w[self.pos:self.pos + n]
        self.pos += n
        return out

    def affine(self):
        a = self.take(oc.WORDS_AFFINE)
        assert a[-1] >= 1            # the divisor: > 1 for a step's block (a step-owner multicast's root)
        return a[0], a[1:-1], a[-1]

    def rect(self):
        bounds = [[self.affine() for _ in range(oc.MAX_TERMS)] for _ in range(4)]
        xs = self.take()[0]
        xp = self.affine()
        ys = self.take()[0]
        yp = self.affine()
        return bounds, xs, xp, ys, yp

    def box(self):
        offset, elem, rank = self.take(3)
        dims = [tuple(self.take(4)) for _ in range(oc.MAX_RANK)][:rank]
        return offset, elem, dims


def _aval(a, v):
    c, coeffs, div = a
    return (c + sum(k * v[i] for i, k in enumerate(coeffs))) // div


def _cores(rect, v, mesh):
    (x0, x1, y0, y1), xs, xp, ys, yp = rect
    lo_x, hi_x = max(_aval(a, v) for a in x0), min(_aval(a, v) for a in x1)
    lo_y, hi_y = max(_aval(a, v) for a in y0), min(_aval(a, v) for a in y1)
    px, py = _aval(xp, v), _aval(yp, v)
    return [(x, y) for y in range(max(lo_y, 0), min(hi_y, mesh[1]))
            for x in range(max(lo_x, 0), min(hi_x, mesh[0]))
            if (x - px) % xs == 0 and (y - py) % ys == 0]


def _box_bytes(box, x, y, v):
    _, elem, dims = box
    n = elem
    for axis, tile, extent, origin in dims:
        c = (0 if axis == oc.AXIS_WHOLE else x - origin if axis == oc.AXIS_X else y - origin if axis == oc.AXIS_Y
             else v[axis - oc.AXIS_V0])
        lo = 0 if axis == oc.AXIS_WHOLE else tile * c
        n *= max(0, min(tile, extent - lo))
    return n


BITS = {oc.NORTH: ((0, -1), oc.SOUTH), oc.EAST: ((1, 0), oc.WEST), oc.SOUTH: ((0, 1), oc.NORTH),
        oc.WEST: ((-1, 0), oc.EAST)}


def emulator_transfers(prog):
    """{(exchange ordinal, loop values, colour, sender): (receivers, bytes, src offset, dst offset)} from the
    lowered op code, routing every send through the route tables hop by hop."""
    mp = prog.mesh_program
    low = lower(mp, prog.kernel_module)
    words = _Words(low.code)
    out = {}

    def run(end, v, nest):
        # nest: the slots of the enclosing loops, outermost first (a phase loop's slot is the last free one,
        # not its depth: mica.native_sim.lower), so keys list loop values in nesting order as plan.json does
        while words.pos < end:
            kind = words.take()[0]
            if kind == oc.OP_LOOP:
                slot, count, n = words.take(3)
                start = words.pos
                for i in range(count):
                    words.pos = start
                    run(start + n, v[:slot] + [i] + v[slot + 1:], nest + (slot,))
                words.pos = start + n
            elif kind == oc.OP_COMPUTE:
                _, n = words.take(2)
                words.take(n * oc.WORDS_COMPUTE_ENTRY)
            elif kind in (oc.OP_EXCHANGE, oc.OP_PREFETCH):    # a prefetch moves the same data
                at = words.pos
                _, nr, ns, nv = words.take(4)
                routes = [(words.take()[0], words.take()[0], words.take()[0], words.rect()) for _ in range(nr)]
                sends = [(words.take()[0], words.take()[0], words.rect(), words.box()) for _ in range(ns)]
                recvs = [(words.take()[0], words.rect(), words.box()) for _ in range(nv)]
                table = {}
                for colour, rx, tx, r in routes:
                    for cell in _cores(r, v, mp.mesh):
                        table[(cell, colour)] = (rx, tx)
                recv_box = {}
                for colour, r, box in recvs:
                    for cell in _cores(r, v, mp.mesh):
                        recv_box[(cell, colour)] = box
                key_v = tuple(v[k] for k in nest)
                for colour, _, r, box in sends:
                    for src in _cores(r, v, mp.mesh):
                        nbytes = _box_bytes(box, *src, v)
                        if nbytes == 0:
                            continue
                        got, stack = [], [(src, oc.RAMP)]
                        while stack:
                            cell, came = stack.pop()
                            rx, tx = table[(cell, colour)]
                            assert rx & came, f"colour {colour} arrives unrouted at {cell}"
                            if tx & oc.RAMP:
                                got.append(cell)
                            for bit, ((dx, dy), back) in BITS.items():
                                if tx & bit:
                                    stack.append(((cell[0] + dx, cell[1] + dy), back))
                        dsts = tuple(sorted(got))
                        out[(at, key_v, colour, src)] = (dsts, nbytes, box[0],
                                                         {recv_box[(d, colour)][0] for d in dsts})
            else:
                raise AssertionError(f"unknown op code {kind}")

    run(len(words.w), [0] * oc.MAX_VARS, ())
    # exchanges by their place in the code: the same order as MeshIR's walk
    ordinal = {at: i for i, at in enumerate(_exchange_positions(low.code))}
    return {(ordinal[k[0]],) + k[1:]: v for k, v in out.items()}


def _exchange_positions(code):
    """Word positions of every EXCHANGE op, in code order (each loop body scanned once)."""
    words, out = _Words(code), []
    while words.pos < len(words.w):
        kind = words.take()[0]
        if kind == oc.OP_LOOP:
            words.take(3)                      # slot, count, body words: the body follows inline
        elif kind == oc.OP_COMPUTE:
            _, n = words.take(2)
            words.take(n * oc.WORDS_COMPUTE_ENTRY)
        elif kind in (oc.OP_EXCHANGE, oc.OP_PREFETCH):
            out.append(words.pos)
            _, nr, ns, nv = words.take(4)
            words.take(nr * oc.WORDS_ROUTE + ns * oc.WORDS_SEND + nv * oc.WORDS_RECV)
        else:
            raise AssertionError(f"unknown op code {kind}")
    return out


# -- the cross-check -----------------------------------------------------------------------------------

def crosscheck(prog, files) -> list[str]:
    """Every disagreement between the emitted files and the emulator / comm/ (empty when they agree)."""
    mp = prog.mesh_program
    plan = json.loads(files["plan.json"])
    problems = []
    by_offset: dict[int, set[str]] = {}      # operators that never run at once may share arena bytes
    for t in mp.tensors:
        by_offset.setdefault(t.offset, set()).add(t.name)
    cb_by_index = {c["index"]: c for c in plan["circular_buffers"]}
    ops = {(e["exchange"], e["op"], e["colour"]): e for e in plan["exchanges"]}

    # 1. transfers, step by step
    sends, recvs = {}, {}
    for s in plan["steps"]:
        key = (s["x"], tuple(s["step"].values()), s["colour"])
        if "send" in s:
            sends[key + (tuple(s["send"]),)] = (tuple(sorted(tuple(d) for d in s["to"])), s["payload_bytes"], s)
        else:
            recvs[key + (tuple(s["recv"]),)] = tuple(s["from"])
    emu = emulator_transfers(prog)
    for k in sorted(set(emu) | set(sends)):
        if k not in sends:
            problems.append(f"the emulator sends {k} -> {emu[k][0]}, the Metalium reader does not")
            continue
        if k not in emu:
            problems.append(f"the Metalium reader sends {k} -> {sends[k][0]}, the emulator does not")
            continue
        dsts, nbytes, src_off, dst_offs = emu[k]
        pdsts, pbytes, rec = sends[k]
        if pdsts != dsts:
            problems.append(f"{k}: Metalium delivers to {pdsts}, the emulator's routes to {dsts}")
        if pbytes != nbytes:
            problems.append(f"{k}: Metalium payload {pbytes} B, emulator message {nbytes} B")
        e = ops[(rec["exchange"], rec["op"], rec["colour"])]
        if e["src"] not in by_offset.get(src_off, ()):
            problems.append(f"{k}: Metalium sends {e['src']}, the emulator {by_offset.get(src_off)}")
        if not dst_offs or any(e["dst"] not in by_offset.get(o, ()) for o in dst_offs):
            problems.append(f"{k}: Metalium lands in {e['dst']}, the emulator in {dst_offs}")
        if not (e["noc_bytes"] >= pbytes and e["noc_bytes"] == e["tiles"] * cb_by_index[e["src_cb"]]["page_bytes"]):
            problems.append(f"{k}: NoC transfer of {e['noc_bytes']} B does not carry {e['tiles']} tile(s)")
    want_recv = {}
    for (x, v, colour, src), (dsts, *_rest) in emu.items():
        for d in dsts:
            want_recv[(x, v, colour, d)] = src
    if want_recv != recvs:
        bad = sorted(set(want_recv.items()) ^ set(recvs.items()))[:4]
        problems.append(f"receivers wait for other senders than the emulator's routes deliver: {bad}")

    # 2. comm/'s declared traffic: messages and link bytes on the mesh
    tr = declared_traffic(mp)
    n_msgs = len(sends)
    link = 0
    for (dsts, nbytes, rec) in sends.values():
        xs = [rec["send"][0]] + [d[0] for d in dsts]
        ys = [rec["send"][1]] + [d[1] for d in dsts]
        link += nbytes * ((max(xs) - min(xs)) + (max(ys) - min(ys)))
    if n_msgs != tr.messages:
        problems.append(f"Metalium sends {n_msgs} messages, comm/ declares {tr.messages}")
    if link != tr.total_link_bytes:
        problems.append(f"Metalium's messages cross {link} link bytes, comm/ declares {tr.total_link_bytes}")

    # 3. buffer sizes: every tensor's CB holds its whole box in tiles (a double buffer: in each of its two
    # slots, and exactly the MeshIR's double buffers have two when the record says they were emitted)
    cbs = {c["tensor"]: c for c in plan["circular_buffers"] if c["kind"] == "tensor"}
    db = plan.get("double_buffering", {})
    two = set(db.get("double_buffers", ())) if db.get("emitted") else set()
    for t in mp.tensors:
        c = cbs.get(t.name)
        dims = [getattr(d, "span", 0) or (d.tile if (d.coord or d.padded) else min(d.tile, d.extent)) for d in t.box]
        # a rank-1 box is a column; higher ranks flatten their leading dimensions into the rows
        rows, cols = (dims + [1, 1])[:2] if len(dims) <= 2 else (prod(dims[:-1]), dims[-1])
        want = ceil(rows / 32) * ceil(cols / 32)
        slots = c.get("slots", 1) if c else 1
        if c is not None and (slots != (2 if t.name in two else slots) or (t.slots == 1 and slots != 1)
                              or c["pages"] != slots * c.get("slot_pages", c["pages"])):
            problems.append(f"tensor {t.name}: CB {c} has {slots} slot(s); MeshIR has {t.slots}")
        if c is None or c.get("slot_pages", c["pages"]) != want or c["page_bytes"] < 32 * 32 * t.elem_bytes:
            problems.append(f"tensor {t.name}: CB {c} does not hold {want} tile(s) of its box {dims}")
        elif c.get("slot_pages", c["pages"]) * c["page_bytes"] < t.max_bytes:
            problems.append(f"tensor {t.name}: CB of {c['pages'] * c['page_bytes']} B < box of {t.max_bytes} B")

    # 4. the expressions plan.json was expanded from are the ones in every reader kernel
    for path, text in files.items():
        if not path.startswith("kernels/reader_"):
            continue
        for e in plan["exchanges"]:
            wanted = [f"if ({e['send_when']}) {{", f"if ({e['recv_when']}) {{",
                      f"noc_x[{e['src_core'][0]}], noc_y[{e['src_core'][1]}]"]
            if e["kind"] == "unicast":
                wanted.append(f"noc_x[{e['dst_core'][0]}], noc_y[{e['dst_core'][1]}]")
            else:
                x0, x1, y0, y1 = e["mcast_rect"]
                wanted.append(f"const int32_t x0 = {x0}, x1 = {x1}, y0 = {y0}, y1 = {y1};")
            for w in wanted:
                if w not in text:
                    problems.append(f"{path}: {e['op']}: plan.json's {w!r} is not in the kernel")

    # 5. the reader kernels' send calls carry the plan's CBs and byte counts
    call = re.compile(r"mica_send_\w+\(get_read_ptr\((cb_\w+)\), get_write_ptr\((cb_\w+)\), (\d+), (sem_\w+)_ready")
    names = {c["name"]: c["index"] for c in plan["circular_buffers"]}
    # ops on disjoint cores (operators side by side) may share semaphores: a send matches one of its ops
    by_sem: dict[str, list] = {}
    for e in plan["exchanges"]:
        by_sem.setdefault(e["semaphores"][0], []).append(e)
    for path, text in files.items():
        if not path.startswith("kernels/reader_"):
            continue
        for m in call.finditer(text):
            ops = by_sem.get(m.group(4) + "_ready")
            if not ops:
                problems.append(f"{path}: a send on {m.group(4)} that plan.json does not list")
                continue
            got = (names.get(m.group(1)), names.get(m.group(2)), int(m.group(3)))
            if all(got != (e["src_cb"], e["dst_cb"], e["noc_bytes"]) for e in ops):
                problems.append(f"{path}: send of {ops[0]['op']} is (CB, CB, bytes) {got}, plan.json says "
                                f"{[(e['src_cb'], e['dst_cb'], e['noc_bytes']) for e in ops]}")
    return problems


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emitted_plan_matches_the_emulator_and_comm(name):
    prog = compiled(name)
    files = rendered(name)
    assert crosscheck(prog, files) == []
    # the check is not vacuous: every program with exchanges has transfers in its plan
    n_ex = sum(1 for op, _ in prog.mesh_program.walk() if isinstance(op, Exchange))
    assert (n_ex > 0) == any("send" in s for s in json.loads(files["plan.json"])["steps"])


def _mutated_plan(files, fn):
    doc = json.loads(files["plan.json"])
    fn(doc)
    return {**files, "plan.json": json.dumps(doc)}


def test_a_wrong_destination_fails_the_crosscheck():
    prog, files = compiled("matmul_summa_wormhole"), rendered("matmul_summa_wormhole")

    def move(doc):
        s = next(s for s in doc["steps"] if "send" in s)
        s["to"] = s["to"][:-1]                       # one receiver forgotten
    assert any("delivers to" in p for p in crosscheck(prog, _mutated_plan(files, move)))


def test_a_wrong_sender_of_a_receiver_fails_the_crosscheck():
    prog, files = compiled("matmul_interleaved_wormhole"), rendered("matmul_interleaved_wormhole")

    def wrong(doc):
        s = next(s for s in doc["steps"] if "recv" in s)
        s["from"] = [s["from"][0] + 1, s["from"][1]]
    assert any("receivers wait" in p for p in crosscheck(prog, _mutated_plan(files, wrong)))


def test_a_missing_transfer_and_wrong_sizes_fail_the_crosscheck():
    prog, files = compiled("gemv_ktree_wormhole"), rendered("gemv_ktree_wormhole")

    def drop(doc):
        i = next(i for i, s in enumerate(doc["steps"]) if "send" in s)
        del doc["steps"][i]
    problems = crosscheck(prog, _mutated_plan(files, drop))
    assert any("the emulator sends" in p for p in problems) and any("comm/ declares" in p for p in problems)

    def shrink(doc):
        for c in doc["circular_buffers"]:
            if c["tensor"] == "A" and c["kind"] == "tensor":
                c["page_bytes"] = 1024
    assert any("tensor A" in p for p in crosscheck(prog, _mutated_plan(files, shrink)))


def test_a_reader_sending_other_bytes_than_the_plan_fails_the_crosscheck():
    prog, files = compiled("mm2_wormhole"), rendered("mm2_wormhole")
    path = "kernels/reader_c0.cpp"
    bad = dict(files)
    bad[path] = re.sub(r"(mica_send_multicast\(get_read_ptr\(\w+\), get_write_ptr\(\w+\), )4096", r"\g<1>2048",
                       files[path], count=1)
    assert bad[path] != files[path]
    assert any("plan.json says" in p for p in crosscheck(prog, bad))


def test_a_reader_receiving_from_another_core_than_the_plan_fails_the_crosscheck():
    prog, files = compiled("gemv_ktree_wormhole"), rendered("gemv_ktree_wormhole")
    path = "kernels/reader_c3.cpp"
    bad = dict(files)
    bad[path] = files[path].replace("noc_x[(my_x + 1)], noc_y[my_y]);", "noc_x[(my_x + 2)], noc_y[my_y]);", 1)
    assert bad[path] != files[path]
    assert any("is not in the kernel" in p for p in crosscheck(prog, bad))
