"""Structural validator of an emitted CSL file set (usable on a directory a user edited).

Reads the files back (not the in-memory plan) and checks:

* routes: every channel of ``plan.json``, traced hop by hop through the ``@set_color_config`` lines of
  ``layout.csl`` from each of its senders, is routed at every hop and reaches exactly its receivers, once
  each; no router holds two different settings for one colour; no router holds more colours than the
  budget; every colour is a routable ID outside memcpy's reserved ones;
* colours used by the PE program's fabric DSDs are declared and routed in the layout;
* symbols: every symbol ``run.py`` touches (``get_id``, ``launch``) is exported by the layout and the PE
  program;
* memory: the PE program's buffers (``var X: [n]T = @zeros(...)``) have the sizes ``plan.json`` records and
  fit the target's SRAM together;
* parameters: every ``param`` of the PE program gets a value in the layout's ``@set_tile_code`` and the
  layout passes nothing the PE program does not declare.

Every failure is an :class:`EmitError` naming the file and line.

Public API: :func:`validate` (file name -> text), :func:`validate_dir`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import EmitError
from .plan import RESERVED_IDS, ROUTABLE

_ROUTE = re.compile(r"for \(@range\(i16, (-?\d+), (-?\d+), (\d+)\)\) \|x\| \{ for \(@range\(i16, (-?\d+), (-?\d+), "
                    r"(\d+)\)\) \|y\| \{ @set_color_config\(x, y, c(\d+), \.\{ \.routes = \.\{ \.rx = \.\{ ([A-Z, ]*) \}, "
                    r"\.tx = \.\{ ([A-Z, ]*) \} \} \}\); \} \}")
_COLOUR = re.compile(r"const c(\d+): color = @get_color\((\d+)\);")
_BUFFER = re.compile(r"^var (\w+): \[(\d+)\](f32|f16) = @zeros")
_SHORT = {"RAMP": "RAMP", "NORTH": "N", "EAST": "E", "SOUTH": "S", "WEST": "W"}
STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}
OPP = {"N": "S", "S": "N", "E": "W", "W": "E"}
SIZE = {"f32": 4, "f16": 2}


def _fail(file: str, line: int, msg: str):
    raise EmitError(f"{file}:{line}: {msg}", location=(file, line, 0))


def _line_of(text: str, needle: str) -> int:
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln:
            return i
    return 0


def _routes(layout: str, w: int, h: int) -> dict:
    """(x, y, colour) -> (rx set, tx set, line) from the layout's route lines."""
    table: dict = {}
    for i, ln in enumerate(layout.splitlines(), 1):
        m = _ROUTE.search(ln)
        if not m:
            if "@set_color_config" in ln:
                _fail("layout.csl", i, "a @set_color_config line not in the form MICA emits")
            continue
        x0, x1, xs, y0, y1, ys, col = (int(v) for v in m.groups()[:7])
        rx = frozenset(_SHORT[d.strip()] for d in m.group(8).split(",") if d.strip())
        tx = frozenset(_SHORT[d.strip()] for d in m.group(9).split(",") if d.strip())
        for x in range(x0, x1, xs):
            for y in range(y0, y1, ys):
                if not (0 <= x < w and 0 <= y < h):
                    _fail("layout.csl", i, f"route for core ({x},{y}) outside the {w}x{h} rectangle")
                old = table.get((x, y, col))
                if old and (old[0], old[1]) != (rx, tx):
                    _fail("layout.csl", i, f"router ({x},{y}) gets two settings for colour c{col} (the other at line "
                                           f"{old[2]})")
                table[(x, y, col)] = (rx, tx, i)
    return table


def _cells(b):
    x0, x1, xs, y0, y1, ys = b
    return [(x, y) for y in range(y0, y1, ys) for x in range(x0, x1, xs)]


def _trace(ch: dict, table: dict, layout: str, w: int, h: int) -> None:
    col = ch["colour"]
    where = f"channel {ch['id']} ({ch['exchange']}, {ch['pattern']}) on c{col}"
    head = _line_of(layout, f"// ch{ch['id']}:")
    got: dict = {}
    for src in _cells(ch["senders"]):
        stack = [(src, "RAMP", head, 0)]
        seen = set()
        while stack:
            (x, y), came, line, hops = stack.pop()
            if (x, y) in seen:
                _fail("layout.csl", line, f"{where}: routes loop back to core ({x},{y})")
            seen.add((x, y))
            entry = table.get((x, y, col))
            if entry is None or came not in entry[0]:
                _fail("layout.csl", line, f"{where}: no route at core ({x},{y}) for c{col} arriving from {came} "
                                          f"(sent by core {src})")
            rx, tx, here = entry
            for d in tx:
                if d == "RAMP":
                    got[(x, y)] = got.get((x, y), 0) + 1
                    continue
                nx, ny = x + STEP[d][0], y + STEP[d][1]
                if not (0 <= nx < w and 0 <= ny < h):
                    _fail("layout.csl", here, f"{where}: leaves the rectangle at core ({x},{y}) going {d}")
                stack.append(((nx, ny), OPP[d], here, hops + 1))
    want = set(_cells(ch["receivers"]))
    if set(got) != want or any(v != 1 for v in got.values()):
        _fail("layout.csl", head, f"{where}: delivers to {sorted(got)}, its receivers are {sorted(want)}")


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
    w, h = plan["mesh"]
    # colours
    declared = {}
    for i, ln in enumerate(layout.splitlines(), 1):
        m = _COLOUR.search(ln)
        if m:
            name, cid = int(m.group(1)), int(m.group(2))
            if cid >= ROUTABLE or cid in RESERVED_IDS:
                _fail("layout.csl", i, f"colour c{name} uses ID {cid}: not a routable colour outside memcpy's")
            declared[name] = i
    table = _routes(layout, w, h)
    for (x, y, col), (_, _, line) in table.items():
        if col not in declared:
            _fail("layout.csl", line, f"route on undeclared colour c{col}")
    per_router: dict = {}
    for (x, y, col) in table:
        per_router.setdefault((x, y), set()).add(col)
    for (x, y), cols in per_router.items():
        if len(cols) > plan["colour_budget"]:
            line = max(table[(x, y, c)][2] for c in cols)
            _fail("layout.csl", line, f"router ({x},{y}) holds {len(cols)} colours, more than the budget of "
                                      f"{plan['colour_budget']}")
    for ch in plan["channels"]:
        _trace(ch, table, layout, w, h)
    routed = {col for (_, _, col) in table}
    for i, ln in enumerate(pe.splitlines(), 1):
        for m in re.finditer(r"\.fabric_color = c(\d+)", ln):
            c = int(m.group(1))
            if c not in declared or c not in routed:
                _fail("pe_program.csl", i, f"fabric DSD on colour c{c}, which the layout does not route")
    # symbols
    exported_layout = set(re.findall(r'@export_name\("(\w+)"', layout))
    exported_pe = set(re.findall(r'@export_symbol\(\w+, "(\w+)"\)', pe)) | set(re.findall(r"@export_symbol\((\w+)\);", pe))
    for i, ln in enumerate(run.splitlines(), 1):
        for sym in re.findall(r"runner\.(?:get_id|launch)\('(\w+)'", ln):
            if sym not in exported_layout:
                _fail("run.py", i, f"symbol {sym!r} is not exported by layout.csl")
            if sym not in exported_pe:
                _fail("run.py", i, f"symbol {sym!r} is not exported by pe_program.csl")
    # memory
    sizes = {b["name"]: b["bytes"] for b in plan["buffers"]}
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
    # parameters
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
