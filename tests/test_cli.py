"""The ``mica`` command line as a user meets it: help for every flag, ``--version``, the mesh following the
target, ``run`` checking against native C, preprocessing flags, ``--dtype``, and errors in the CLI's words."""

import json
from pathlib import Path

import pytest

import mica
from mica import cli
from mica.cli import main, parser
from mica.meshir.ir import step_blocks

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _subparsers(p):
    return next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction").choices


def test_every_flag_has_help_and_version_prints(capsys):
    p = parser()
    for name, sub in _subparsers(p).items():
        for action in sub._actions:
            assert action.help, f"mica {name} {action.option_strings or action.dest} has no help text"
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"mica {mica.__version__}"


def test_run_checks_the_mesh_against_native_c(capsys, tmp_path):
    assert main(["run", str(EXAMPLES / "gemm.c"), "-D", "NI=12", "-D", "NJ=10", "-D", "NK=9", "--mesh", "3x2"]) == 0
    out = capsys.readouterr().out
    assert "compiled kernel_gemm for 3x2 (wse2)" in out and "every output matches the native C" in out


def test_run_checks_a_float16_file_against_native_c(capsys):
    # _Float16 arrays: f16 in the emulator, the user's C compiled natively with GCC's _Float16
    assert main(["run", str(EXAMPLES / "gelu_f16.c"), "-D", "M=13", "-D", "N=10", "-D", "K=7",
                 "--mesh", "3x4"]) == 0
    out = capsys.readouterr().out
    assert "Y: max |mesh - reference|" in out and "every output matches the native C" in out


def test_run_says_when_the_outputs_differ(capsys, monkeypatch):
    real = cli.run_c

    def wrong(*a, **kw):                       # a reference that disagrees: the command must say so
        out = real(*a, **kw)
        out["C"][0, 0] += 1.0
        return out
    monkeypatch.setattr(cli, "run_c", wrong)
    assert main(["run", str(EXAMPLES / "gemm.c"), "-D", "NI=8", "-D", "NJ=8", "-D", "NK=8", "--mesh", "2x2"]) == 1
    out = capsys.readouterr().out
    assert "C: max |mesh - reference| = 1" in out and "DOES NOT MATCH" in out


def test_the_mesh_and_target_follow_the_target_and_the_back_end(capsys, tmp_path):
    src = str(EXAMPLES / "matmul_f32.c")
    assert main(["compile", src, "-D", "M=32", "-D", "N=32", "-D", "K=32", "--target", "wormhole"]) == 0
    assert "compiled matmul for 8x8 (wormhole)" in capsys.readouterr().out
    assert main(["compile", src, "-D", "M=32", "-D", "N=32", "-D", "K=32", "--emit", "metalium",
                 "--out", str(tmp_path / "tt")]) == 0
    out = capsys.readouterr().out
    assert "compiled matmul for 8x8 (wormhole)" in out and (tmp_path / "tt" / "host.cpp").is_file()
    assert main(["compile", src, "-D", "M=32", "-D", "N=32", "-D", "K=32"]) == 0
    assert "compiled matmul for 750x994 (wse2)" in capsys.readouterr().out


def test_demo_on_a_tenstorrent_target(capsys):
    assert main(["demo", "--target", "wormhole", "--size", "32"]) == 0
    out = capsys.readouterr().out
    assert "for mesh 8x8 (wormhole)" in out and "on a 8x8 mesh in the emulator" in out
    assert "result matches numpy" in out


def test_dtype_retypes_for_the_hardware_back_ends(capsys, tmp_path):
    src = str(EXAMPLES / "gemm.c")
    small = ["-D", "NI=8", "-D", "NJ=8", "-D", "NK=8", "--mesh", "2x2"]
    assert main(["compile", src, *small, "--emit", "csl", "--out", str(tmp_path / "a")]) == 2
    assert "add --dtype f32" in capsys.readouterr().err
    assert main(["compile", src, *small, "--dtype", "f32", "--emit", "csl", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "pe_program.csl").is_file()
    assert "[16]f32" in (tmp_path / "b" / "pe_program.csl").read_text()     # C is 4x4 f32 per core


def test_errors_speak_the_command_line(capsys, tmp_path):
    k = tmp_path / "k.c"
    k.write_text("void k(int n, double A[n]) { for (int i = 0; i < n; i++) A[i] = 2 * A[i]; }\n")
    assert main(["compile", str(k), "--mesh", "2x2"]) == 2
    err = capsys.readouterr().err
    assert "pass --param n=..." in err and "params=" not in err
    assert main(["compile", str(k), "--mesh", "2x2", "--param", "m=4"]) == 2
    assert "--param gives 'm'" in capsys.readouterr().err
    two = tmp_path / "two.c"
    two.write_text("void f(float A[4]) { A[0] = 1; }\nvoid g(float A[4]) { A[1] = 2; }\n")
    assert main(["compile", str(two), "--mesh", "2x2"]) == 2
    assert "defines 2 functions (f, g); say which one to compile with --function" in capsys.readouterr().err
    assert main(["compile", str(two), "--mesh", "2x2", "--function", "g"]) == 0


def test_preprocessor_flags(capsys, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "size.h").write_text("#define N 6\n")
    k = tmp_path / "k.c"
    k.write_text('#include "size.h"\nvoid k(float A[N][SCALE]) { for (int i = 0; i < N; i++) '
                 "for (int j = 0; j < SCALE; j++) A[i][j] = 2 * A[i][j]; }\n")
    assert main(["run", str(k), "-I", str(tmp_path / "inc"), "-D", "SCALE=5", "--mesh", "2x2"]) == 0
    assert "every output matches the native C" in capsys.readouterr().out
    assert main(["run", str(k), "-D", "SCALE=5", "--mesh", "2x2"]) == 2
    assert "k.c:1:" in capsys.readouterr().err          # the missing header, where it is included


def test_plot_writes_the_pictures_and_the_trace(capsys, tmp_path):
    import json

    import matplotlib.image
    out = tmp_path / "pics"
    assert main(["plot", str(EXAMPLES / "jacobi-2d.c"), "-D", "N=16", "-D", "TSTEPS=2", "--mesh", "2x2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "every output matches the native C" in printed
    for name in ("compute", "idle", "traffic", "sram", "placement"):
        img = matplotlib.image.imread(out / f"{name}.png")
        assert img.shape[0] > 100 and img.shape[1] > 100 and img.std() > 0, name      # a picture, not blank
        assert f"wrote {out / (name + '.png')}" in printed
    events = json.loads((out / "trace.json").read_text())["traceEvents"]
    computes = [e for e in events if e.get("ph") == "X" and e["name"].startswith("k_")]
    assert {e["tid"] for e in computes} and len(computes) >= 4      # every working core's kernel calls


def test_run_with_dtype_checks_against_the_retyped_program(capsys):
    assert main(["run", str(EXAMPLES / "gemm.c"), "-D", "NI=9", "-D", "NJ=7", "-D", "NK=5", "--mesh", "3x2",
                 "--dtype", "f32"]) == 0
    assert "every output matches the C of the program retyped to f32" in capsys.readouterr().out


#: At n = 120 the matrix (57.6 KB) fits no core of WSE-2: the searched plan is the sweep (at n = 30 one core is
#: faster: a step's few rows of work cost less than the chain through each step's owner).
TRISOLV = """void trisolv(float L[120][120], float x[120], float b[120]) {
  for (int i = 0; i < 120; i++) { x[i] = b[i];
    for (int j = 0; j < i; j++) x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i]; } }"""


def test_metalium_writes_the_step_owner_multicasts_of_the_searched_plan(capsys, tmp_path):
    # Searched for 8x8 WSE-2, trisolv multicasts x[j] from its owner at every step: the Metalium back end writes
    # that plan (the root per step by floor division), with no fallback to one core.
    k = tmp_path / "trisolv.c"
    k.write_text(TRISOLV)
    assert main(["compile", str(k), "--mesh", "8x8", "--target", "wse2", "--emit", "metalium",
                 "--out", str(tmp_path / "metalium")]) == 0
    out = capsys.readouterr()
    assert "one core instead" not in out.err and "one-core" not in out.out
    assert "mica_floord(v_t, " in (tmp_path / "metalium" / "kernels" / "reader_c0.cpp").read_text()


@pytest.mark.parametrize("target", ["wse2", "wse3"])
def test_csl_writes_step_owner_multicasts_without_falling_back(capsys, tmp_path, target):
    # Searched for 8x8, trisolv runs column by column with x[j] multicast from its owner: the CSL back end
    # writes that plan itself (WSE-3 relays it hop by hop), with no fall-back to one core.
    k = tmp_path / "trisolv.c"
    k.write_text(TRISOLV)
    assert main(["compile", str(k), "--mesh", "8x8", "--target", target, "--emit", "csl",
                 "--out", str(tmp_path / "csl")]) == 0
    out = capsys.readouterr()
    assert "instead" not in out.err and "one-core" not in out.out
    plan = json.loads((tmp_path / "csl" / "plan.json").read_text())
    searched = mica.compile_affine(TRISOLV, mesh=(8, 8), target=target)
    assert searched.cost.cores > 1 and step_blocks(searched.mesh_program)
    assert any(ch["pattern"] == "x_panel0->x_recv" for ch in plan["channels"]) \
        or plan.get("relayed_multicasts") == ["x_panel0->x_recv"]
