"""``mica compile kernel.c --emit csl --out DIR``."""

import json

import pytest

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


def test_cli_emits_the_searched_side_by_side_plan(tmp_path, capsys):
    """mvt's two gemvs side by side (the search's choice on 6x4) are written as they are: boxes whose
    block 0 is away from core (0, 0)."""
    import samples
    src = tmp_path / "mvt.c"
    src.write_text(samples.mvt(24, "float"))
    out = tmp_path / "csl"
    assert main(["compile", str(src), "--mesh", "6x4", "--emit", "csl", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "side by side" in captured.out and "one after another instead" not in captured.err
    plan = json.loads((out / "plan.json").read_text())
    assert any(d[6] for b in plan["buffers"] for d in b["dims"])


def test_cli_falls_back_when_the_back_end_refuses_a_placed_plan(tmp_path, capsys, monkeypatch):
    """The fallback itself, cheaply: a CSL back end that refuses every placed plan makes the CLI print its
    reason and write mvt's operators one after another (plans it accepts are written as searched)."""
    import samples
    from mica.errors import EmitError
    import mica.emit_csl as csl
    real = csl.emit

    def picky(compiled, out):
        if compiled.schedule.placed:
            raise EmitError("refusing a placed plan (test)")
        return real(compiled, out)
    monkeypatch.setattr(csl, "emit", picky)
    src = tmp_path / "mvt.c"
    src.write_text(samples.mvt(24, "float"))
    out = tmp_path / "csl"
    assert main(["compile", str(src), "--mesh", "6x4", "--emit", "csl", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "cannot write the searched plan (refusing a placed plan (test)); compiling the operators one after" \
        in captured.err
    assert "side by side" not in captured.out
    assert not any(d[6] for b in json.loads((out / "plan.json").read_text())["buffers"] for d in b["dims"])


@pytest.mark.slow
def test_cli_falls_back_to_operators_one_after_another_when_the_plan_is_refused(tmp_path, capsys):
    """3mm on 8x4 puts E = A B and F = C D side by side; WSE-3 binds each fabric queue to one colour for
    the whole program, and the cores of the first slab receive on more colours (a 4x4 interleaved ring,
    the relayed multicasts, the conveyor) than they have queues: the CLI says so and writes the operators
    one after another."""
    import samples
    src = tmp_path / "mm3.c"
    src.write_text(samples.mm3(8).replace("double", "float"))
    out = tmp_path / "csl"
    assert main(["compile", str(src), "--mesh", "8x4", "--target", "wse3", "--emit", "csl", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "cannot write the searched plan" in captured.err and "fabric queues" in captured.err
    validate_dir(out)
    plan = json.loads((out / "plan.json").read_text())
    assert not any(d[6] for b in plan["buffers"] for d in b["dims"])
