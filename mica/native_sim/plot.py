"""Pictures and traces of an emulator run (``res.plot``, ``res.trace``, :func:`plot_files`).

:func:`plot_result` writes PNG heatmaps with matplotlib (its Agg canvas, no pyplot and no change to the
caller's backend): per-core ``compute``, ``comm`` and ``idle`` cycles, per-link ``traffic`` (bytes sent on
each out-link, a panel per direction), ``sram`` (arena bytes in use per core) and ``placement`` (which
operator's kernels run on each core). Every picture draws its arrays whole with ``imshow``, one cell of
whole pixels per core (at least one pixel, so a 750 x 994 mesh is a picture of 750 x 994 pixels per
panel), never a patch per core. Each PNG carries a ``mica:panels`` text chunk: per panel its title, the
pixel box of the mesh in the image (left, top, right, bottom), the mesh shape, the colour map and its
range, so that a reader can find any core's cell.

:func:`write_trace` writes the per-core events the emulator recorded (mica_rt.h "Trace") as Chrome
trace-event JSON, which https://ui.perfetto.dev and chrome://tracing open: one process per mesh row, one
thread per core, one complete ("X") event per kernel call (named by its MeshIR kernel) or exchange wait
(named by its MeshIR exchange), at the modelled clock of the core.

:func:`picture_data` gives the arrays each picture draws, :func:`trace_json` the trace as a dict.
matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..meshir.ir import Compute, Exchange, MeshProgram, RegionTensor
from .runtime import EV_PREFETCH

#: The pictures ``res.plot`` draws by default, in order.
PICTURES = ("compute", "idle", "traffic", "sram", "placement")
#: Every picture it can draw.
ALL_PICTURES = ("compute", "comm", "idle", "traffic", "sram", "placement")

LINKS = ("N", "E", "S", "W")
_LINK_WORDS = {"N": "north", "E": "east", "S": "south", "W": "west"}

#: Largest side, in pixels, of the mesh in a one-panel picture and in each panel of the traffic picture
#: (cells shrink to fit, never below one pixel per core).
PANEL_PX, SMALL_PANEL_PX = 720, 420
#: Largest cell, in pixels, of one core.
MAX_CELL_PX = 48

#: Colours of the placement picture: cores outside the program's region, cores that only hold data.
UNUSED_RGB, DATA_ONLY_RGB = (0.92, 0.92, 0.92), (0.72, 0.72, 0.72)


@dataclass(frozen=True)
class Panel:
    """One heatmap of a picture: ``data[y, x]`` drawn with ``cmap`` over ``[vmin, vmax]``; a ``labels``
    panel draws integer categories with the colours ``colours[label]`` and names ``names[label]``."""

    title: str
    data: np.ndarray
    unit: str = ""
    cmap: str = "viridis"
    vmin: float = 0.0
    vmax: float = 1.0
    names: tuple[str, ...] = ()
    colours: tuple[tuple[float, float, float], ...] = field(default=())

    @property
    def labels(self) -> bool:
        return bool(self.names)


# ---------------------------------------------------------------------------------------------------
# What the pictures draw
# ---------------------------------------------------------------------------------------------------

def _need_program(res, what: str) -> MeshProgram:
    mp = getattr(res, "program", None)
    if mp is None:
        raise InputError(f"the {what} picture needs the MeshIR of the run; this RunResult carries none "
                         f"(run a compiled program: prog.run(inputs))")
    return mp


def _sizes(d, lo: int, hi: int) -> np.ndarray:
    """Elements of box dimension ``d`` (a :class:`mica.meshir.ir.BoxDim`) on the cores whose coordinate
    along its axis is ``lo .. hi-1`` (:meth:`BoxDim.size`, vectorised)."""
    c = np.arange(lo, hi, dtype=np.int64)
    if d.fixed is not None:
        return np.full(c.shape, d.fixed, dtype=np.int64)
    first = d.tile * (c - d.origin) + d.offset
    return np.clip(d.extent - first, 0, d.tile)


def _held(t: RegionTensor) -> np.ndarray:
    """``[y, x]`` over ``t.region``: whether the core holds a non-empty box of ``t`` (a box along the step
    ``t`` or whole counts at its allocation)."""
    r = t.region
    along_x = np.ones(r.x1 - r.x0, dtype=bool)
    along_y = np.ones(r.y1 - r.y0, dtype=bool)
    for d in t.box:
        if d.coord == "x":
            along_x &= _sizes(d, r.x0, r.x1) > 0
        elif d.coord == "y":
            along_y &= _sizes(d, r.y0, r.y1) > 0
    return along_y[:, None] & along_x[None, :]


def sram_in_use(mp: MeshProgram) -> np.ndarray:
    """``[y, x]`` arena bytes each core uses: the end (offset + bytes allocated, both slots of a double
    buffer) of the highest buffer of ``mp`` that holds data on the core; 0 on cores that hold none. Buffers
    of operators that run one after another may share arena bytes, so this is the arena a core needs, not
    the sum of its buffers. The emulator reserves ``mp.arena_bytes`` on every core of ``mp.region``
    (``stats.sram_peak``); no core uses more."""
    w, h = mp.mesh
    out = np.zeros((h, w), dtype=np.int64)
    for t in mp.tensors:
        r = t.region
        if r.cores == 0:
            continue
        top = np.where(_held(t), t.offset + t.alloc_bytes, 0)
        view = out[r.y0:r.y1, r.x0:r.x1]
        np.maximum(view, top, out=view)
    return out


def operator_of(kernel: str) -> str:
    """The operator a kernel belongs to: the ``p<k>`` prefix the phases of a program of several operators
    give their kernels (:mod:`mica.lower.phases`), else "" (a program of one operator)."""
    m = re.match(r"(p\d+)_", kernel)
    return m.group(1) if m else ""


def placement(mp: MeshProgram) -> tuple[np.ndarray, tuple[str, ...]]:
    """(``labels[y, x]``, ``names``): which operators' kernels run on each core, as a category per distinct
    set of operators. A kernel runs on the cores of its classes' regions (the C functions specialised per
    region, which the COMPUTE ops call); label 0 is a core outside the program's region, 1 a core of the
    region that runs no kernel (it only holds data, relays or idles), 2 and up a set of operators, named by
    the operators (``p0 + p1`` for a core both use, one after another) and their statements."""
    w, h = mp.mesh
    ops: dict[str, list] = {}
    for k in mp.kernels:
        ops.setdefault(operator_of(k.name), []).append(k)
    order = sorted(ops, key=lambda o: (len(o), o))
    masks = np.zeros((len(order), h, w), dtype=bool)
    for i, o in enumerate(order):
        for k in ops[o]:
            for c in k.classes:
                r = c.region
                masks[i, r.y0:r.y1, r.x0:r.x1] = True
    region = np.zeros((h, w), dtype=bool)
    region[mp.region.y0:mp.region.y1, mp.region.x0:mp.region.x1] = True
    labels = np.where(region, 1, 0).astype(np.int32)
    names = ["not in the program's region", "holds data only (runs no kernel)"]
    if order:
        flat = masks.reshape(len(order), -1)
        used = flat.any(axis=0)
        if used.any():
            keys, inverse = np.unique(np.packbits(flat[:, used], axis=0), axis=1, return_inverse=True)
            bits = np.unpackbits(keys, axis=0, count=len(order)).astype(bool)
            # categories in the order of their operators: single operators first, p0 before p1
            rank = sorted(range(keys.shape[1]), key=lambda j: (int(bits[:, j].sum()), list(~bits[:, j])))
            new = np.empty(len(rank), dtype=np.int32)
            new[rank] = np.arange(len(rank), dtype=np.int32)
            labels.reshape(-1)[used] = 2 + new[inverse.reshape(-1)]
            for j in rank:
                members = [order[i] for i in range(len(order)) if bits[i, j]]
                statements = sorted({s for o in members for k in ops[o] for s in _statements(k)})
                who = " + ".join(members) if members != [""] else mp.name
                names.append(f"{who}: {', '.join(statements)}" if statements else who)
    return labels, tuple(names)


def _statements(kernel) -> list[str]:
    return [k.statement for k in kernel.statements if k.statement]


def _categorical(n: int) -> tuple[tuple[float, float, float], ...]:
    """``n`` colours for placement labels: the two fixed greys, then tab10 / tab20 (cycled)."""
    from matplotlib import colormaps
    cmap = colormaps["tab10" if n <= 12 else "tab20"]
    return (UNUSED_RGB, DATA_ONLY_RGB) + tuple(tuple(float(v) for v in cmap(i % cmap.N)[:3]) for i in range(n - 2))


def _hot(a: np.ndarray) -> str:
    """Where ``a`` is largest, as text."""
    if a.size == 0:
        return ""
    y, x = np.unravel_index(int(np.argmax(a)), a.shape)
    return f"max {a[y, x]:,.0f} at ({x}, {y})" if a[y, x] > 0 else "all zero"


def picture_data(res, what: str) -> list[Panel]:
    """The panels picture ``what`` (one of :data:`ALL_PICTURES`) draws for run ``res``: ``compute`` /
    ``comm`` / ``idle`` the cycles of ``stats.core_compute`` / ``core_comm`` / ``core_idle``; ``traffic``
    a panel per direction of ``stats.link_bytes`` (bytes each core sent on that out-link), all on one
    colour range; ``sram`` :func:`sram_in_use`; ``placement`` :func:`placement` (labels)."""
    st = res.stats
    w, h = st.mesh
    where = f"{_need_name(res)} on {w}x{h}"
    if what in ("compute", "comm", "idle"):
        a = np.asarray(getattr(st.raw, f"core_{what}"), dtype=np.float64)
        word = {"compute": "compute", "comm": "communication", "idle": "idle"}[what]
        return [Panel(f"{word} cycles per core, {where}\n{_hot(a)}; {a.sum():,.0f} in all", a, "cycles",
                      "viridis", 0.0, float(a.max()) if a.size and a.max() > 0 else 1.0)]
    if what == "traffic":
        lb = np.asarray(st.raw.link_bytes, dtype=np.float64)
        top = float(lb.max()) if lb.size and lb.max() > 0 else 1.0
        return [Panel(f"bytes sent {_LINK_WORDS[d]} per core, {where}\n{_hot(lb[:, :, i])}; "
                      f"{lb[:, :, i].sum():,.0f} in all",
                      lb[:, :, i], "bytes", "inferno", 0.0, top) for i, d in enumerate(LINKS)]
    if what == "sram":
        mp = _need_program(res, "sram")
        a = sram_in_use(mp)
        sram = st.target.sram_bytes if st.target is not None else None
        of = f" of {sram:,} B SRAM" if sram else ""
        return [Panel(f"arena bytes in use per core, {where}\n{_hot(a)}\narena {mp.arena_bytes:,} B reserved "
                      f"per core{of}", a, "bytes", "viridis", 0.0, float(max(int(a.max()), 1)))]
    if what == "placement":
        mp = _need_program(res, "placement")
        labels, names = placement(mp)
        return [Panel(f"operators per core, {where}", labels, "", "", 0.0, float(len(names) - 1), names,
                      _categorical(len(names)))]
    raise InputError(f"unknown picture {what!r}; pictures: {', '.join(ALL_PICTURES)}")


def _need_name(res) -> str:
    mp = getattr(res, "program", None)
    return mp.name if mp is not None else "program"


# ---------------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------------

_LEFT, _BOTTOM, _GAP = 56, 36, 54                  # margins in pixels
_LINE = 14                                          # a line of a title
_CBAR = 92                                          # colour bar and its labels
_LEGEND_ROW, _LEGEND_MAX = 18, 24                   # placement legend: row height, rows


def _cell(w: int, h: int, panel_px: int) -> int:
    return max(1, min(MAX_CELL_PX, panel_px // max(w, h)))


def _draw(panels: list[Panel], path: Path, name: str, dpi: int) -> Path:
    """Draws ``panels`` (one, or four in a 2 x 2 grid) into the PNG ``path``: each mesh at whole pixels
    per core, north (y = 0) at the top, with a colour bar (heatmaps) or a legend (labels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    h, w = panels[0].data.shape
    cols = 2 if len(panels) == 4 else 1
    rows = -(-len(panels) // cols)
    cell = _cell(w, h, SMALL_PANEL_PX if len(panels) > 1 else PANEL_PX)
    pw, ph = w * cell, h * cell
    labels = panels[0].labels
    shown = [k for k in range(len(panels[0].names)) if (panels[0].data == k).any()] if labels else []
    legend_rows = min(len(shown), _LEGEND_MAX)
    right = (max(260, 40 + 6 * max(len(panels[0].names[k]) for k in shown[:_LEGEND_MAX])) if shown else _CBAR)
    lines = max(p.title.count("\n") + 1 for p in panels)
    head = 22 + lines * _LINE                       # the title above each panel
    chars = max(len(line) for p in panels for line in p.title.splitlines())
    pw_title = int(chars * (5.6 if len(panels) > 1 else 6.2))
    col_w = max(pw, pw_title)
    fig_w = _LEFT + cols * col_w + (cols - 1) * _GAP + right
    fig_h = max(head + rows * ph + (rows - 1) * (head + 30) + _BOTTOM, head + legend_rows * _LEGEND_ROW + _BOTTOM)
    fig = Figure(figsize=(fig_w / dpi, fig_h / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    meta, image = [], None
    for i, p in enumerate(panels):
        r, c = divmod(i, cols)
        left = _LEFT + c * (col_w + _GAP)
        top = head + r * (ph + head + 30)
        ax = fig.add_axes((left / fig_w, 1 - (top + ph) / fig_h, pw / fig_w, ph / fig_h))
        if p.labels:
            cmap, vmin, vmax = ListedColormap(list(p.colours)), -0.5, len(p.names) - 0.5
        else:
            cmap, vmin, vmax = p.cmap, p.vmin, p.vmax
        image = ax.imshow(p.data, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto",
                          extent=(-0.5, w - 0.5, h - 0.5, -0.5), resample=False)
        ax.set_frame_on(False)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(w, 8)))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=min(h, 8)))
        ax.tick_params(labelsize=7, length=2)
        ax.set_xlabel("x", fontsize=7, labelpad=1)
        ax.set_ylabel("y", fontsize=7, labelpad=1)
        ax.set_title(p.title, fontsize=8 if len(panels) > 1 else 9, loc="left")
        meta.append({"title": p.title, "box": [left, top, left + pw, top + ph], "shape": [h, w],
                     "cmap": "labels" if p.labels else p.cmap, "vmin": p.vmin, "vmax": p.vmax,
                     **({"names": list(p.names)} if p.labels else {})})
    edge = _LEFT + (cols - 1) * (col_w + _GAP) + pw
    if labels:
        p = panels[0]
        handles = [Patch(facecolor=p.colours[k], edgecolor="0.5", label=p.names[k]) for k in shown]
        if len(handles) > _LEGEND_MAX:
            rest = len(handles) - (_LEGEND_MAX - 1)
            handles = handles[:_LEGEND_MAX - 1] + [Patch(facecolor="white", edgecolor="white",
                                                         label=f"... {rest} more sets of operators")]
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=((edge + 12) / fig_w, 1 - head / fig_h),
                   fontsize=7, frameon=False, handlelength=1.2, borderaxespad=0)
    else:
        bar_h = rows * ph + (rows - 1) * (head + 30)
        cax = fig.add_axes(((edge + 14) / fig_w, 1 - (head + bar_h) / fig_h, 12 / fig_w, bar_h / fig_h))
        bar = fig.colorbar(image, cax=cax)
        bar.ax.tick_params(labelsize=7)
        bar.set_label(panels[0].unit, fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Software": "mica", "mica:picture": name,
                                         "mica:panels": json.dumps(meta)})
    return path


def _targets(path, what: tuple[str, ...]) -> list[Path]:
    p = Path(path)
    if p.suffix.lower() == ".png":
        if len(what) == 1:
            return [p]
        return [p.with_name(f"{p.stem}_{w}.png") for w in what]
    return [p / f"{w}.png" for w in what]


def plot_result(res, path, what=PICTURES, *, dpi: int = 100) -> list[Path]:
    """Writes the pictures ``what`` (names of :data:`ALL_PICTURES`; a single name also works) of run
    ``res`` (a :class:`mica.native_sim.execute.RunResult`) as PNG files and returns their paths, in the
    order of ``what``. ``path`` is a directory (created if needed; one ``<name>.png`` per picture) or a
    ``.png`` file (with several pictures, ``<stem>_<name>.png`` beside it). What each picture draws:
    :func:`picture_data`."""
    if isinstance(what, str):
        what = (what,)
    what = tuple(what)
    bad = [w for w in what if w not in ALL_PICTURES]
    if bad or not what:
        raise InputError(f"unknown picture(s) {bad or what!r}; pictures: {', '.join(ALL_PICTURES)}")
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi < 10:
        raise InputError(f"dpi must be an integer of at least 10, got {dpi!r}")
    panels = [picture_data(res, w) for w in what]          # every check before anything is written
    return [_draw(p, out, w, dpi) for p, out, w in zip(panels, _targets(path, what), what)]


# ---------------------------------------------------------------------------------------------------
# Trace
# ---------------------------------------------------------------------------------------------------

def _need_trace(res):
    rec = getattr(res, "trace_record", None)
    if rec is None:
        raise InputError("this run recorded no trace: run it with trace=True, or trace=(x0, x1, y0, y1) for "
                         "a rectangle of cores")
    return rec


def _selected(rec, cores, mesh: tuple[int, int]) -> np.ndarray:
    """Which traced cores (row-major over ``rec.rect``) ``cores`` selects."""
    x0, x1, y0, y1 = rec.rect
    tw, th = x1 - x0, y1 - y0
    if cores is None:
        return np.ones(tw * th, dtype=bool)
    pts = list(cores) if not isinstance(cores, (str, bytes)) else None
    if pts is not None and len(pts) == 4 and all(isinstance(v, (int, np.integer)) for v in pts):
        a0, a1, b0, b1 = (int(v) for v in pts)
        xs = np.arange(x0, x1)
        ys = np.arange(y0, y1)
        return ((ys[:, None] >= b0) & (ys[:, None] < b1) & (xs[None, :] >= a0) & (xs[None, :] < a1)).reshape(-1)
    try:
        pairs = [(int(x), int(y)) for x, y in pts]
    except (TypeError, ValueError):
        raise InputError(f"cores must be a rectangle (x0, x1, y0, y1) or a list of (x, y), got {cores!r}") from None
    out = np.zeros(tw * th, dtype=bool)
    missing = [(x, y) for x, y in pairs if not (x0 <= x < x1 and y0 <= y < y1)]
    if missing:
        raise InputError(f"cores {missing[:5]} were not traced (the run traced x in [{x0}, {x1}), y in "
                         f"[{y0}, {y1}) of the {mesh[0]}x{mesh[1]} mesh)")
    for x, y in pairs:
        out[(y - y0) * tw + (x - x0)] = True
    return out


def _namer(res):
    """Name, category and arguments of an event, from its op id and kernel index (cached per pair)."""
    ops, kernels = tuple(getattr(res, "ops", ()) or ()), tuple(getattr(res, "kernel_names", ()) or ())
    mp = getattr(res, "program", None)
    kernel_of = {c.name: k.name for k in mp.kernels for c in k.classes} if mp is not None else {}
    cache: dict = {}

    def name(op: int, kernel: int):
        key = (op, kernel)
        if key not in cache:
            o = ops[op] if 0 <= op < len(ops) else None
            if kernel >= 0:
                fn = kernels[kernel] if kernel < len(kernels) else f"kernel {kernel}"
                label = kernel_of.get(fn, o.kernel if isinstance(o, Compute) else fn)
                cache[key] = (label, "compute", {"op": op, "kernel_function": fn})
            else:
                cat = "prefetch" if kernel == EV_PREFETCH else "exchange"
                if isinstance(o, Exchange):
                    label = f"exchange {o.name}"
                    args = {"op": op, "comms": ", ".join(c.name for c in o.ops)}
                else:
                    label, args = f"exchange (op {op})", {"op": op}
                if kernel == EV_PREFETCH:
                    label += " (prefetched)"
                cache[key] = (label, cat, args)
        return cache[key]
    return name


def trace_json(res, cores=None, *, time: str = "us") -> dict:
    """The Chrome trace-event object :func:`write_trace` writes, as a dict."""
    head = _trace_head(res, time)
    return {"traceEvents": list(_trace_events(res, cores, time)), **head}


def _scale(res, time: str) -> float:
    """Nanoseconds per modelled cycle on the trace's time axis."""
    if time == "cycles":
        return 1000.0
    if time != "us":
        raise InputError(f"time must be 'us' (the target's clock) or 'cycles', got {time!r}")
    tgt = res.stats.target
    if tgt is None:
        raise InputError("time='us' needs the run's target clock; this run has none (use time='cycles')")
    return 1.0 / tgt.clock_ghz


def _trace_head(res, time: str) -> dict:
    rec = _need_trace(res)
    st = res.stats
    tgt = st.target
    return {"displayTimeUnit": "ns",
            "otherData": {"producer": "mica emulator", "program": _need_name(res),
                          "mesh": f"{st.mesh[0]}x{st.mesh[1]}", "target": tgt.name if tgt is not None else "",
                          "clock_ghz": tgt.clock_ghz if tgt is not None else None,
                          "time": "microseconds at the target's clock" if time == "us"
                          else "modelled cycles (one cycle drawn as one microsecond)",
                          "modelled_cycles": float(st.cycles), "traced_cores": list(rec.rect),
                          "dropped_events": int(rec.dropped.sum())}}


def _trace_events(res, cores, time: str):
    """The trace's event objects, a core at a time (its metadata, then its events in order); the
    arguments are checked at once, the events made as they are read."""
    rec = _need_trace(res)
    scale = _scale(res, time)
    sel = _selected(rec, cores, res.stats.mesh)
    return _events_of(res, rec, sel, scale)


def _events_of(res, rec, sel: np.ndarray, scale: float):
    w = res.stats.mesh[0]
    x0, x1, y0, y1 = rec.rect
    tw = x1 - x0
    offsets = np.concatenate(([0], np.cumsum(rec.counts)))
    name = _namer(res)
    named_rows = set()
    for i in np.flatnonzero(sel & (rec.counts > 0)):
        x, y = x0 + int(i) % tw, y0 + int(i) // tw
        pid, tid = y + 1, y * w + x + 1
        if y not in named_rows:
            named_rows.add(y)
            yield {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"mesh row y={y}"}}
            yield {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": y}}
        yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"core ({x}, {y})"}}
        yield {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": x}}
        t1 = 0
        for start, end, comm, op, kernel in rec.events[offsets[i]:offsets[i + 1]].tolist():
            label, cat, args = name(op, kernel)
            args = {**args, "start_cycle": start, "end_cycle": end, "cycles": end - start}
            if kernel < 0:
                args["comm_cycles"], args["idle_cycles"] = comm, end - start - comm
            # whole nanoseconds, rounded from the cycles, so that one event ends where the next starts
            t0, t1 = round(start * scale), round(end * scale)
            yield {"name": label, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": t0 / 1000,
                   "dur": (t1 - t0) / 1000, "args": args}
        if rec.dropped[i]:
            yield {"name": f"{int(rec.dropped[i]):,} later events dropped (the trace_events cap)", "ph": "i",
                   "s": "t", "pid": pid, "tid": tid, "ts": t1 / 1000}


def write_trace(res, path, cores=None, *, time: str = "us") -> Path:
    """Writes the per-core timelines run ``res`` recorded to ``path`` as Chrome trace-event JSON
    (``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``) and returns the path.

    Each traced core that recorded anything is a thread (``tid`` = y * width + x + 1, named
    ``core (x, y)``) of the process of its mesh row (``pid`` = y + 1, named ``mesh row y=...``). Each
    recorded event is a complete event (``"ph": "X"``): a kernel call named by its MeshIR kernel
    (category ``compute``), or the wait an exchange added to the core's clock, named ``exchange <name>``
    (category ``exchange`` or ``prefetch``; its args split it into ``comm_cycles`` and ``idle_cycles``).
    ``ts`` and ``dur`` (microseconds, as the format has it) are the modelled cycles at the target's clock
    (``time="us"``) or the cycles themselves, one drawn as a microsecond (``time="cycles"``), rounded to
    whole nanoseconds so that on each core an event ends exactly where the next begins (Perfetto rounds
    to nanoseconds too); ``args`` hold the exact cycles (``start_cycle``, ``end_cycle``, ``cycles``) and
    the op id. A core whose events hit the cap ends with an instant event saying how
    many were dropped. ``cores`` selects a rectangle ``(x0, x1, y0, y1)`` or a list of ``(x, y)`` of the
    traced cores (default: all of them): the file holds about 250 bytes per event, so pick a rectangle of
    a large mesh. Raises :class:`mica.errors.InputError` when the run recorded no trace."""
    head = _trace_head(res, time)
    events = _trace_events(res, cores, time)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w") as f:
        f.write('{"traceEvents": [')
        sep = "\n"
        for ev in events:
            f.write(sep + json.dumps(ev, separators=(",", ":")))
            sep = ",\n"
        f.write("\n],\n" + json.dumps(head)[1:] + "\n")
    return p


def plot_files(res, out_dir) -> list[Path]:
    """Writes every picture of :data:`PICTURES` of run ``res`` into ``out_dir`` (``<name>.png``) and, when
    the run recorded a trace (``prog.run(inputs, trace=True)`` or a rectangle of cores), ``trace.json``
    (:func:`write_trace`, every traced core); returns the paths written. For ``mica plot``."""
    out = Path(out_dir)
    paths = plot_result(res, out, PICTURES)
    if getattr(res, "trace_record", None) is not None:
        paths.append(write_trace(res, out / "trace.json"))
    return paths
