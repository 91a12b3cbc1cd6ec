"""``mica compile kernel.c --emit csl --out DIR``."""

import json

from mica.cli import main
from mica.emit_csl.validate import validate_dir

GEMM = """
void gemm(float C[16][16], float A[16][16], float B[16][16]) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < 16; k++) C[i][j] += A[i][k] * B[k][j];
    }
}
"""


def test_cli_emits_a_valid_csl_set(tmp_path, capsys):
    src = tmp_path / "gemm.c"
    src.write_text(GEMM)
    out = tmp_path / "csl"
    rc = main(["compile", str(src), "--mesh", "4x4", "--target", "wse3", "--emit", "csl", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    for name in ("layout.csl", "pe_program.csl", "run.py", "commands.sh", "plan.json", "README.md"):
        assert (out / name).exists()
    validate_dir(out)
    plan = json.loads((out / "plan.json").read_text())
    assert plan["arch"] == "wse3" and plan["mesh"] == [4, 4]
    assert "--arch=wse3" in (out / "commands.sh").read_text() and "--fabric-dims=11,6" in (out / "commands.sh").read_text()


def test_cli_reports_emit_errors(tmp_path, capsys):
    src = tmp_path / "gemm.c"
    src.write_text(GEMM.replace("float", "double").replace("0.0f", "0.0"))
    rc = main(["compile", str(src), "--mesh", "2x2", "--emit", "csl", "--out", str(tmp_path / "o")])
    assert rc != 0
    assert "EmitError" in capsys.readouterr().err
