"""Runtime parameters in the CSL back end: the host writes a run's values to the exported ``rparams`` on
every PE (run.py checks them against the declared ranges), and the kernels read ``rp_<name>`` from it in
their loop bounds, guards and subscripts. The emitted files are executed in the CSL interpreter at several
values and compared with run.py's reference and with the C compiled natively."""

import json

import numpy as np
import pytest

import mica
from mica.emit_csl import render
from mica.testing import run_c

import samples

from .test_csl_execution import execute

#: A row the run selects is read (gathered from its owner, rank-3 arrays), and a row it writes (a KV-cache
#: append, a may-write) with a reduction bounded by l <= pos: tests/samples.py.
ROPE, APPEND = samples.RUNTIME_ROPE, samples.RUNTIME_APPEND

CASES = {"rope": (ROPE, (4, 4), {"pos": (0, 16)}, (0, 9, 15)),
         "append": (APPEND, (4, 4), {"pos": (0, 16)}, (0, 6, 15))}


def _inputs(prog, seed=3):
    rng = np.random.default_rng(seed)
    return {a.name: rng.standard_normal(a.shape).astype(np.float32) if a.name in prog.inputs
            else np.zeros(a.shape, np.float32) for a in prog.arrays}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    src, mesh, runtime, values = CASES[request.param]
    prog = mica.compile_affine(src, mesh=mesh, runtime=runtime, target="wse2")
    assert prog.cost.cores > 1          # spread over the mesh, not the one-core sequence
    return src, prog, render(prog), values


def test_runtime_values_reach_every_pe_and_the_kernels_read_them(case):
    src, prog, files, values = case
    pe, layout, run = files["pe_program.csl"], files["layout.csl"], files["run.py"]
    assert "var rparams: [1]i32" in pe and '@export_symbol(rparams_ptr, "rparams");' in pe
    assert '@export_name("rparams", [*]i32, true);' in layout
    assert "const rp_pos: i32 = rparams[0];" in pe
    assert "runner.memcpy_h2d(sym_rparams, np.tile(rparams," in run and "ap.add_argument('--pos', type=int" in run
    assert json.loads(files["plan.json"])["exported"][-3:] == ["scalars", "rparams", "main"]
    inputs = _inputs(prog.program)
    for v in values:
        got, want = execute(prog, files, {"pos": v}, arrays={k: a.copy() for k, a in inputs.items()})
        native = run_c(src, None, {k: inputs[k] for k in prog.program.inputs}, {"pos": v})
        assert got and set(got) <= set(native)
        for k, a in got.items():
            scale = max(1.0, float(np.abs(native[k]).max()))
            np.testing.assert_allclose(a, want[k], rtol=1e-4, atol=1e-4 * scale)
            np.testing.assert_allclose(a, native[k], rtol=1e-4, atol=1e-4 * scale)


def test_a_value_outside_its_range_or_missing_is_refused_by_run_py(case):
    _, prog, files, values = case
    ns = {"__name__": "run_py"}
    exec(compile(files["run.py"].replace("from cerebras.sdk.runtime.sdkruntimepybind import", "# "), "run.py", "exec"), ns)
    hi = dict(ns["RUNTIME"])["pos"][1]
    assert ns["runtime_values"]({"pos": hi - 1}).tolist() == [hi - 1]
    for bad, msg in (({"pos": hi}, "outside its declared range"), ({"pos": -1}, "outside"), ({}, "missing"),
                     ({"pos": 1.5}, "must be an integer")):
        with pytest.raises(ValueError, match=msg):
            ns["runtime_values"](bad)


def test_the_value_changes_what_the_pes_compute(case):
    """Not vacuous: the same files run at two values give different results (the kernels read rparams)."""
    _, prog, files, values = case
    inputs = _inputs(prog.program)
    a, _ = execute(prog, files, {"pos": values[0]}, arrays={k: x.copy() for k, x in inputs.items()})
    b, _ = execute(prog, files, {"pos": values[-1]}, arrays={k: x.copy() for k, x in inputs.items()})
    assert any(not np.allclose(a[k], b[k]) for k in a)


@pytest.mark.parametrize("edit, msg", [
    (lambda f: dict(f, **{"pe_program.csl": f["pe_program.csl"].replace("= rparams[0];", "= rparams[1];", 1)}),
     r"rp_pos read from rparams\[1\]"),
    (lambda f: dict(f, **{"pe_program.csl": f["pe_program.csl"].replace("  const rp_pos: i32 = rparams[0];", "", 1)}),
     "rp_pos is read in .* without being declared"),
    (lambda f: dict(f, **{"run.py": f["run.py"].replace("RUNTIME = {'pos': (0, 16)}", "RUNTIME = {'pos': (0, 17)}")}),
     "RUNTIME must declare"),
    (lambda f: dict(f, **{"run.py": f["run.py"].replace("runner.memcpy_h2d(sym_rparams", "# ")}),
     "must write 1 value"),
])
def test_the_validator_checks_the_runtime_parameters(case, edit, msg):
    from mica.emit_csl.validate import validate
    from mica.errors import EmitError
    files = case[2]
    validate(files)
    with pytest.raises(EmitError, match=msg):
        validate(edit(files))


def test_a_kept_input_vector_loaded_onto_every_line_computes_the_reference():
    """A kept, read-only input vector (MeshGEMV's x) is loaded once onto every line of PEs that reads it, not
    multicast from line 0 each run: the host script loads each PE's block, and the emitted program computes
    the product (CSL interpreter, against numpy and run.py's reference)."""
    prog = mica.compile_affine(mica.ops.gemv(37, 29), mesh=(3, 5), resident=("A", "x"), target="wse2")
    assert prog.schedule.home("x").pin == ()
    rng = np.random.default_rng(6)
    A, x = rng.standard_normal((37, 29)).astype(np.float32), rng.standard_normal(29).astype(np.float32)
    got, want = execute(prog, render(prog), arrays={"A": A, "x": x, "y": np.zeros(37, np.float32)})
    np.testing.assert_allclose(got["y"], A @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
