"""Structural validator of an emitted CSL file set (usable on a directory a user edited).

Reads the files back (not the in-memory plan) and checks:

* routes: every channel of ``plan.json``, traced hop by hop through the ``@set_color_config`` lines of
  ``layout.csl`` from each of its senders, is routed at every hop and reaches exactly its receivers, once
  each; no router holds two different settings for one colour; no router holds more colours than the
  budget; every colour is a routable ID outside memcpy's reserved ones;
* shared colours: two channels on one colour with a router in common are never active in one exchange
  instance, and every core receiving in both receives from the same sender in both (traced through the
  layout), so their messages reach it in program order through one path;
* queues: no core binds one queue to two colours on WSE-3 (queues stay bound for the program), and no core
  uses one queue number (= microthread) for two operations of one exchange instance;
* colours used by the PE program's fabric DSDs are declared and routed in the layout;
* symbols: every symbol ``run.py`` touches (``get_id``, ``launch``) is exported by the layout and the PE
  program;
* memory: the PE program's buffers (``var X: [n]T = @zeros(...)``) have the sizes ``plan.json`` records
  (a double buffer: both slots, ``slots`` x ``bytes``; every double buffer of an emitted double-buffered
  program has two) and fit the target's SRAM together;
* names: no declaration repeats a name visible where it is made (CSL has no shadowing or redeclaration);
* parameters: every ``param`` of the PE program gets a value in the layout's ``@set_tile_code`` and the
  layout passes nothing the PE program does not declare.
* runtime parameters (``runtime_parameters`` of ``plan.json``): the PE program holds them in ``rparams``
  (``[n]i32``), every function reading ``rp_<name>`` declares it as ``rparams[k]`` with ``k`` the recorded
  index, no other ``rp_`` name is read, and ``run.py`` declares the same ranges (``RUNTIME``) and writes
  ``n`` values per PE to ``rparams``.

Every failure is an :class:`EmitError` naming the file and line.

Public API: :func:`validate` (file name -> text), :func:`validate_dir`; from a shell:
``python -m mica.emit_csl.validate DIR``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np

from ..errors import EmitError
from .plan import RESERVED_IDS, ROUTABLE

_ROUTE = re.compile(r"for \(@range\(i16, (-?\d+), (-?\d+), (\d+)\)\) \|x\| \{ for \(@range\(i16, (-?\d+), (-?\d+), "
                    r"(\d+)\)\) \|y\| \{ @set_color_config\(x, y, color_(\d+), \.\{ \.routes = \.\{ \.rx = \.\{ ([A-Z, ]*) \}, "
                    r"\.tx = \.\{ ([A-Z, ]*) \} \} \}\); \} \}")
_COLOUR = re.compile(r"const color_(\d+): color = @get_color\((\d+)\);")
_BUFFER = re.compile(r"^var buf_(\w+): \[(\d+)\](f32|f16) = @zeros")
_SHORT = {"RAMP": "RAMP", "NORTH": "N", "EAST": "E", "SOUTH": "S", "WEST": "W"}
OPP = {"N": "S", "S": "N", "E": "W", "W": "E"}
SIZE = {"f32": 4, "f16": 2}


def _fail(file: str, line: int, msg: str):
    raise EmitError(f"{file}:{line}: {msg}", location=(file, line, 0))


def _line_of(text: str, needle: str) -> int:
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln:
            return i
    return 0


BIT = {"RAMP": 1, "N": 2, "E": 4, "S": 8, "W": 16}


class _Table:
    """Per colour: rx and tx direction bits of every router, and the layout line that set them (numpy
    arrays ``[y, x]``), read from the layout's route lines."""

    def __init__(self, layout: str, w: int, h: int):
        self.w, self.h = w, h
        self.rx: dict[int, np.ndarray] = {}
        self.tx: dict[int, np.ndarray] = {}
        self.line: dict[int, np.ndarray] = {}
        for i, ln in enumerate(layout.splitlines(), 1):
            m = _ROUTE.search(ln)
            if not m:
                if "@set_color_config" in ln:
                    _fail("layout.csl", i, "a @set_color_config line not in the form MICA emits")
                continue
            x0, x1, xs, y0, y1, ys, col = (int(v) for v in m.groups()[:7])
            if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
                _fail("layout.csl", i, f"route rectangle [{x0}:{x1}, {y0}:{y1}] outside the {w}x{h} rectangle")
            rx = sum(BIT[_SHORT[d.strip()]] for d in m.group(8).split(",") if d.strip())
            tx = sum(BIT[_SHORT[d.strip()]] for d in m.group(9).split(",") if d.strip())
            if col not in self.rx:
                self.rx[col] = np.zeros((h, w), np.int8)
                self.tx[col] = np.zeros((h, w), np.int8)
                self.line[col] = np.zeros((h, w), np.int32)
            sl = (slice(y0, y1, ys), slice(x0, x1, xs))
            old_rx, old_tx, old_line = self.rx[col][sl], self.tx[col][sl], self.line[col][sl]
            clash = (old_line > 0) & ((old_rx != rx) | (old_tx != tx))
            if clash.any():
                yy, xx = np.argwhere(clash)[0]
                _fail("layout.csl", i, f"router ({x0 + xx * xs},{y0 + yy * ys}) gets two settings for colour color_{col} "
                                       f"(the other at line {int(old_line[yy, xx])})")
            self.rx[col][sl], self.tx[col][sl], self.line[col][sl] = rx, tx, i


def _shift(a: np.ndarray, d: str) -> np.ndarray:
    """``a`` moved one hop towards ``d`` (cells leaving the array are dropped)."""
    out = np.zeros_like(a)
    if d == "E":
        out[:, 1:] = a[:, :-1]
    elif d == "W":
        out[:, :-1] = a[:, 1:]
    elif d == "S":
        out[1:, :] = a[:-1, :]
    else:
        out[:-1, :] = a[1:, :]
    return out


def _edge(a: np.ndarray, d: str) -> np.ndarray:
    """Cells of ``a`` on the edge a hop towards ``d`` would leave."""
    return {"E": a[:, -1:], "W": a[:, :1], "S": a[-1:, :], "N": a[:1, :]}[d]


def _box_mask(b, w, h) -> np.ndarray:
    x0, x1, xs, y0, y1, ys = b
    m = np.zeros((h, w), np.int32)
    m[y0:y1:ys, x0:x1:xs] = 1
    return m


def _trace(ch: dict, table: _Table, layout: str) -> None:
    """Follows the channel's wavelets from all its senders at once, one hop per step, inside its routes'
    bounding box and a margin of one core: every hop must find a route accepting from where it came, and
    the ramps reached must be exactly the receivers, once each."""
    w, h = table.w, table.h
    col = ch["colour"]
    where = f"channel {ch['id']} ({ch['exchange']}, {ch['pattern']}) on color_{col}"
    head = _head_line(layout, ch)
    if col not in table.rx:
        _fail("layout.csl", head, f"{where}: colour color_{col} has no routes")
    boxes = [r["box"] for r in ch["routes"]] + [ch["senders"], ch["receivers"]]
    wx0, wy0 = max(0, min(b[0] for b in boxes) - 1), max(0, min(b[3] for b in boxes) - 1)
    wx1, wy1 = min(w, max(b[1] for b in boxes) + 1), min(h, max(b[4] for b in boxes) + 1)
    win = (slice(wy0, wy1), slice(wx0, wx1))
    rx, tx, lines = table.rx[col][win], table.tx[col][win], table.line[col][win]
    ww, wh = wx1 - wx0, wy1 - wy0

    def local(b):
        x0, x1, xs, y0, y1, ys = b
        m = np.zeros((wh, ww), np.int32)
        m[y0 - wy0:y1 - wy0:ys, x0 - wx0:x1 - wx0:xs] = 1
        return m
    waves = [(local(ch["senders"]), "RAMP")]
    got = np.zeros((wh, ww), np.int32)
    for _hop in range(w + h + 2):
        if not waves:
            break
        nxt: dict[str, np.ndarray] = {}
        for count, came in waves:
            here = count > 0
            bad = here & ((rx & BIT[came]) == 0)
            if bad.any():
                y, x = (int(v) for v in np.argwhere(bad)[0])
                line = int(lines[y, x]) or head
                _fail("layout.csl", line, f"{where}: no route at core ({x + wx0},{y + wy0}) for color_{col} arriving "
                                          f"from {came}")
            for d, bit in BIT.items():
                out = np.where(here & ((tx & bit) != 0), count, 0)
                if not out.any():
                    continue
                if d == "RAMP":
                    got += out
                    continue
                if _edge(out, d).any():
                    y, x = (int(v) for v in np.argwhere(out > 0)[0])
                    what = "the rectangle" if (wx0, wy0, wx1, wy1) == (0, 0, w, h) else "its routes"
                    _fail("layout.csl", int(lines[y, x]), f"{where}: leaves {what} going {d} from core "
                                                          f"({x + wx0},{y + wy0})")
                moved = _shift(out, d)
                opp = OPP[d]
                nxt[opp] = nxt[opp] + moved if opp in nxt else moved
        waves = list((c, d) for d, c in nxt.items())
    else:
        _fail("layout.csl", head, f"{where}: routes loop (messages still travelling after {w + h + 2} hops)")
    want = local(ch["receivers"])
    if not np.array_equal(got, want):
        y, x = (int(v) for v in np.argwhere(got != want)[0])
        _fail("layout.csl", head, f"{where}: core ({x + wx0},{y + wy0}) gets {int(got[y, x])} message(s), expected "
                                  f"{int(want[y, x])}")


def _uses_meet(a: dict, b: dict) -> bool:
    """Two channels are active in one exchange instance: same exchange, and use boxes that intersect."""
    if a["exchange_index"] != b["exchange_index"]:
        return False
    for ba in a["uses"]:
        for bb in b["uses"]:
            if set(ba) == set(bb) and all(ba[v][0] < bb[v][1] and bb[v][0] < ba[v][1] for v in ba):
                return True
    return False


def _senders_of(ch: dict, table: _Table) -> dict:
    """core -> the sender whose message reaches its ramp, traced through the layout's table."""
    w, h = table.w, table.h
    col = ch["colour"]
    tx = table.tx[col]
    out = {}
    for s in _cells(ch["senders"]):
        stack, seen = [s], set()
        while stack:
            x, y = stack.pop()
            if (x, y) in seen or not (0 <= x < w and 0 <= y < h):
                continue
            seen.add((x, y))
            t = int(tx[y, x])
            if t & BIT["RAMP"]:
                out[(x, y)] = s
            for d, (dx, dy) in (("N", (0, -1)), ("S", (0, 1)), ("E", (1, 0)), ("W", (-1, 0))):
                if t & BIT[d]:
                    stack.append((x + dx, y + dy))
    return out


def _cells(b) -> list[tuple[int, int]]:
    x0, x1, xs, y0, y1, ys = b
    return [(x, y) for y in range(y0, y1, ys) for x in range(x0, x1, xs)]


def _check_shared_colours(plan: dict, table: _Table, layout: str) -> None:
    by_colour: dict[int, list] = {}
    for ch in plan["channels"]:
        by_colour.setdefault(ch["colour"], []).append(ch)
    for col, chans in by_colour.items():
        if len(chans) < 2:
            continue
        routers = [{cell for r in ch["routes"] for cell in _cells(r["box"])} for ch in chans]
        senders: dict[int, dict] = {}
        for i, a in enumerate(chans):
            for j in range(i + 1, len(chans)):
                b = chans[j]
                both = routers[i] & routers[j]
                if not both:
                    continue
                x, y = min(both, key=lambda c: (c[1], c[0]))
                if _uses_meet(a, b):
                    _fail("layout.csl", _head_line(layout, b), f"channels {a['id']} and {b['id']} share color_{col} "
                                                              f"and router ({x},{y}) in one exchange instance")
                for k, ch in ((i, a), (j, b)):
                    if k not in senders:
                        senders[k] = _senders_of(ch, table)
                for core in sorted(set(senders[i]) & set(senders[j])):
                    if senders[i][core] != senders[j][core]:
                        _fail("layout.csl", _head_line(layout, b),
                              f"core {core} receives color_{col} from {senders[i][core]} in channel {a['id']} but "
                              f"from {senders[j][core]} in channel {b['id']}: messages of different senders on one "
                              f"colour can overtake each other")


def _check_queues(plan: dict) -> None:
    queues = {"recv": {int(k): v for k, v in plan["queues"]["input"].items()},
              "send": {int(k): v for k, v in plan["queues"]["output"].items()}}
    chans = plan["channels"]
    role_box = {"recv": "receivers", "send": "senders"}
    cells: dict = {}

    def cores(c, r) -> set:
        if (c["id"], r) not in cells:
            cells[(c["id"], r)] = set(_cells(c[role_box[r]]))
        return cells[(c["id"], r)]
    for c in chans:
        for r in role_box:
            if c["colour"] not in queues[r]:
                _fail("plan.json", 0, f"channel {c['id']}: color_{c['colour']} has no "
                                      f"{'input' if r == 'recv' else 'output'} queue")
    if plan["arch"] == "wse3":
        for r, kind in (("recv", "input"), ("send", "output")):
            bound: dict = {}
            for c in chans:
                q = queues[r][c["colour"]]
                for x, y in _cells(c[role_box[r]]):
                    other = bound.setdefault((x, y, q), c["colour"])
                    if other != c["colour"]:
                        _fail("plan.json", 0, f"WSE-3 core ({x},{y}) binds {kind} queue {q} to color_{other} and "
                                              f"color_{c['colour']} (a queue stays bound to one colour)")
    for i, a in enumerate(chans):
        for b in chans[i:]:
            if not _uses_meet(a, b):
                continue
            for ra in role_box:
                for rb in role_box:
                    if (a["colour"], ra) == (b["colour"], rb):
                        continue
                    if queues[ra][a["colour"]] != queues[rb][b["colour"]]:
                        continue
                    both = cores(a, ra) & cores(b, rb)
                    if both:
                        x, y = min(both, key=lambda c: (c[1], c[0]))
                        _fail("plan.json", 0, f"core ({x},{y}) uses queue number {queues[ra][a['colour']]} for "
                                              f"color_{a['colour']} ({ra}, channel {a['id']}) and color_{b['colour']} "
                                              f"({rb}, channel {b['id']}) in one exchange instance")


def _head_line(layout: str, ch: dict) -> int:
    """The line of the comment that introduces the routes of ``ch`` (its colour's group)."""
    col = f"on color_{ch['colour']};"
    for i, ln in enumerate(layout.splitlines(), 1):
        if ln.strip().startswith("// ch") and col in ln and f"exchange {ch['exchange']}," in ln:
            return i
    return _line_of(layout, f"const color_{ch['colour']}:")


def validate(files: dict[str, str]) -> None:
    """Checks an emitted file set (see the module docstring); raises :class:`EmitError`."""
    for name in ("layout.csl", "pe_program.csl", "run.py", "plan.json"):
        if name not in files:
            raise EmitError(f"{name}: missing from the emitted file set")
    layout, pe, run = files["layout.csl"], files["pe_program.csl"], files["run.py"]
    try:
        plan = json.loads(files["plan.json"])
    except ValueError as exc:
        raise EmitError(f"plan.json: not JSON ({exc})") from None
    declared, table = _check_colours(layout, plan)
    for ch in plan["channels"]:
        _trace(ch, table, layout)
    _check_shared_colours(plan, table, layout)
    _check_queues(plan)
    _check_fabric_dsds(pe, plan, declared, table)
    _check_symbols(layout, pe, run)
    _check_memory(pe, plan)
    # names: no declaration repeats a name visible where it is made (CSL has no shadowing/redeclaration)
    for fname, text in (("pe_program.csl", pe), ("layout.csl", layout)):
        _check_scopes(fname, text)
    _check_parameters(layout, pe)
    _check_runtime(pe, run, plan)


def _check_colours(layout: str, plan: dict) -> tuple[dict[int, int], _Table]:
    """Colours: every declared ID routable and outside memcpy's, every route on a declared colour, no router
    over the colour budget. Returns the declared colours (colour -> line) and the layout's route table."""
    w, h = plan["mesh"]
    declared = {}
    for i, ln in enumerate(layout.splitlines(), 1):
        m = _COLOUR.search(ln)
        if m:
            name, cid = int(m.group(1)), int(m.group(2))
            if cid >= ROUTABLE or cid in RESERVED_IDS:
                _fail("layout.csl", i, f"colour color_{name} uses ID {cid}: not a routable colour outside memcpy's")
            declared[name] = i
    table = _Table(layout, w, h)
    for col, lines in table.line.items():
        if col not in declared:
            _fail("layout.csl", int(lines.max()), f"route on undeclared colour color_{col}")
    per_router = sum((lines > 0).astype(np.int32) for lines in table.line.values()) if table.line else None
    if per_router is not None and per_router.max() > plan["colour_budget"]:
        y, x = (int(v) for v in np.argwhere(per_router == per_router.max())[0])
        line = max(int(table.line[c][y, x]) for c in table.line)
        _fail("layout.csl", line, f"router ({x},{y}) holds {int(per_router[y, x])} colours, more than the budget "
                                  f"of {plan['colour_budget']}")
    return declared, table


def _check_fabric_dsds(pe: str, plan: dict, declared: dict[int, int], table: _Table) -> None:
    """The PE program's fabric DSDs and queue bindings: the queues plan.json records, on routed colours."""
    want = {"input": plan["queues"]["input"], "output": plan["queues"]["output"]}
    for i, ln in enumerate(pe.splitlines(), 1):
        m = re.search(r"const f(in|out)_c(\d+) = @get_dsd\(fab\w+_dsd, .*@get_(input|output)_queue\((\d+)\)", ln)
        if m and want[m.group(3)].get(m.group(2)) != int(m.group(4)):
            _fail("pe_program.csl", i, f"{m.group(3)} queue {m.group(4)} for color_{m.group(2)}; plan.json records "
                                       f"{want[m.group(3)].get(m.group(2))}")
        m = re.search(r"@initialize_queue\(@get_(input|output)_queue\((\d+)\), \.\{ \.color = color_(\d+) \}\)", ln)
        if m and want[m.group(1)].get(m.group(3)) != int(m.group(2)):
            _fail("pe_program.csl", i, f"{m.group(1)} queue {m.group(2)} bound to color_{m.group(3)}; plan.json "
                                       f"records {want[m.group(1)].get(m.group(3))}")
    routed = set(table.line)
    for i, ln in enumerate(pe.splitlines(), 1):
        for m in re.finditer(r"\.fabric_color = color_(\d+)", ln):
            c = int(m.group(1))
            if c not in declared or c not in routed:
                _fail("pe_program.csl", i, f"fabric DSD on colour color_{c}, which the layout does not route")


def _check_symbols(layout: str, pe: str, run: str) -> None:
    """Every symbol run.py uses is exported by the layout and the PE program."""
    exported_layout = set(re.findall(r'@export_name\("(\w+)"', layout))
    exported_pe = set(re.findall(r'@export_symbol\(\w+, "(\w+)"\)', pe)) | set(re.findall(r"@export_symbol\((\w+)\);", pe))
    for i, ln in enumerate(run.splitlines(), 1):
        for sym in re.findall(r"runner\.(?:get_id|launch)\('(\w+)'", ln):
            if sym not in exported_layout:
                _fail("run.py", i, f"symbol {sym!r} is not exported by layout.csl")
            if sym not in exported_pe:
                _fail("run.py", i, f"symbol {sym!r} is not exported by pe_program.csl")


def _check_memory(pe: str, plan: dict) -> None:
    """Memory: buffer slots as recorded (two for each double buffer), buffer sizes as plan.json records, and
    all of them within the PE's SRAM."""
    sizes = {b["name"]: b.get("alloc_bytes", b["bytes"]) for b in plan["buffers"]}
    for b in plan["buffers"]:
        slots = b.get("slots", 1)
        if slots not in (1, 2) or b.get("alloc_bytes", b["bytes"]) != slots * b["bytes"]:
            _fail("plan.json", 0, f"buffer {b['name']}: {slots} slot(s) of {b['bytes']} B do not make its "
                                  f"{b.get('alloc_bytes')} B")
    double = plan.get("double_buffering", {})
    want_two = set(double.get("double_buffers", ())) if double.get("emitted") else set()
    for b in plan["buffers"]:
        if b["name"] in want_two and b.get("slots", 1) != 2:
            _fail("plan.json", 0, f"buffer {b['name']} is a double buffer of an emitted double-buffered "
                                  f"program but has {b.get('slots', 1)} slot(s)")
    total = 0
    for i, ln in enumerate(pe.splitlines(), 1):
        m = _BUFFER.match(ln)
        if not m:
            continue
        name, n, ty = m.group(1), int(m.group(2)), m.group(3)
        nbytes = n * SIZE[ty]
        if name in sizes and sizes[name] != nbytes:
            _fail("pe_program.csl", i, f"buffer {name} has {nbytes} B, plan.json records {sizes[name]} B")
        total += nbytes
        if total > plan["sram_bytes"]:
            _fail("pe_program.csl", i, f"buffers reach {total} B at {name}: more than the {plan['sram_bytes']} B of "
                                       f"SRAM per PE")


def _check_parameters(layout: str, pe: str) -> None:
    """Parameters: the layout's ``@set_tile_code`` gives exactly the PE program's params."""
    pe_params = {m.group(1): i for i, ln in enumerate(pe.splitlines(), 1)
                 for m in [re.match(r"param (\w+):", ln)] if m}
    start = _line_of(layout, "@set_tile_code(")
    if not start:
        _fail("layout.csl", 0, "no @set_tile_code")
    given = {}
    for i, ln in enumerate(layout.splitlines()[start:], start + 1):
        if ln.strip().startswith("});"):
            break
        m = re.match(r"\s*\.(\w+) = ", ln)
        if m:
            given[m.group(1)] = i
    for p, i in pe_params.items():
        if p not in given:
            _fail("pe_program.csl", i, f"param {p} gets no value in layout.csl's @set_tile_code")
    for p, i in given.items():
        if p not in pe_params:
            _fail("layout.csl", i, f"@set_tile_code passes {p}, which pe_program.csl does not declare")


def _check_runtime(pe: str, run: str, plan: dict) -> None:
    """Runtime parameters: held in ``rparams``, read through the recorded index, written by run.py."""
    rps = plan.get("runtime_parameters", [])
    index = {r["name"]: r["rparams_index"] for r in rps}
    n = len(rps)
    decl = re.search(r"^var rparams: \[(\d+)\]i32 = ", pe, re.M)
    if not n:
        if decl is not None or "sym_rparams" in run:
            _fail("pe_program.csl" if decl is not None else "run.py", _line_of(pe, "var rparams") if decl is not None
                  else _line_of(run, "sym_rparams"), "rparams without runtime parameters in plan.json")
        return
    if decl is None or int(decl.group(1)) != n:
        _fail("pe_program.csl", _line_of(pe, "var rparams"), f"rparams must be declared [{n}]i32 for the runtime "
              f"parameters {sorted(index)}")
    fn = None
    declared: set[str] = set()
    for i, ln in enumerate(pe.splitlines(), 1):
        m = re.match(r"fn (\w+)\(", ln)
        if m:
            fn, declared = m.group(1), set()
            continue
        m = re.match(r"\s+const rp_(\w+): i32 = rparams\[(\d+)\];", ln)
        if m:
            if index.get(m.group(1)) != int(m.group(2)):
                _fail("pe_program.csl", i, f"rp_{m.group(1)} read from rparams[{m.group(2)}]; plan.json records "
                      f"{'index ' + str(index[m.group(1)]) if m.group(1) in index else 'no such runtime parameter'}")
            declared.add(m.group(1))
            continue
        for name in re.findall(r"\brp_(\w+)\b", ln.split("//", 1)[0]):
            if name not in declared:
                _fail("pe_program.csl", i, f"rp_{name} is read in {fn or 'the file'} without being declared "
                      f"from rparams there")
    m = re.search(r"^RUNTIME = (\{.*\})$", run, re.M)
    want = {r["name"]: (r["lo"], r["hi"]) for r in rps}
    if m is None or ast.literal_eval(m.group(1)) != want or list(ast.literal_eval(m.group(1))) != list(want):
        _fail("run.py", _line_of(run, "RUNTIME"), f"RUNTIME must declare the runtime parameters {want} in order")
    m = re.search(r"runner\.memcpy_h2d\(sym_rparams, .*?, \d+, \d+, \d+, \d+, (\d+), streaming=False", run)
    if m is None or int(m.group(1)) != n:
        _fail("run.py", _line_of(run, "sym_rparams"), f"run.py must write {n} value(s) per PE to rparams")


def _check_scopes(fname: str, text: str) -> None:
    scopes: list[dict[str, int]] = [{}]
    for i, ln in enumerate(text.splitlines(), 1):
        code = ln.split("//", 1)[0]
        m = re.match(r"\s*(?:param|var|const|fn|task) (\w+)\b", code)
        capture = re.match(r"\s*for \(.*\) \|(\w+)\| \{", code)
        for name in ([m.group(1)] if m else []) + ([capture.group(1)] if capture else []):
            for sc in scopes:
                if name in sc:
                    _fail(fname, i, f"{name} is declared again (first at line {sc[name]}); CSL does not allow it")
        if m:
            scopes[-1][m.group(1)] = i
        for k, ch in enumerate(code):
            if ch == "{":
                scopes.append({})
                if capture and k == code.index("{", code.index("|")):
                    scopes[-1][capture.group(1)] = i      # the capture lives in the loop body
            elif ch == "}" and len(scopes) > 1:
                scopes.pop()


def validate_dir(path) -> None:
    """:func:`validate` on the files of an emitted directory."""
    p = Path(path)
    files = {}
    for name in ("layout.csl", "pe_program.csl", "run.py", "plan.json"):
        try:
            files[name] = (p / name).read_text(encoding="utf-8")
        except OSError as exc:
            raise EmitError(f"{p / name}: cannot read ({exc.strerror})") from None
    validate(files)


def main(argv=None) -> int:
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mica.emit_csl.validate DIR", file=sys.stderr)
        return 2
    try:
        validate_dir(args[0])
    except EmitError as exc:
        print(f"EmitError: {exc}", file=sys.stderr)
        return 1
    print(f"{args[0]}: routes, colours, symbols, SRAM and class parameters check out")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
