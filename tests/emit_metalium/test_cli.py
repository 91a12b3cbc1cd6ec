"""``mica compile kernel.c --emit metalium --target wormhole --mesh 4x4 --out DIR`` from the command line."""

from __future__ import annotations

import json
import shutil
import subprocess


from mica.cli import main
from mica.emit_metalium import INCLUDE_DIR
from mica.emit_metalium.validate import validate_dir

KERNEL = """
void gemm(int n, float A[64][64], float B[64][64], float C[64][64]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      C[i][j] = 0;
      for (int k = 0; k < n; k++) C[i][j] += A[i][k] * B[k][j];
    }
}
"""


def test_compile_emits_metalium(tmp_path, capsys):
    src = tmp_path / "kernel.c"
    src.write_text(KERNEL)
    out = tmp_path / "out"
    rc = main(["compile", str(src), "--param", "n=64", "--emit", "metalium", "--target", "wormhole",
               "--mesh", "4x4", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert f"wrote {out / 'host.cpp'}" in printed
    plan = json.loads((out / "plan.json").read_text())
    assert plan["arch"] == "wormhole" and plan["mesh"] == [4, 4]
    validate_dir(out, l1_bytes=plan["l1_bytes_per_core"])
    if shutil.which("g++"):
        for f in [out / "host.cpp", *sorted((out / "kernels").glob("*.cpp"))]:
            r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-I", str(INCLUDE_DIR), "-I",
                                str(out / "kernels"), str(f)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr


def test_compile_reports_a_mesh_too_large_for_the_device(tmp_path, capsys):
    src = tmp_path / "kernel.c"
    src.write_text(KERNEL)
    rc = main(["compile", str(src), "--param", "n=64", "--emit", "metalium", "--target", "wse2",
               "--mesh", "12x12", "--out", str(tmp_path / "out")])
    assert rc == 2
    assert "larger than the wormhole Tensix grid of 8x8" in capsys.readouterr().err
