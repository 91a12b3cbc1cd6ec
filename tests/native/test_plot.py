"""Pictures and traces of emulator runs (mica/native_sim/plot.py, mica_rt.h "Trace").

Compiled programs -- a matmul on 4x4 (double-buffered ring shifts), 3mm on 8x4 (three operators, two of
them side by side, the third on both rectangles) and a triangular solve that computes on one core of a 3x2
mesh -- run with their timelines traced. The tests open what ``res.plot`` and ``res.trace`` wrote: every
core's cell in each PNG has the colour of that core's figure in the stats (read back through the pixel box
each PNG records), and the trace's events tile each core's modelled clock exactly, add up to its compute,
communication and idle cycles and are named by the MeshIR's kernels and exchanges. Tracing changes no
output, clock or counter, and costs nothing while off.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.errors import InputError
from mica.meshir.ir import Compute, Exchange
from mica.native_sim import plot
from mica.native_sim.execute import RunResult, RunStats
from mica.native_sim.opcode import EAST, RAMP, WEST, Box, BoxDim, Exchange as OpExchange, Recv, Rect, Route, Send, encode
from mica.native_sim.runtime import NativeMesh
from mica.tiling.mapping import derive_schedule

matplotlib = pytest.importorskip("matplotlib")
from matplotlib import colormaps  # noqa: E402
from matplotlib.image import imread  # noqa: E402
from PIL import Image  # noqa: E402 - matplotlib depends on pillow

import samples  # noqa: E402

TRI = """void tri(double L[6][6], double b[6], double x[6]) {
  for (int i = 0; i < 6; i++) { x[i] = b[i];
    for (int j = 0; j < i; j++) x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i]; } }"""


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    dt = {"f32": np.float32, "f64": np.float64}
    out = {a: rng.standard_normal(prog.array(a).shape).astype(dt[prog.array(a).dtype]) for a in prog.inputs}
    if "L" in out:                      # a well-conditioned triangular solve
        out["L"] = out["L"] + 8 * np.eye(out["L"].shape[0])
    return out


def _compile(name):
    if name == "matmul":
        return mica.compile_affine(mica.ops.matmul(64, 64, 64, dtype="f32"), mesh=(4, 4))
    if name == "mm3":
        return mica.compile_affine(samples.mm3(12), mesh=(8, 4))
    tri = from_c(TRI)                   # on one core by hand: the search spreads it (aligned) since it can
    return mica.compile_affine(tri, mesh=(3, 2), schedule=derive_schedule(tri, (3, 2), assignment=[],
                                                                           family="one-core"))


@pytest.fixture(scope="module")
def runs():
    """name -> (compiled program, traced run, untraced run)."""
    out = {}
    for name in ("matmul", "mm3", "tri"):
        prog = _compile(name)
        ins = _inputs(prog.program)
        out[name] = (prog, prog.run(ins, trace=True), prog.run(ins))
    return out


NAMES = ("matmul", "mm3", "tri")


# ---------------------------------------------------------------------------------------------------
# Reading the PNGs back
# ---------------------------------------------------------------------------------------------------

def _panels(path):
    """(pixels [rows, cols, RGB] in 0..1, the panels the PNG records)."""
    with Image.open(path) as im:
        meta = json.loads(im.text["mica:panels"])
        assert im.text["mica:picture"] == path.stem.split("_")[-1]
    return imread(path)[:, :, :3], meta


def _cells(pixels, panel):
    """The colour at the centre of every core's cell: [y, x, RGB]."""
    left, top, right, bottom = panel["box"]
    h, w = panel["shape"]
    cy = (top + (np.arange(h) + 0.5) * (bottom - top) / h).astype(int)
    cx = (left + (np.arange(w) + 0.5) * (right - left) / w).astype(int)
    return pixels[cy[:, None], cx[None, :]]


def _expected(values, panel):
    """The colour a heatmap panel gives ``values``."""
    norm = (np.asarray(values, dtype=np.float64) - panel["vmin"]) / (panel["vmax"] - panel["vmin"])
    return np.asarray(colormaps[panel["cmap"]](np.clip(norm, 0, 1)))[..., :3]


def _assert_shows(pixels, panel, values):
    got = _cells(pixels, panel)
    assert got.shape[:2] == values.shape
    np.testing.assert_allclose(got, _expected(values, panel), atol=3 / 255)


# ---------------------------------------------------------------------------------------------------
# Pictures
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_every_core_cell_shows_its_stats(runs, name, tmp_path):
    prog, res, _ = runs[name]
    st = res.stats
    w, h = prog.mesh
    paths = res.plot(tmp_path, what=plot.ALL_PICTURES)
    assert [p.name for p in paths] == [f"{n}.png" for n in plot.ALL_PICTURES]
    for n, path in zip(plot.ALL_PICTURES, paths):
        pixels, panels = _panels(path)
        assert pixels.shape[0] >= h and pixels.shape[1] >= w
        assert len(panels) == (4 if n == "traffic" else 1) and all(p["shape"] == [h, w] for p in panels)
        for p in panels:                         # the mesh lies inside the picture, a whole cell per core
            left, top, right, bottom = p["box"]
            assert 0 <= left < right <= pixels.shape[1] and 0 <= top < bottom <= pixels.shape[0]
            assert (right - left) % w == 0 and (bottom - top) % h == 0
    for n, stat in (("compute", st.core_compute), ("comm", st.core_comm), ("idle", st.core_idle)):
        (panel,) = plot.picture_data(res, n)
        np.testing.assert_array_equal(panel.data, stat)
        pixels, (meta,) = _panels(tmp_path / f"{n}.png")
        assert meta["vmax"] == (stat.max() if stat.max() > 0 else 1.0)
        _assert_shows(pixels, meta, stat)
    pixels, metas = _panels(tmp_path / "traffic.png")
    assert len({m["vmax"] for m in metas}) == 1                 # one colour range for the four directions
    for i, (panel, meta) in enumerate(zip(plot.picture_data(res, "traffic"), metas)):
        np.testing.assert_array_equal(panel.data, st.link_bytes[:, :, i])
        assert "NESW"[i] == "NESW"[["north", "east", "south", "west"].index(meta["title"].split()[2])]
        _assert_shows(pixels, meta, st.link_bytes[:, :, i])
    pixels, (meta,) = _panels(tmp_path / "sram.png")
    _assert_shows(pixels, meta, plot.sram_in_use(prog.mesh_program))


def test_a_core_that_computes_nothing_is_zero_in_the_pictures(runs, tmp_path):
    """The triangular solve, given a one-core plan, computes on core (0, 0) only: every other cell is the colour of 0 compute
    cycles, of no SRAM in use, and of a core outside the program's region."""
    prog, res, _ = runs["tri"]
    comp = res.stats.core_compute
    assert comp[0, 0] > 0 and np.count_nonzero(comp) == 1
    compute, sram, where = res.plot(tmp_path / "tri.png", what=("compute", "sram", "placement"))
    assert [p.name for p in (compute, sram, where)] == ["tri_compute.png", "tri_sram.png", "tri_placement.png"]
    for path in (compute, sram):
        pixels, (meta,) = _panels(path)
        cells = _cells(pixels, meta)
        zero = _expected(0.0, meta)
        assert not np.allclose(cells[0, 0], zero, atol=3 / 255)
        np.testing.assert_allclose(cells.reshape(-1, 3)[1:], np.broadcast_to(zero, (5, 3)), atol=3 / 255)
    labels, names = plot.placement(prog.mesh_program)
    assert labels.tolist() == [[2, 0, 0], [0, 0, 0]] and names[2] == "tri: S0, S1, S2"
    pixels, (meta,) = _panels(where)
    cells = _cells(pixels, meta)
    assert meta["names"] == list(names)
    np.testing.assert_allclose(cells[labels == 0], np.broadcast_to(plot.UNUSED_RGB, (5, 3)), atol=3 / 255)
    assert not np.allclose(cells[0, 0], plot.UNUSED_RGB, atol=0.05)


def test_sram_in_use_is_the_top_of_the_highest_buffer_a_core_holds(runs):
    for name in NAMES:
        prog, res, _ = runs[name]
        mp = prog.mesh_program
        got = plot.sram_in_use(mp)
        w, h = mp.mesh
        want = np.zeros((h, w), dtype=np.int64)
        for t in mp.tensors:                     # one core at a time, through RegionTensor.bytes_at
            r = t.region
            for y in range(r.y0, r.y1):
                for x in range(r.x0, r.x1):
                    if t.bytes_at(x, y) > 0:
                        want[y, x] = max(want[y, x], t.offset + t.alloc_bytes)
        np.testing.assert_array_equal(got, want)
        assert (got <= res.stats.sram_peak).all() and got.max() > 0      # within the arena reserved
        outside = np.ones((h, w), dtype=bool)
        outside[mp.region.y0:mp.region.y1, mp.region.x0:mp.region.x1] = False
        assert not got[outside].any()


def test_placement_of_three_operators(runs, tmp_path):
    """3mm on 8x4: E = AB (p0) and F = CD (p1) side by side on the west and east halves, G = EF (p2) on
    both: each half is one colour, the two halves differ, and the legend names the operators."""
    prog, res, _ = runs["mm3"]
    labels, names = plot.placement(prog.mesh_program)
    west, east = labels[:, :4], labels[:, 4:]
    assert (west == west[0, 0]).all() and (east == east[0, 0]).all() and west[0, 0] != east[0, 0]
    assert names[west[0, 0]].startswith("p0 + p2: ") and names[east[0, 0]].startswith("p1 + p2: ")
    (path,) = res.plot(tmp_path / "mm3_placement.png", what="placement")
    pixels, (meta,) = _panels(path)
    cells = _cells(pixels, meta)
    assert np.ptp(cells[:, :4].reshape(-1, 3), axis=0).max() < 0.01
    assert np.ptp(cells[:, 4:].reshape(-1, 3), axis=0).max() < 0.01
    assert np.abs(cells[0, 0] - cells[0, 4]).max() > 0.1


def test_plot_files_writes_every_picture_and_the_trace(runs, tmp_path):
    _, res, plain = runs["matmul"]
    paths = plot.plot_files(res, tmp_path / "traced")
    assert [p.name for p in paths] == [f"{n}.png" for n in plot.PICTURES] + ["trace.json"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert [p.name for p in plot.plot_files(plain, tmp_path / "plain")] == [f"{n}.png" for n in plot.PICTURES]


def test_bad_picture_requests_fail_before_writing(runs, tmp_path):
    _, res, plain = runs["matmul"]
    with pytest.raises(InputError, match="unknown picture"):
        res.plot(tmp_path, what=("compute", "heat"))
    with pytest.raises(InputError, match="no trace"):
        plain.trace(tmp_path / "t.json")
    with pytest.raises(InputError, match="time must be"):
        res.trace(tmp_path / "t.json", time="ms")
    with pytest.raises(InputError, match="were not traced"):
        res.trace(tmp_path / "t.json", cores=[(9, 9)])
    assert not list(tmp_path.iterdir())


def test_a_wafer_sized_mesh_is_drawn_one_pixel_per_core(tmp_path):
    """750 x 994 cores: each traffic panel is the whole mesh at one pixel per core (no patch per core), and
    the one link that carried bytes is the brightest pixel of its panel."""
    w, h = 750, 994
    msg = 64
    bx = Box(0, 4, (BoxDim.whole(msg // 4),))
    rb = Box(128, 4, (BoxDim.whole(msg // 4),))
    y = 700
    code = encode([OpExchange(1, (Route(0, RAMP, EAST, Rect.cell(500, y)), Route(0, WEST, RAMP, Rect.cell(501, y))),
                              (Send(0, 1, Rect.cell(500, y), bx),), (Recv(0, Rect.cell(501, y), rb),))])
    with NativeMesh(w, h, 4, 49152) as m:
        m.reserve((0, w, 0, h), 256)
        m.commit()
        m.run(code)
        raw = m.stats()
    res = RunResult({}, RunStats(raw, (w, h), 1, mica.get_target("wse2")))
    (path,) = res.plot(tmp_path, what="traffic")
    pixels, metas = _panels(path)
    east = metas[1]
    left, top, right, bottom = east["box"]
    assert (right - left, bottom - top) == (w, h)
    panel = pixels[top:bottom, left:right]
    bright = panel.sum(axis=2)
    assert np.unravel_index(int(np.argmax(bright)), bright.shape) == (y, 500)
    np.testing.assert_allclose(panel[y, 500], _expected(msg, east), atol=3 / 255)
    assert np.count_nonzero(bright > bright.min() + 0.05) == 1
    with pytest.raises(InputError, match="needs the MeshIR"):
        res.plot(tmp_path, what="sram")


# ---------------------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------------------

def _load(path):
    doc = json.loads(path.read_text())
    assert set(doc) >= {"traceEvents", "displayTimeUnit", "otherData"}
    return doc


def _by_core(doc, width):
    """{(x, y): [X events in order]} and the thread names."""
    cores, names = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            assert set(e) >= {"name", "cat", "ph", "pid", "tid", "ts", "dur", "args"}
            x, y = (e["tid"] - 1) % width, (e["tid"] - 1) // width
            assert e["pid"] == y + 1
            cores.setdefault((x, y), []).append(e)
        elif e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
    for evs in cores.values():
        evs.sort(key=lambda e: e["args"]["start_cycle"])
    return cores, names


@pytest.mark.parametrize("name", NAMES)
def test_trace_events_tile_each_cores_modelled_clock(runs, name, tmp_path):
    prog, res, _ = runs[name]
    st = res.stats
    w, h = prog.mesh
    doc = _load(res.trace(tmp_path / "trace.json"))
    cores, names = _by_core(doc, w)
    ns_per_cycle = 1 / prog.target.clock_ghz
    for y in range(h):
        for x in range(w):
            evs = cores.get((x, y), [])
            if st.core_clock[y, x] == 0:
                assert not evs
                continue
            assert names[y * w + x + 1] == f"core ({x}, {y})"
            t, ns = 0.0, 0
            for e in evs:                            # back to back from cycle 0, no overlap, no gap
                a = e["args"]
                assert a["start_cycle"] == t < a["end_cycle"] and a["cycles"] == a["end_cycle"] - t
                # as Perfetto reads them (nanoseconds, rounded): the same, to the nanosecond
                assert round(e["ts"] * 1000) == ns and abs(ns - t * ns_per_cycle) <= 0.5
                ns += round(e["dur"] * 1000)
                t = a["end_cycle"]
            assert t == st.core_clock[y, x]          # the last event ends at the core's clock
            assert abs(ns - t * ns_per_cycle) <= 0.5
            comp = [e for e in evs if e["cat"] == "compute"]
            wait = [e for e in evs if e["cat"] in ("exchange", "prefetch")]
            assert len(comp) + len(wait) == len(evs)
            assert sum(e["args"]["cycles"] for e in comp) == pytest.approx(st.core_compute[y, x], rel=1e-12)
            assert sum(e["args"]["comm_cycles"] for e in wait) == pytest.approx(st.core_comm[y, x], rel=1e-12, abs=1e-9)
            assert sum(e["args"]["idle_cycles"] for e in wait) == pytest.approx(st.core_idle[y, x], rel=1e-12, abs=1e-9)
            assert bool(comp) == (st.core_compute[y, x] > 0)   # every core that computes has its kernel calls
    mp = prog.mesh_program
    computed = {op.kernel for op, _ in mp.walk() if isinstance(op, Compute)}
    assert {e["name"] for evs in cores.values() for e in evs if e["cat"] == "compute"} == computed
    assert computed <= {k.name for k in mp.kernels}
    exchanges = {f"exchange {op.name}" + (" (prefetched)" if op.prefetch else "")
                 for op, _ in mp.walk() if isinstance(op, Exchange)}
    seen = {e["name"] for evs in cores.values() for e in evs if e["cat"] != "compute"}
    assert seen <= exchanges
    fns = {c.name for k in mp.kernels for c in k.classes}
    assert {e["args"]["kernel_function"] for evs in cores.values() for e in evs if e["cat"] == "compute"} <= fns
    assert doc["otherData"]["modelled_cycles"] == st.cycles and doc["otherData"]["dropped_events"] == 0


def test_exchange_waits_are_traced_by_name(runs, tmp_path):
    """3mm moves F's blocks west between the operators: the cores that wait for them have events of that
    exchange whose communication and idle parts add up to their length."""
    prog, res, _ = runs["mm3"]
    cores, _ = _by_core(_load(res.trace(tmp_path / "t.json")), prog.mesh[0])
    waits = [e for evs in cores.values() for e in evs if e["cat"] == "exchange"]
    assert any(e["name"] == "exchange p2_F_move_W" for e in waits)
    for e in waits:
        a = e["args"]
        assert a["comm_cycles"] >= 0 and a["idle_cycles"] >= 0
        assert a["comm_cycles"] + a["idle_cycles"] == pytest.approx(a["cycles"])
        assert "F_move" in a["comms"] or a["comms"]


def test_trace_cores_selects_tracks_and_cycles_time(runs, tmp_path):
    prog, res, _ = runs["matmul"]
    w = prog.mesh[0]
    cores, _ = _by_core(_load(res.trace(tmp_path / "r.json", cores=(1, 3, 0, 2))), w)
    assert set(cores) == {(1, 0), (2, 0), (1, 1), (2, 1)}
    doc = _load(res.trace(tmp_path / "c.json", cores=[(3, 3)], time="cycles"))
    cores, _ = _by_core(doc, w)
    assert set(cores) == {(3, 3)}
    last = cores[(3, 3)][-1]
    assert last["ts"] + last["dur"] == pytest.approx(res.stats.core_clock[3, 3], abs=1e-9)
    assert "cycles" in doc["otherData"]["time"]


def test_tracing_a_rectangle_with_a_cap(runs):
    """trace=(x0, x1, y0, y1) records those cores only; trace_events caps each core, counting the rest
    as dropped, and the trace says so."""
    prog, full, _ = runs["matmul"]
    res = prog.run(_inputs(prog.program), trace=(1, 3, 2, 4), trace_events=3)
    rec = res.trace_record
    assert rec.rect == (1, 3, 2, 4) and rec.counts.tolist() == [3, 3, 3, 3]
    for i, (x, y) in enumerate([(1, 2), (2, 2), (1, 3), (2, 3)]):
        whole = full.trace_record.core_events(x, y)
        assert rec.dropped[i] == len(whole) - 3 > 0
        np.testing.assert_array_equal(rec.core_events(x, y), whole[:3])   # the first three, as recorded in full
    assert len(res.trace_record.core_events(0, 0)) == 0
    doc = json.loads(json.dumps(plot.trace_json(res)))
    drops = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert len(drops) == 4 and all("dropped" in e["name"] for e in drops)
    assert doc["otherData"]["dropped_events"] == int(rec.dropped.sum())
    with pytest.raises(InputError, match="no core"):
        prog.run(_inputs(prog.program), trace=(4, 9, 0, 4))


def test_tracing_changes_no_result(runs):
    for name in NAMES:
        _, traced, plain = runs[name]
        assert plain.trace_record is None and traced.trace_record is not None
        assert traced.stats.raw == plain.stats.raw                   # every counter and every clock
        for k, v in plain.outputs.items():
            assert traced.outputs[k].tobytes() == v.tobytes()


def test_tracing_costs_no_memory_while_off():
    """On a wafer-sized mesh: tracing off holds nothing, a traced rectangle only a small record per core
    of it (plus its events), and stopping gives everything back."""
    with NativeMesh(750, 994, 4, 49152) as m:
        m.reserve((0, 8, 0, 8), 256)
        m.commit()
        base = m.host_bytes()
        assert m.trace() is None
        m.trace_start((0, 16, 0, 4))
        assert 0 < m.host_bytes() - base <= 64 * 64 + 1024
        assert m.trace().counts.tolist() == [0] * 64
        m.trace_stop()
        assert m.host_bytes() == base and m.trace() is None
