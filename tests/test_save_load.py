"""Save and load: a compiled program survives ``pickle`` and ``save``/``mica.load`` unchanged — the same
schedule, MeshIR records and text, cost (and the cost model gives it again from the loaded MeshIR), C kernels
and explanation; it runs on the same inputs to bit-identical outputs and equal emulator statistics, and
retargets to another mesh as the original does. Nothing cached is pickled (no isl object, no generated C).
A file that is not a saved program, of another format version, saved by a MICA whose records differ, damaged,
or a pickle naming anything but MICA's records raises LoadError naming the file."""

import hashlib
import json
import os
import pickle

import numpy as np
import pytest

import mica
from frontend.frontend_util import MANIFEST, kernel_source
from mica.errors import LoadError, MicaError
from mica.native_sim.execute import NP_DTYPE
from mica.pipeline import LOWERING
from mica.saved import FORMAT_VERSION, MAGIC, save_file
from mica.targets import get_target
from mica.tiling.cost import estimate
from mica.tiling.operators import stream_schedules
from samples import matmul_chain

from native.test_minmax_programs import ARGMIN      # a (value, index) pair reduced across cores


def _kernel(name, mesh=(4, 4)):
    return mica.compile_affine(kernel_source(name), mesh=mesh, params=MANIFEST[name]["params"])


def _streamed():
    op = mica.affine.from_c(matmul_chain(16, 4))
    _, sched = next(stream_schedules(op, (4, 4), get_target("wse2"), LOWERING))
    return mica.compile_affine(op, mesh=(4, 4), schedule=sched)


#: name -> (compile, a mesh to retarget to)
PROGRAMS = {
    "matmul": (lambda: mica.compile_affine(mica.ops.matmul(16, 16, 16, dtype="f32"), mesh=(4, 4)), (3, 2)),
    "jacobi-2d": (lambda: _kernel("jacobi-2d"), (3, 3)),                 # stencil: halo exchanges
    "2mm": (lambda: _kernel("2mm"), (2, 3)),                             # two operators
    "gesummv": (lambda: _kernel("gesummv"), (3, 2)),                     # privatised temporaries
    "argmin": (lambda: mica.compile_affine(ARGMIN, mesh=(4, 4), target="generic", params={"N": 40, "D": 5}),
               (3, 3)),                                                  # arg-min pair across cores
    "streamed": (_streamed, None),                                       # pieces, rebuilt after loading
}

_compiled: dict = {}
_runs: dict = {}


def _program(name):
    if name not in _compiled:
        p = _compiled[name] = PROGRAMS[name][0]()
        # Fill every cache first: none of it may end up in the pickle.
        assert p.meshir and p.kernels
        p.pieces
        for s in p.program.statements:
            s.domain_set
    return _compiled[name]


def _inputs(prog, seed=1):
    rng = np.random.default_rng(seed)
    ins = {}
    for name in prog.inputs:
        a = prog.array(name)
        dt = NP_DTYPE[a.dtype]
        ins[name] = (rng.integers(-50, 50, a.shape).astype(dt) if np.issubdtype(dt, np.integer)
                     else rng.uniform(-1.0, 1.0, a.shape).astype(dt))
    ins.update({n: float(rng.uniform(0.5, 1.5)) for n, _ in prog.scalars})
    return ins


def _run(p, mesh=None):
    return p.run(_inputs(p.program), mesh=mesh, threads=2, progress=False)


def _original_run(name):
    if name not in _runs:
        _runs[name] = _run(_program(name))
    return _runs[name]


def _same_run(a, b):
    assert sorted(a.outputs) == sorted(b.outputs)
    for n in a.outputs:
        assert a.outputs[n].dtype == b.outputs[n].dtype and a.outputs[n].shape == b.outputs[n].shape, n
        assert a.outputs[n].tobytes() == b.outputs[n].tobytes(), n
    assert a.stats.raw == b.stats.raw and a.stats.mesh == b.stats.mesh


def _same_program(p, q):
    assert q is not p and q == p                 # program, target, schedule, MeshIR records, cost
    assert q.program.source == p.program.source
    assert str(q.schedule) == str(p.schedule) and q.schedule.to_json() == p.schedule.to_json()
    assert q.cost == p.cost and estimate(q.mesh_program, q.target) == p.cost
    assert q.meshir == p.meshir
    assert q.kernels == p.kernels and q.kernel_module == p.kernel_module
    assert q.pieces == p.pieces
    assert q.explain() == p.explain() and str(q) == str(p)
    assert q.timings == p.timings


def _pickled(p, tmp_path):
    data = pickle.dumps(p)
    assert b"islpy" not in data                       # no isl object: every set is parsed again from its text
    assert p.kernels and all(src.encode() not in data for _, src in p.kernel_module.sources)   # no C
    q = pickle.loads(data)
    assert not {"meshir", "kernel_module", "pieces"} & set(vars(q))       # built again on first use
    assert all("domain_set" not in vars(s) for s in q.program.statements)
    return q


def _saved(p, tmp_path):
    path = tmp_path / "prog.mica"
    assert p.save(path) == path
    assert not [f for f in os.listdir(tmp_path) if f != "prog.mica"]     # no temporary file left behind
    return mica.load(str(path))


@pytest.mark.parametrize("how", ["pickle", "file"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_loaded_program_is_the_same_and_runs_the_same(name, how, tmp_path):
    p = _program(name)
    q = (_pickled if how == "pickle" else _saved)(p, tmp_path)
    _same_program(p, q)
    assert "meshir" in vars(p) and "kernel_module" in vars(p)            # the original keeps its caches
    _same_run(_original_run(name), _run(q))


@pytest.mark.parametrize("name", sorted(n for n, (_, mesh) in PROGRAMS.items() if mesh is not None))
def test_a_loaded_program_retargets_as_the_original_does(name, tmp_path):
    p = _program(name)
    q = _saved(p, tmp_path)
    mesh = PROGRAMS[name][1]
    a, b = p.retarget(mesh), q.retarget(mesh)
    assert b.mesh == mesh and str(b.schedule) == str(a.schedule) and b.cost == a.cost and b.meshir == a.meshir
    if name in ("jacobi-2d", "argmin"):          # two runs each: keep the test short
        _same_run(_run(p, mesh), _run(q, mesh))


def test_targets_pickle_with_their_read_only_figures():
    from types import MappingProxyType
    for t in mica.TARGETS.values():
        u = pickle.loads(pickle.dumps(t))
        assert u == t and u is not t
        assert type(u.flops_per_cycle) is MappingProxyType and type(u.extra) is MappingProxyType


# -- files that are not (or no longer) saved programs ---------------------------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "mm.mica"
    mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=(2, 2), search=False).save(path)
    return path.read_bytes()


def _parts(data):
    """(header without its digest, digest, payload) of a saved file's bytes."""
    end = data.index(b"\n", len(MAGIC))
    header = json.loads(data[len(MAGIC):end])
    return header, header.pop("sha256"), data[end + 1:]


def _file(tmp_path, header, payload, digest=None):
    """A file of ``header`` and ``payload``, with ``digest`` or else the payload's own."""
    header = {**header, "sha256": digest or hashlib.sha256(payload).hexdigest()}
    path = tmp_path / "bad.mica"
    path.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)
    return path


def test_the_saved_file_loads(saved, tmp_path):
    header, digest, payload = _parts(saved)
    assert header["format"] == FORMAT_VERSION and header["kind"] == "mica.pipeline:CompiledProgram"
    assert header["records"]["mica.meshir.ir:Kernel"] and digest == hashlib.sha256(payload).hexdigest()
    assert isinstance(mica.load(_file(tmp_path, header, payload)), mica.CompiledProgram)


class _Evil:
    def __reduce__(self):
        return (os.getcwd, ())


def _flip(p):
    return p[:100] + bytes([p[100] ^ 1]) + p[101:]


# Each case: (header, digest, payload) -> the file's bytes, or (header, payload[, digest]) for _file.
@pytest.mark.parametrize("damage, words", [
    (lambda h, d, p: b"hello, world\n" + p, "is not a saved MICA program"),
    (lambda h, d, p: b"", "is not a saved MICA program"),
    (lambda h, d, p: MAGIC + b"{not json\n" + p, "its header cannot be read"),
    (lambda h, d, p: MAGIC + b'{"format": 1}\n' + p, "its header cannot be read"),
    (lambda h, d, p: MAGIC + b"{}", "its header cannot be read"),
    (lambda h, d, p: ({**h, "format": FORMAT_VERSION + 1}, p),
     f"saved in MICA file format {FORMAT_VERSION + 1!r}.*reads format {FORMAT_VERSION} only"),
    (lambda h, d, p: ({**h, "format": "1"}, p), "format '1'"),
    (lambda h, d, p: (h, p[: len(p) // 2], d), "do not match their checksum"),
    (lambda h, d, p: (h, _flip(p), d), "do not match their checksum"),
    (lambda h, d, p: ({**h, "records": {**h["records"], "mica.meshir.ir:Kernel": ["name"]}}, p),
     r"whose record mica.meshir.ir:Kernel had the fields \(name\); this MICA's has \(name, "),
    (lambda h, d, p: ({**h, "records": {**h["records"], "mica.meshir.ir:Gone": ["a"]}}, p), "has no such record"),
    (lambda h, d, p: ({**h, "kind": "mica.tiling.schedule:Schedule"}, p), "holds a mica.tiling.schedule:Schedule"),
    (lambda h, d, p: (h, b"\x80\x05junk"), "contents cannot be read"),
    (lambda h, d, p: (h, p[: len(p) // 2]), "contents cannot be read"),
    (lambda h, d, p: (h, _flip(p)), "contents cannot be read"),
    (lambda h, d, p: (h, pickle.dumps(_Evil())), r"names \w+\.getcwd, which is not a MICA record class"),
    (lambda h, d, p: (h, pickle.dumps({"not": "a program"})), "holds a dict, not a CompiledProgram"),
])
def test_a_bad_file_raises_load_error_naming_it(saved, tmp_path, damage, words):
    made = damage(*_parts(saved))
    if isinstance(made, bytes):
        path = tmp_path / "bad.mica"
        path.write_bytes(made)
    else:
        path = _file(tmp_path, *made)
    with pytest.raises(LoadError, match=words) as info:
        mica.load(path)
    assert isinstance(info.value, MicaError) and str(path) in str(info.value)
    # One clear error: no chained traceback of whatever failed inside.
    assert info.value.__cause__ is None and (info.value.__context__ is None or info.value.__suppress_context__)


def test_another_kind_of_object_is_refused(tmp_path):
    sched = mica.compile_affine(mica.ops.matmul(8, 8, 8), mesh=(2, 2), search=False).schedule
    path = save_file(sched, tmp_path / "sched.mica")
    with pytest.raises(LoadError, match="holds a mica.tiling.schedule:Schedule, not a mica.pipeline:CompiledProgram"):
        mica.load(path)


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        mica.load(tmp_path / "nothing.mica")
