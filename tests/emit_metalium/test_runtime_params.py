"""Runtime parameters in the Metalium back end: host.cpp takes each value as an argument ``<name>=<value>``
(checked against its declared range), passes it as the last runtime arg of every reader and compute kernel
(``SetRuntimeArgs``), and the kernels read ``rp_<name> = get_arg_val<uint32_t>(i)`` in their loop bounds,
guards and subscripts. The emitted files compile against the API header and run in the functional model
at three values, matching the sequential reference host.cpp runs and the C compiled natively."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

import mica
from mica.emit_metalium import render
from mica.testing import run_c

import samples

from .test_functional import build_against_model, run_emitted, unity_source
from .test_syntax import syntax_errors

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

#: A row the run selects is read (a gather from the row's owner), rank 2.
ROPE = """
#define T 16
#define H 8
#define E 16
void rope(int pos, float cs[T][E], float sn[T][E], float q[H][E], float qi[H][E], float qr[H][E]) {
  for (int h = 0; h < H; h++)
    for (int e = 0; e < E; e++)
      qr[h][e] = q[h][e] * cs[pos][e] - qi[h][e] * sn[pos][e];
}
"""

#: A row the run selects is written (a KV-cache append), and a reduction bounded by l <= pos.
APPEND = samples.RUNTIME_APPEND

#: A condition on the parameter alone: a whole-box tile routine (add_tiles) the compute kernel guards.
GATE = """
#define N 64
void gate(int pos, float a[N][N], float b[N][N], float c[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (pos >= 8) c[i][j] = a[i][j] + b[i][j];
}
"""

# (source, mesh, target compiled for, range of pos, values run, the kernel kind reading rp_pos)
CASES = {"rope": (ROPE, (4, 4), "wormhole", (0, 16), (0, 9, 15), "reader"),
         "append": (APPEND, (4, 4), "wse2", (0, 16), (0, 6, 15), "reader"),
         "gate": (GATE, (2, 2), "wormhole", (0, 16), (0, 9, 15), "compute")}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    src, mesh, target, rng, values, reads = CASES[request.param]
    prog = mica.compile_affine(src, mesh=mesh, runtime={"pos": rng}, target=target)
    assert prog.cost.cores > 1
    files = render(prog)
    out = tmp_path_factory.mktemp(request.param)
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    (out / "unity.cpp").write_text(unity_source(files))
    # host.cpp also prints its random inputs (before the run) and the device's outputs (after the check), so
    # the test can run the native C on the same inputs
    host = files["host.cpp"]
    ins = "".join(f'    for (float v : arr_{a}) std::printf("in {a} %.9g\\n", v);\n' for a in prog.program.inputs)
    dump = "".join(f'    for (float v : dev_{a}) std::printf("out {a} %.9g\\n", v);\n' for a in prog.program.outputs)
    for anchor, extra in (("    // Run: the program as a workload", ins), ("    mesh_device->close();\n    return bad", dump)):
        assert host.count(anchor) == 1
        host = host.replace(anchor, extra + anchor)
    (out / "host.cpp").write_text(host)
    exe = out / "program"
    r = build_against_model(out, exe)
    assert r.returncode == 0, r.stderr[:4000]
    return src, prog, files, exe, rng, values, reads


def test_the_value_is_a_runtime_arg_of_the_readers_and_computes(case, tmp_path):
    _, prog, files, _, _, _, reads = case
    plan = json.loads(files["plan.json"])
    for path, k in plan["kernels"].items():
        assert (k["runtime_arg_names"][-1] == "rp_pos") == ("writer_" not in path), path
        if "writer_" not in path:
            i = k["runtime_arg_names"].index("rp_pos")
            assert f"const int32_t rp_pos = (int32_t)get_arg_val<uint32_t>({i});" in files[path]
    assert "int main(int argc, char** argv) {" in files["host.cpp"]
    assert re.search(r"SetRuntimeArgs\(program, reader_c0, core, \{.*\(uint32_t\)rp_pos\}\);", files["host.cpp"])
    # beyond its declaration and (void) use, the value is read in a bound, guard or subscript
    assert any(len(re.findall(r"\brp_pos\b", files[p])) > 2 for p in files if p.startswith(f"kernels/{reads}_"))
    assert syntax_errors(files, tmp_path) == {}


def _run(exe, *args):
    r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120, cwd=exe.parent)
    return r.returncode, r.stdout + r.stderr


def test_the_program_computes_the_reference_at_each_value(case):
    src, prog, _, exe, _, values, _ = case
    outs = {}
    for v in values:
        rc, out = _run(exe, f"pos={v}")
        assert rc == 0, out
        checks = [ln for ln in out.splitlines() if "max |device - reference|" in ln]
        assert sorted(ln.split(":")[0] for ln in checks) == sorted(prog.program.outputs), out
        for ln in checks:
            m = re.search(r"= (\S+) \(scale (\S+)\) (\w+)", ln)
            assert m.group(3) == "ok" and float(m.group(1)) <= 1e-5 * float(m.group(2)), ln
        def dumped(kind, a):
            return np.array([float(ln.split()[2]) for ln in out.splitlines() if ln.startswith(f"{kind} {a} ")],
                            np.float32).reshape(prog.program.user_shape(a))
        got = {a: dumped("out", a) for a in prog.program.outputs}
        native = run_c(src, None, {a: dumped("in", a) for a in prog.program.inputs}, {"pos": v})
        for k, g in got.items():
            np.testing.assert_allclose(g, native[k], rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(native[k]).max())))
        outs[v] = got
    a, b = outs[values[0]], outs[values[-1]]
    assert any(not np.allclose(a[k], b[k]) for k in a), "the value changes nothing"


def test_a_value_outside_its_range_or_an_unknown_argument_is_refused(case):
    _, _, _, exe, (lo, hi), _, _ = case
    for bad in (f"pos={hi}", f"pos={lo - 1}", "pos=3x", "pos=", "other=1"):
        rc, out = _run(exe, bad)
        assert rc == 2 and ("declared range" in out or "unknown argument" in out), (bad, out)


def test_every_api_name_of_the_runtime_program_has_a_declaration(case, tmp_path):
    """The name-by-name check of test_api_names.py, on a program with a runtime parameter."""
    from .test_api_names import _match, scanned_names, trace
    files = case[2]
    used, errors = trace(files, tmp_path)
    assert errors == "" and "get_arg_val" in used and "SetRuntimeArgs" in used
    missing = [n for n in sorted(set(scanned_names(files)) | set(used)) if not _match(n, used)]
    assert missing == []


def test_a_kept_input_vector_loaded_onto_every_line_computes_the_reference(tmp_path):
    """A kept, read-only input vector (MeshGEMV's x) is staged once onto every line of cores that reads it, not
    multicast from line 0 each run: host.cpp writes each core's block, and the program computes the
    reference in the functional model."""
    prog = mica.compile_affine(mica.ops.gemv(37, 29), mesh=(3, 5), resident=("A", "x"), target="wormhole")
    assert prog.schedule.home("x").pin == ()
    rc, out = run_emitted(render(prog), tmp_path)
    assert rc == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("y: max |device - reference|"))
    assert line.endswith(" ok"), line
