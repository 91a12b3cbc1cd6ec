"""Integer (i32) arrays in the CSL back end: exact k-NN search (its ``int idx[Q][K]`` answers, each round's
(distance, index) arg-min combined across cores), int32 division and remainder with C's truncation
(``cdiv``/``cmod``), an int32 matmul whose partials are summed across cores, and the nussinov DP over an
``int`` table, and the ``i8``/``u8``/``i16`` arrays of C's integer semantics (held widened in i32 words, each
store wrapped as C converts). The interpreter runs the emitted files on every core; the integer results must
equal the emulator's and the natively compiled C's exactly (run.py's reference too, which computes integer
arrays in Python ints), the float ones as before."""

import sys
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.affine.from_c import from_c
from mica.emit_csl import render
from mica.errors import EmitError
from mica.models.knn import KnnConfig, knn_source

from .test_csl_execution import execute
from .test_host_script import _with_fake_sdk

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))  # test_int_end_to_end, frontend_util
from test_int_end_to_end import _case  # noqa: E402


NP = {"i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8}


def _arrays(compiled, given):
    return {a.name: np.asarray(given[a.name]) if a.name in given
            else np.zeros(a.shape, NP.get(a.dtype, np.float32)) for a in compiled.program.arrays}


# CI: each metric once and each dtype once; the other two with -m slow
@pytest.mark.parametrize("metric, dtype, mesh", [("ip", "f32", (3, 2)), ("l2", "f16", (5, 3)),
                                                 pytest.param("l2", "f32", (4, 4), marks=pytest.mark.slow),
                                                 pytest.param("ip", "f16", (2, 5), marks=pytest.mark.slow)])
def test_knn_runs_as_csl(metric, dtype, mesh):
    cfg = KnnConfig(n=40, dim=6, batch=3, k=3, metric=metric, dtype=dtype)
    compiled = mica.compile_affine(from_c(knn_source(cfg), "knn"), mesh=mesh)
    assert compiled.cost.cores > 1
    files = render(compiled)                        # validates and syntax-checks
    text = files["pe_program.csl"]
    assert "var buf_idx: [" in text and "]i32 = @zeros(" in text
    assert "@as(i32, -1)" in text                   # idx[q][r] = -1, an i32 literal
    rng = np.random.default_rng(5)
    db = rng.standard_normal((cfg.n, cfg.dim)).astype(np.float16 if dtype == "f16" else np.float32)
    db[11] = db[4]                                  # a tie: the smaller index comes first
    inputs = {"db": db, "qs": rng.standard_normal((cfg.batch, cfg.dim)).astype(np.float32)}
    got, want = execute(compiled, files, arrays=_arrays(compiled, inputs))
    emulated = compiled.run(inputs, threads=1).outputs
    assert got["idx"].dtype == np.int32
    np.testing.assert_array_equal(got["idx"], emulated["idx"])
    np.testing.assert_array_equal(got["idx"], want["idx"].astype(np.int32))
    np.testing.assert_array_equal(got["dist"], emulated["dist"])
    np.testing.assert_allclose(got["dist"], want["dist"].astype(np.float64), rtol=1e-5, atol=1e-5)
    # against numpy: the first k rows of a stable sort by (distance, index)
    q, x = inputs["qs"].astype(np.float64), db.astype(np.float64)
    score = ((q[:, None, :] - x[None]) ** 2).sum(-1) if metric == "l2" else -(q @ x.T)
    order = np.stack([np.lexsort((np.arange(cfg.n), s)) for s in score])[:, :cfg.k]
    np.testing.assert_array_equal(got["idx"], order)


@pytest.mark.parametrize("name, params, mesh", [("intdiv", {"n": 13, "m": 11}, (3, 2)),
                                                ("imatmul", {"ni": 11, "nj": 10, "nk": 7}, (4, 4)),
                                                ("imatmul", {"ni": 5, "nj": 9, "nk": 13}, (2, 3))])
def test_int32_programs_run_as_csl(name, params, mesh):
    prog, ins, native = _case(name, params)
    compiled = mica.compile_affine(prog, mesh=mesh)
    assert compiled.cost.cores > 1
    files = render(compiled)
    if name == "intdiv":                            # C's truncating / and %, negative operands included
        assert "fn cdiv(" in files["pe_program.csl"] and "cmod(" in files["pe_program.csl"]
        assert "def mica_idiv(" in files["run.py"]
    got, want = execute(compiled, files, arrays=_arrays(compiled, ins))
    emulated = compiled.run({k: v for k, v in ins.items() if k in prog.inputs}, threads=1).outputs
    assert set(got) == set(native)
    for k, v in got.items():
        assert v.dtype == np.int32
        np.testing.assert_array_equal(v, native[k])
        np.testing.assert_array_equal(v, emulated[k])
        np.testing.assert_array_equal(v, want[k].astype(np.int32))


NUSSINOV_INT_SEQ = (Path(__file__).resolve().parents[1] / "frontend" / "kernels_int" / "nussinov-int.c").read_text()


def test_nussinov_with_an_int_sequence_runs_as_csl():
    """PolyBench's nussinov with ``int seq[]`` (its ``char`` form is refused below): a max-plus DP over an int
    table, integer compares and selects throughout."""
    src = NUSSINOV_INT_SEQ.replace("typedef char base;", "typedef int base;")
    prog = from_c(src, None, params={"n": 12})
    rng = np.random.default_rng(2)
    ins = {"seq": rng.integers(0, 4, 30).astype(np.int32), "table": np.zeros((30, 30), np.int32)}
    compiled = mica.compile_affine(prog, mesh=(2, 2))
    files = render(compiled)
    got, want = execute(compiled, files, arrays=_arrays(compiled, ins))
    emulated = compiled.run(ins, threads=1).outputs
    np.testing.assert_array_equal(got["table"], emulated["table"])
    np.testing.assert_array_equal(got["table"], want["table"].astype(np.int32))
    assert got["table"].max() > 0


INT_SEMANTICS = ((Path(__file__).resolve().parents[1] / "frontend" / "kernels_int" / "int-semantics.c").read_text()
                 .replace("double d[n]", "float d[n]").replace("d[i] * 3.5", "d[i] * f[i]"))


@pytest.mark.parametrize("name, params, mesh", [("widen-sum", {"n": 17, "m": 10}, (3, 2)),
                                                ("nussinov-int", {"n": 12}, (2, 2))])
def test_narrow_integer_programs_run_as_csl(name, params, mesh):
    """int8 (``signed char``, ``char``) arrays, held widened in i32 words: widen-sum's int8 products summed
    into int32 across cores, and nussinov in its PolyBench form (``char seq[]``)."""
    prog, ins, native = _case(name, params)
    compiled = mica.compile_affine(prog, mesh=mesh)
    files = render(compiled)
    assert "var buf_" in files["pe_program.csl"] and "]i8" not in files["pe_program.csl"]
    got, want = execute(compiled, files, arrays=_arrays(compiled, ins))
    emulated = compiled.run({k: v for k, v in ins.items() if k in prog.inputs}, threads=1).outputs
    for k, v in got.items():
        np.testing.assert_array_equal(v, native[k])
        np.testing.assert_array_equal(v, emulated[k])
        np.testing.assert_array_equal(v, want[k].astype(np.int64))


def test_c_integer_semantics_run_as_csl():
    """tests/frontend's int-semantics kernel (its double array made float, its double literal an operand:
    the WSE has no double): promotions of char / short / unsigned char, wrap on narrowing stores and casts
    (``wrap_i8``, ``wrap_u8``, ``wrap_i16``), truncating / and %, float <-> int conversions, an int select and
    temporary; every integer output equals the native C's, bit for bit."""
    import json
    from frontend_util import make_inputs
    from mica.testing import run_c
    spec = json.loads((Path(__file__).resolve().parents[1] / "frontend" / "kernels_int" / "manifest.json")
                      .read_text())["int-semantics"]
    params = {"n": 23}
    prog = from_c(INT_SEMANTICS, None, params=params)
    ins = make_inputs(INT_SEMANTICS, None, params, spec, seed=7)
    native = run_c(INT_SEMANTICS, None, ins, params)
    compiled = mica.compile_affine(prog, mesh=(3, 2))
    files = render(compiled)
    text = files["pe_program.csl"]
    assert all(f"wrap_{d}(" in text for d in ("i8", "u8", "i16"))
    got, want = execute(compiled, files, arrays=_arrays(compiled, ins))
    for k in ("c8", "s16", "uc", "r"):
        np.testing.assert_array_equal(got[k], native[k])
        np.testing.assert_array_equal(got[k], want[k].astype(np.int64))   # run.py's reference: Python ints
    np.testing.assert_array_equal(got["g"], native["g"])


def test_a_double_value_stored_to_an_int_array_is_refused():
    """C computes ``x[i] * 2.5`` in double before truncating to int; the WSE has no double arithmetic."""
    prog = from_c("void f(int x[8], int y[8]) {\n  for (int i = 0; i < 8; i++) y[i] = x[i] * 2.5;\n}\n")
    with pytest.raises(EmitError, match=r"stores a f64 value to an integer array"):
        render(mica.compile_affine(prog, mesh=(2, 1)))


def test_float_and_int_mixed_statements_convert_explicitly():
    """``g = x / 2`` (int division, then float), ``h = (float)x / 2`` (float division) and ``r = f * x`` (a
    float product truncated into an int): each conversion C makes implicitly is an ``@as`` in the CSL, and the values
    equal the native C's."""
    src = ("void f(int x[10], float f[10], float g[10], float h[10], int r[10]) {\n"
           "  for (int i = 0; i < 10; i++) {\n    g[i] = x[i] / 2;\n    h[i] = (float)x[i] / 2;\n"
           "    r[i] = f[i] * x[i];\n  }\n}\n")
    prog = from_c(src)
    compiled = mica.compile_affine(prog, mesh=(2, 2))
    files = render(compiled)
    text = files["pe_program.csl"]
    assert "@as(f32, cdiv(" in text and "@as(i32, (buf_f[" in text and "@as(f32, buf_x[" in text
    ins = {"x": np.array([7, -7, 3, -3, 0, 1, -1, 100, -101, 55], np.int32),
           "f": np.linspace(-5.3, 5.3, 10).astype(np.float32)}
    got, want = execute(compiled, files, arrays=_arrays(compiled, ins))
    from mica.testing import run_c
    native = run_c(src, None, ins, {})
    for k in ("g", "h", "r"):
        np.testing.assert_array_equal(got[k], native[k])


@pytest.mark.parametrize("which", ["knn", "intdiv", "widen-sum"])
def test_run_py_checks_integer_outputs_exactly(which, monkeypatch, capsys):
    """run.py's own main (random int32 inputs from rng.integers, the reference in Python ints, an exact
    comparison) against the SDK stand-in that runs the same MeshIR in the emulator."""
    if which == "knn":
        prog = from_c(knn_source(KnnConfig(n=30, dim=4, batch=2, k=2, metric="l2", dtype="f32")), "knn")
    else:
        prog = _case(which, {"n": 7, "m": 5})[0]
    compiled = mica.compile_affine(prog, mesh=(3, 2))
    text = _with_fake_sdk(compiled, monkeypatch)
    if which != "knn":
        assert "rng.integers(1, 100, " in text
    ns = {"__name__": "run_py"}
    exec(compile(text, "run.py", "exec"), ns)
    monkeypatch.setattr(sys, "argv", ["run.py"])
    assert ns["main"]() == 0
    out = capsys.readouterr().out
    assert "SUCCESS" in out and "MISMATCH" not in out
