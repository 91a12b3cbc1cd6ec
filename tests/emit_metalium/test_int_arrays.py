"""Integer (i32) arrays in the Metalium back end: Int32 circular buffers and DRAM staging beside the f32 ones,
every kernel that touches an integer array on the generic path (C++ integer arithmetic on the RISC-V, C's
truncating ``/`` and ``%``), and host.cpp comparing integer outputs with the reference exactly. The emitted
programs are built against the functional model and run (as test_functional.py does): exact k-NN search
(its ``int idx`` answers), int32 division, an int32 matmul reduced across cores, nussinov over an ``int``
table, and int8 / uint8 / int16 arrays (held widened in Int32 tiles, each store wrapped as C converts), beside
f32 or bf16 arrays."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import mica
from mica.affine.from_c import from_c
from mica.emit_metalium import render
from mica.errors import EmitError
from mica.models.knn import KnnConfig, knn_source

from .test_functional import GXX, run_emitted
from .test_syntax import syntax_errors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from test_int_end_to_end import _case  # noqa: E402

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def _outputs(out: str) -> dict[str, str]:
    """output name -> its comparison line of host.cpp's report."""
    return {ln.split(":")[0]: ln for ln in out.splitlines()
            if "max |device - reference|" in ln or "differ from the reference (exact)" in ln}


def _check_run(compiled, tmp_path):
    """The emitted files compile against the API declarations, build against the functional model and run;
    every output matches the reference (integers exactly)."""
    files = render(compiled)
    assert syntax_errors(files, tmp_path / "syntax") == {}
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    lines = _outputs(out)
    assert sorted(lines) == sorted(compiled.program.outputs), out
    for name, ln in lines.items():
        if compiled.program.array(name).dtype in ("i32", "i16", "i8", "u8"):
            assert re.search(r": 0 of \d+ elements differ from the reference \(exact\) ok$", ln), ln
        else:
            m = re.search(r"= (\S+) \(scale (\S+)\) (\w+)", ln)
            assert m.group(3) == "ok" and float(m.group(1)) <= 1e-5 * float(m.group(2)), ln
    return files


# CI: each metric once; l2 with k = 3 on 3x2 with -m slow
@pytest.mark.parametrize("metric, k, mesh", [pytest.param("l2", 3, (3, 2), marks=pytest.mark.slow), ("ip", 2, (5, 1)),
                                             ("l2", 1, (4, 4))])
def test_knn_runs_on_the_functional_model(metric, k, mesh, tmp_path):
    cfg = KnnConfig(n=40, dim=6, batch=3, k=k, metric=metric, dtype="f32")
    # WSE-2's plan, placed on a Wormhole (the back end takes any plan whose mesh fits its grid): Wormhole's own
    # model keeps so small a search on one core
    compiled = mica.compile_affine(from_c(knn_source(cfg), "knn"), mesh=mesh)
    assert compiled.cost.cores > 1
    pair = "(min, argmin) pair" if metric == "l2" else "(max, argmax) pair"
    assert f"carries only the {pair}" in compiled.explain()       # each round's pick combined across cores
    files = _check_run(compiled, tmp_path)
    plan = json.loads(files["plan.json"])
    formats = {c["tensor"]: c["data_format"] for c in plan["circular_buffers"] if c["kind"] == "tensor"}
    assert formats["idx"] == "tt::DataFormat::Int32" and formats["d"] == "tt::DataFormat::Float32"
    assert "static void stage_i32(std::vector<int32_t>& a" in files["host.cpp"]
    assert "int32_t* const" in "".join(t for p, t in files.items() if p.startswith("kernels/reader_"))
    if k > 1:       # every round reduces dist and idx under the same exchange names: told apart (they deadlocked)
        assert any(e["exchange"].endswith("#2") for e in plan["exchanges"])


@pytest.mark.parametrize("name, params, mesh", [("intdiv", {"n": 13, "m": 11}, (3, 2)),
                                                ("imatmul", {"ni": 11, "nj": 10, "nk": 7}, (4, 4))])
def test_int32_programs_run_on_the_functional_model(name, params, mesh, tmp_path):
    prog, _, _ = _case(name, params)
    compiled = mica.compile_affine(prog, mesh=mesh, target="wormhole")
    assert compiled.cost.cores > 1
    files = _check_run(compiled, tmp_path)
    if name == "intdiv":                  # C++'s own truncating / and %, on int32_t
        readers = "".join(t for p, t in files.items() if p.startswith("kernels/reader_"))
        assert " / " in readers and " % " in readers and "mica_idiv" not in readers


def test_nussinov_with_an_int_sequence_runs_on_the_functional_model(tmp_path):
    src = (Path(__file__).resolve().parents[1] / "frontend" / "kernels_int" / "nussinov-int.c").read_text()
    prog = from_c(src.replace("typedef char base;", "typedef int base;"), None, params={"n": 12})
    _check_run(mica.compile_affine(prog, mesh=(2, 2), target="wormhole"), tmp_path)


def test_mixed_int_and_float_statements(tmp_path):
    """``g = x / 2`` (integer division, then float), ``h = (float)x / 2``, ``r = f * x`` (a float product
    truncated into an int): C's conversions, on the generic path."""
    src = ("void f(int x[40], float f[40], float g[40], float h[40], int r[40]) {\n"
           "  for (int i = 0; i < 40; i++) {\n    g[i] = x[i] / 2;\n    h[i] = (float)x[i] / 2;\n"
           "    r[i] = f[i] * x[i];\n  }\n}\n")
    _check_run(mica.compile_affine(from_c(src), mesh=(2, 2), target="wormhole"), tmp_path)


@pytest.mark.parametrize("name, params, mesh", [("widen-sum", {"n": 17, "m": 10}, (3, 2)),
                                                ("nussinov-int", {"n": 12}, (2, 2))])
def test_narrow_integer_programs_run_on_the_functional_model(name, params, mesh, tmp_path):
    """int8 arrays held widened in Int32 tiles (host.cpp stages their values as int32 and back)."""
    prog, _, _ = _case(name, params)
    files = _check_run(mica.compile_affine(prog, mesh=mesh), tmp_path)        # WSE-2's plan, placed
    assert "static void stage_i8(std::vector<int8_t>& a" in files["host.cpp"]


def test_c_integer_semantics_run_on_the_functional_model(tmp_path):
    """tests/frontend's int-semantics kernel (its double array made float and its double literal an operand:
    Tenstorrent has no f64): promotions, wrapping stores and casts to int8 / uint8 / int16, truncating / and
    %, conversions. With the double literal the statement is refused, naming it."""
    src = ((Path(__file__).resolve().parents[1] / "frontend" / "kernels_int" / "int-semantics.c").read_text()
           .replace("double d[n]", "float d[n]"))
    with pytest.raises(EmitError, match=r"statement S6 stores a double value to an integer array"):
        render(mica.compile_affine(from_c(src, None, params={"n": 23}), mesh=(3, 2)))
    src = src.replace("d[i] * 3.5", "d[i] * f[i]")
    files = _check_run(mica.compile_affine(from_c(src, None, params={"n": 23}), mesh=(3, 2)), tmp_path)
    readers = "".join(t for p, t in files.items() if p.startswith("kernels/reader_"))
    assert "(int32_t)(int8_t)(" in readers and "(int32_t)(uint8_t)(" in readers and "(int32_t)(int16_t)(" in readers


def test_int_beside_bf16_runs(tmp_path):
    """Int32 tiles (4096 B) beside bf16 ones (2048 B): the bf16 product of a bf16 array and an int one on the
    generic path, each CB and DRAM buffer with its own page size."""
    src = "void f(__bf16 a[40], int n[40], __bf16 b[40]) {\n  for (int i = 0; i < 40; i++) b[i] = a[i] * n[i];\n}\n"
    files = _check_run(mica.compile_affine(from_c(src), mesh=(2, 2), target="wormhole"), tmp_path)
    cbs = {c["tensor"]: c for c in json.loads(files["plan.json"])["circular_buffers"] if c["kind"] == "tensor"}
    assert cbs["n"]["page_bytes"] == 4096 and cbs["a"]["page_bytes"] == 2048
