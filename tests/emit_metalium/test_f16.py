"""f16 (IEEE half) programs in the Metalium back end: Float16 tiles for the tile routines (the FPU unpacks them
exactly, packs rounded to nearest even), their uint16_t bits on the generic path's RISC-V converted in
software (``mica_f16_to_f32`` / ``mica_f32_to_f16``, :data:`mica.codeprint.half.F16_BITS_C`: the RISC-V has
no ``_Float16``), and ``host.cpp`` staging ``_Float16`` values as those bits. The conversions are checked
against GCC's ``_Float16`` on a sweep of every 97th f32 and every f16; the programs are built against the
functional model and run, each output within host.cpp's tolerance of the sequential reference, an f16 k-NN
database beside f32 queries (tiles of two sizes) included."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import mica
from mica.affine.from_c import from_c
from mica.codeprint.half import F16_BITS_C
from mica.emit_metalium import render
from mica.models.knn import KnnConfig, knn_source

from .test_functional import GXX, run_emitted
from .test_syntax import syntax_errors

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

SWEEP = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  long bad = 0, n = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    _Float16 x; uint16_t hb = (uint16_t)h; memcpy(&x, &hb, 2);
    float want = (float)x, got = mica_f16_to_f32(hb);
    uint32_t a, b; memcpy(&a, &want, 4); memcpy(&b, &got, 4);
    bad += want == want ? a != b : got == got;
    ++n;
  }
  for (uint64_t i = 0; i < (1ull << 32); i += 97) {
    uint32_t u = (uint32_t)i; float f; memcpy(&f, &u, 4);
    _Float16 w = (_Float16)f; uint16_t wb; memcpy(&wb, &w, 2);
    uint16_t g = mica_f32_to_f16(f);
    bad += f == f ? wb != g : (g & 0x7fffu) <= 0x7c00u;
    ++n;
  }
  printf("%ld values, %ld wrong\n", n, bad);
  return bad != 0;
}
"""


def test_software_conversions_match_float16(tmp_path):
    """Every f16 to f32 exactly, and every 97th f32 to f16 rounded as ``(_Float16)f`` rounds it: subnormal
    results, overflow to infinity, ties to even; a NaN stays a NaN."""
    (tmp_path / "sweep.cpp").write_text("#include <stdint.h>\n" + F16_BITS_C + SWEEP)
    exe = tmp_path / "sweep"
    r = subprocess.run([GXX, "-O2", "-std=c++17", str(tmp_path / "sweep.cpp"), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and re.search(r"^(\d+) values, 0 wrong", r.stdout), r.stdout
    assert int(r.stdout.split()[0]) > 44_000_000


GENERIC = """
void f16gen(_Float16 x[40][24], _Float16 m[40], _Float16 y[40][24]) {
  for (int i = 0; i < 40; i++) {
    m[i] = -INFINITY;
    for (int j = 0; j < 24; j++)
      m[i] = fmaxf(m[i], x[i][j]);
  }
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 24; j++)
      y[i][j] = expf(x[i][j] - m[i]) + (_Float16)(j * 0.1f);
}
"""


@pytest.mark.parametrize("name", ["matmul", "gemv", "generic"])
def test_f16_programs_run_on_the_functional_model(name, tmp_path):
    """A matmul and a GEMV on the FPU's Float16 tiles, and a row max, exponentials and ``(_Float16)``
    conversions on the generic path; WSE-2's 4x4 plans, placed on a Wormhole."""
    prog = {"matmul": lambda: mica.ops.matmul(64, 48, 40, "f16"), "gemv": lambda: mica.ops.gemv(64, 96, "f16"),
            "generic": lambda: from_c(GENERIC)}[name]()
    compiled = mica.compile_affine(prog, mesh=(4, 4))
    assert compiled.cost.cores > 1
    files = render(compiled)
    assert syntax_errors(files, tmp_path / "syntax") == {}
    assert re.search(r"DataFormat::Float16\b", files["host.cpp"])      # IEEE half tiles (not Float16_b)
    if name == "generic":
        readers = "".join(t for p, t in files.items() if p.startswith("kernels/reader_"))
        assert "mica_f32_to_f16(" in readers and "mica_f16_to_f32(" in readers
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    lines = re.findall(r"^(\w+): max \|device - reference\| = (\S+) \(scale (\S+)\) ok$", out, re.M)
    assert sorted(n for n, _, _ in lines) == sorted(compiled.program.outputs), out


# CI: l2 (inner products run on the functional model in test_int_arrays.py); ip with -m slow
@pytest.mark.parametrize("metric, k, mesh", [("l2", 2, (3, 2)), pytest.param("ip", 1, (4, 4), marks=pytest.mark.slow)])
def test_knn_over_an_f16_database_runs(metric, k, mesh, tmp_path):
    """k-NN with the database stored as f16 beside f32 queries and distances and int32 answers: the f16 rows in
    Float16 circular buffers and DRAM pages of 2048 B (the f32 tiles 4096 B), every kernel touching them on the
    generic path (the tile routines keep the program's one f32 format)."""
    cfg = KnnConfig(n=40, dim=6, batch=3, k=k, metric=metric, dtype="f16")
    compiled = mica.compile_affine(from_c(knn_source(cfg), "knn"), mesh=mesh)
    assert compiled.cost.cores > 1
    files = render(compiled)
    assert syntax_errors(files, tmp_path / "syntax") == {}
    plan = json.loads(files["plan.json"])
    cbs = {c["tensor"]: c for c in plan["circular_buffers"] if c["kind"] == "tensor"}
    assert cbs["db"]["data_format"] == "tt::DataFormat::Float16" and cbs["db"]["page_bytes"] == 2048
    assert cbs["d"]["data_format"] == "tt::DataFormat::Float32" and cbs["d"]["page_bytes"] == 4096
    assert "dram_config_2048" in files["host.cpp"] and "static void stage_f16(std::vector<_Float16>& a" in files["host.cpp"]
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    assert re.search(r"^idx: 0 of \d+ elements differ from the reference \(exact\) ok$", out, re.M), out
    assert re.search(r"^dist: max \|device - reference\| = \S+ \(scale \S+\) ok$", out, re.M), out


def test_gelu_example_runs_with_its_tanh_in_software(tmp_path):
    """examples/gelu_f16.c (a matmul, then GELU's tanh form, in _Float16) runs on the functional model: tanhf on
    the data-movement RISC-V is ``mica_tanhf`` (double precision in software, rounded once), the f16 results
    within the f16 tolerance of the host's reference."""
    src = (Path(__file__).resolve().parents[2] / "examples" / "gelu_f16.c").read_text()
    compiled = mica.compile_affine(from_c(src), mesh=(2, 2), target="wormhole")
    files = render(compiled)
    assert "mica_tanhf(" in "".join(t for p, t in files.items() if p.startswith("kernels/reader"))
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    lines = re.findall(r"^(\w+): max \|device - reference\| = \S+ \(scale \S+\) (\w+)$", out, re.M)
    assert sorted(n for n, _ in lines) == sorted(compiled.program.outputs), out
    assert all(v == "ok" for _, v in lines), out
