"""``prog.emit("c", dir)`` and ``mica compile``: the files written are the ones the emulator runs."""

import json

import pytest

import mica
from mica.cli import main
from mica.errors import EmitError

GEMM = """
void gemm(int ni, int nj, int nk, double alpha, double beta,
          double C[24][20], double A[24][28], double B[28][20]) {
  for (int i = 0; i < ni; i++) {
    for (int j = 0; j < nj; j++) C[i][j] *= beta;
    for (int k = 0; k < nk; k++)
      for (int j = 0; j < nj; j++) C[i][j] += alpha * A[i][k] * B[k][j];
  }
}
"""


def test_emit_c_writes_the_emulated_kernels(tmp_path):
    prog = mica.compile_affine(mica.ops.matmul(24, 20, 28), mesh=(3, 2))
    paths = prog.emit("c", tmp_path / "out")
    names = sorted(p.name for p in paths)
    assert names == ["kernels.c", "meshir.txt", "schedule.json"]
    assert (tmp_path / "out" / "kernels.c").read_text().strip() == prog.kernel_module.source.strip()
    back = mica.Schedule.from_json((tmp_path / "out" / "schedule.json").read_text())
    assert back == prog.schedule


def test_emit_unknown_backend_is_an_emit_error(tmp_path):
    prog = mica.compile_affine(mica.ops.add((8, 8)), mesh=(2, 2))
    with pytest.raises(EmitError, match="unknown back end 'verilog'"):
        prog.emit("verilog", tmp_path)


def test_cli_compile_emits_c(tmp_path, capsys):
    src = tmp_path / "gemm.c"
    src.write_text(GEMM)
    out = tmp_path / "gemm_c"
    rc = main(["compile", str(src), "--param", "ni=24", "--param", "nj=20", "--param", "nk=28",
               "--mesh", "3x2", "--emit", "c", "--out", str(out)])
    assert rc == 0
    assert (out / "kernels.c").exists()
    sched = json.loads((out / "schedule.json").read_text())
    assert sched["mesh"] == [3, 2]
    assert "wrote" in capsys.readouterr().out


def test_cli_compile_reports_located_errors(tmp_path, capsys):
    src = tmp_path / "bad.c"
    src.write_text("void f(double A[8]) {\n  for (int i = 0; i < 8; i++)\n    A[i*i] = 1.0;\n}\n")
    rc = main(["compile", str(src), "--mesh", "2x2"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "NotAffineError" in err and "bad.c:3" in err


def test_cli_detail_prints_the_relation_behind_an_error(tmp_path, capsys):
    src = tmp_path / "far.c"
    src.write_text("void far(double A[40], double B[40]) {\n  for (int i = 0; i < 34; i++) B[i] = A[i + 6];\n}\n")
    with pytest.raises(SystemExit) as info:          # argparse refuses it, listing the targets
        main(["compile", str(src), "--mesh", "10x1", "--target", "nosuchtarget"])
    assert info.value.code == 2 and "invalid choice: 'nosuchtarget' (choose from 'blackhole'" in capsys.readouterr().err
    from mica.errors import ScheduleError
    err = ScheduleError("short", detail="{ S[i] -> core[x] }")
    assert err.render() == "short" and err.render(detailed=True) == "short\n{ S[i] -> core[x] }"
