"""The generated ``run.py`` against a stand-in for the SDK runtime that runs the same MeshIR in the
emulator: the per-PE layout run.py writes with memcpy_h2d is loaded into the emulator's arenas as is, the
op code runs, and what run.py reads back with memcpy_d2h must match its own sequential reference. This
checks the host side of the contract (symbols, regions, per-PE element counts, box packing, skewed ring
staging, the reference) end to end; the PE program itself needs the Cerebras toolchain."""

import sys
import types

import numpy as np
import pytest

from mica.emit_c.build import compile_shared
from mica.emit_csl import render
from mica.native_sim import opcode as oc
from mica.native_sim.lower import lower
from mica.native_sim.runtime import NativeMesh, load_kernels
from .programs import program


#: the narrow integer dtypes, which the PEs hold widened in 32-bit words
NARROW = {"i16": np.int16, "i8": np.int8, "u8": np.uint8}


class FakeRuntime:
    """SdkRuntime's host API over the emulator (one compiled program)."""

    compiled = None
    made_with: list = []          # the keyword arguments of every SdkRuntime(...) run.py made

    def __init__(self, name, **kwargs):
        assert set(kwargs) <= {"cmaddr"}, kwargs
        FakeRuntime.made_with.append(kwargs)
        self.h2d, self.out = {}, {}

    def get_id(self, name):
        return name

    def load(self):
        pass

    def run(self):
        pass

    def stop(self):
        pass

    def memcpy_h2d(self, sym, data, x0, y0, w, h, elems, **kw):
        assert data.size == w * h * elems, f"h2d of {sym}: {data.size} values for {w}x{h} PEs x {elems}"
        self.h2d[sym] = (np.asarray(data).reshape(h, w, elems), x0, y0)

    def _box(self, t, x1, y1, elems):
        return oc.Box(t.offset, t.elem_bytes, (oc.BoxDim(oc.AXIS_Y, 1, y1), oc.BoxDim(oc.AXIS_X, 1, x1),
                                               oc.BoxDim.whole(elems)))

    def launch(self, fn, nonblock=False):
        assert fn == "main"
        c = self.compiled
        mp = c.mesh_program
        km = c.kernel_module
        low = lower(mp, km)
        w, h = mp.mesh
        scalars = [float(v) for v in self.h2d.pop("scalars")[0][0, 0, :len(mp.scalars)]]
        with load_kernels(compile_shared(km.source, name=f"kernels_{mp.name}")) as lib, \
                NativeMesh(w, h, c.target.colours, c.target.sram_bytes) as mesh:
            r = mp.region
            mesh.reserve((r.x0, r.x1, r.y0, r.y1), mp.arena_bytes)
            mesh.commit()
            for sym, (arr, x0, y0) in self.h2d.items():
                t = mp.tensor(sym)
                hh, ww, elems = arr.shape
                # the PEs hold a narrow integer array widened in 32-bit words; the emulator's arena in its own type
                full = np.zeros((y0 + hh, x0 + ww, elems), dtype=NARROW.get(t.dtype, arr.dtype))
                full[y0:, x0:] = arr
                mesh.host_load(full, self._box(t, x0 + ww, y0 + hh, elems), oc.Rect(x0, x0 + ww, y0, y0 + hh))
            mesh.run(low.code, lib, scalars, 1)
            for st in low.stores:
                t = mp.tensor(st.buffer)
                elems = t.max_bytes // t.elem_bytes
                rg = st.region
                out = mesh.host_store(self._box(t, rg.x1, rg.y1, elems), oc.Rect(rg.x0, rg.x1, rg.y0, rg.y1),
                                      (rg.y1, rg.x1, elems),
                                      NARROW.get(t.dtype, np.int32 if t.dtype == "i32" else np.float32))
                self.out[st.buffer] = out.astype(np.int32) if t.dtype in NARROW else out

    def memcpy_d2h(self, out, sym, x0, y0, w, h, elems, **kw):
        out[:] = self.out[sym][y0:y0 + h, x0:x0 + w, :elems].reshape(-1)


def _with_fake_sdk(compiled, monkeypatch) -> str:
    """run.py of ``compiled``, with the Cerebras SDK modules it imports replaced by :class:`FakeRuntime`
    (running ``compiled`` in the emulator) for the rest of the test."""
    text = render(compiled)["run.py"]
    fake = types.ModuleType("cerebras.sdk.runtime.sdkruntimepybind")
    fake.SdkRuntime = FakeRuntime
    fake.MemcpyDataType = types.SimpleNamespace(MEMCPY_32BIT=32, MEMCPY_16BIT=16)
    fake.MemcpyOrder = types.SimpleNamespace(ROW_MAJOR=0, COL_MAJOR=1)
    for mod in ("cerebras", "cerebras.sdk", "cerebras.sdk.runtime"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    monkeypatch.setitem(sys.modules, "cerebras.sdk.runtime.sdkruntimepybind", fake)
    FakeRuntime.compiled = compiled
    return text


@pytest.mark.parametrize("name, target", [("matmul_interleaved", "wse2"), ("matmul_summa", "wse3"),
                                          ("gemv_ktree", "wse2"), ("two_ops", "wse2"),
                                          ("matmul_cannon_partial", "wse3")])
def test_run_py_host_side_against_the_emulator(name, target, monkeypatch, capsys):
    compiled = program(name, target)
    text = _with_fake_sdk(compiled, monkeypatch)
    ns = {"__name__": "run_py"}
    exec(compile(text, "run.py", "exec"), ns)
    monkeypatch.setattr(sys, "argv", ["run.py"])
    assert ns["main"]() == 0
    out = capsys.readouterr().out
    assert "SUCCESS" in out and "MISMATCH" not in out


def test_run_py_reference_is_the_program():
    compiled = program("matmul_interleaved", "wse2")
    ns = {"__name__": "run_py"}
    text = render(compiled)["run.py"].replace("from cerebras.sdk.runtime.sdkruntimepybind import", "# ")
    exec(compile(text, "run.py", "exec"), ns)
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    got = ns["reference"]({"A": A, "B": B, "C": np.zeros((16, 16))}, {})
    np.testing.assert_allclose(got["C"], A @ B, rtol=1e-12)


def test_a_wrong_host_layout_is_detected(monkeypatch, capsys):
    """The stand-in is not a rubber stamp: staging ring blocks without the skew gives wrong results."""
    compiled = program("matmul_interleaved", "wse2")
    text = render(compiled)["run.py"].replace("return (ring_pos(x) + ring_pos(y)) % SKEW_N", "return 0")
    fake = types.ModuleType("cerebras.sdk.runtime.sdkruntimepybind")
    fake.SdkRuntime = FakeRuntime
    fake.MemcpyDataType = types.SimpleNamespace(MEMCPY_32BIT=32, MEMCPY_16BIT=16)
    fake.MemcpyOrder = types.SimpleNamespace(ROW_MAJOR=0, COL_MAJOR=1)
    monkeypatch.setitem(sys.modules, "cerebras.sdk.runtime.sdkruntimepybind", fake)
    for mod in ("cerebras", "cerebras.sdk", "cerebras.sdk.runtime"):
        monkeypatch.setitem(sys.modules, mod, types.ModuleType(mod))
    FakeRuntime.compiled = compiled
    ns = {"__name__": "run_py"}
    exec(compile(text, "run.py", "exec"), ns)
    monkeypatch.setattr(sys, "argv", ["run.py"])
    assert ns["main"]() == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_run_py_stages_windows_with_ghost_zones():
    """Halo-ready host layout: a window dimension (span > 0) holds ``span`` elements from tile*c + offset,
    clipped at the array's edges; only each core's own tile is written back."""
    ns = {"__name__": "run_py"}
    text = render(program("gemv_chain", "wse2"))["run.py"].replace(
        "from cerebras.sdk.runtime.sdkruntimepybind import", "# ")
    exec(compile(text, "run.py", "exec"), ns)
    dims = (("y", 4, 8, False, 0, 0, 0), ("x", 4, 8, False, -1, 6, 0))      # rows tiled, columns with 1 ghost each side
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    flat = ns["to_pes"](a, dims, 0, 2, 0, 2, 24).reshape(2, 2, 24)
    core00 = flat[0, 0].reshape(4, 6)
    assert (core00[:, 0] == 0).all() and (core00[:, 1:] == a[0:4, 0:5]).all()    # west ghost outside: zero
    core10 = flat[0, 1].reshape(4, 6)
    assert (core10[:, :5] == a[0:4, 3:8]).all() and (core10[:, 5] == 0).all()
    back = np.zeros_like(a)
    ns["from_pes"](flat.reshape(-1), back, dims, 0, 2, 0, 2, 24)
    assert (back == a).all()


def test_box_geometry_of_windows():
    from mica.emit_csl import boxes
    from mica.meshir.ir import BoxDim
    win = BoxDim("x", 4, 10, offset=-1, span=6)
    part = BoxDim("x", 4, 10)
    assert win.alloc == 6 and win.size(2) == 6 and boxes.size_csl(win, "px") == "6"
    assert part.alloc == 4 and part.size(2) == 2
    assert boxes.size_csl(part, "px") == "imax(0, imin(4, 10 - 4 * px))"
    placed = BoxDim("x", 4, 10, origin=3)            # block 0 on core x = 3 (an operator placed there)
    assert placed.size(5) == 2 and boxes.size_csl(placed, "px") == "imax(0, imin(4, 10 - 4 * (px - 3)))"


def test_run_py_stages_boxes_placed_away_from_core_0():
    """A box whose block 0 is on core x = 2 (origin 2): core (2 + c, y) gets block c; written back whole."""
    ns = {"__name__": "run_py"}
    text = render(program("gemv_chain", "wse2"))["run.py"].replace(
        "from cerebras.sdk.runtime.sdkruntimepybind import", "# ")
    exec(compile(text, "run.py", "exec"), ns)
    dims = (("y", 4, 8, False, 0, 0, 0), ("x", 3, 8, False, 0, 0, 2))
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    flat = ns["to_pes"](a, dims, 2, 5, 0, 2, 12).reshape(2, 3, 12)
    assert (flat[1, 0].reshape(4, 3) == a[4:8, 0:3]).all()          # core (2, 1): block (1, 0)
    assert (flat[0, 2, :8].reshape(4, 2) == a[0:4, 6:8]).all()      # core (4, 0): the partial block (0, 2)
    back = np.zeros_like(a)
    ns["from_pes"](flat.reshape(-1), back, dims, 2, 5, 0, 2, 12)
    assert (back == a).all()


@pytest.mark.parametrize("argv, kwargs", [([], {}), (["--cmaddr", "10.0.0.1:9000"], {"cmaddr": "10.0.0.1:9000"})])
def test_run_py_omits_cmaddr_for_the_simulator(argv, kwargs, monkeypatch, capsys):
    """The SdkRuntime reference: cmaddr is the 'IP_ADDRESS:PORT' of the CS system's CM, and omitting the keyword
    runs on simfabric; run.py passes it only when --cmaddr is given (never an empty string)."""
    compiled = program("gemv_ktree", "wse2")
    text = _with_fake_sdk(compiled, monkeypatch)
    monkeypatch.setattr(FakeRuntime, "made_with", [])
    ns = {"__name__": "run_py"}
    exec(compile(text, "run.py", "exec"), ns)
    monkeypatch.setattr(sys, "argv", ["run.py", *argv])
    assert ns["main"]() == 0
    assert FakeRuntime.made_with == [kwargs]
    assert "SUCCESS" in capsys.readouterr().out
