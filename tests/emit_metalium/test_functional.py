"""The emitted host program and kernels, run: compiled with g++ against a functional model of the API
subset (``sim/mica_tt_sim.hpp``: threads per RISC-V, FIFO circular buffers, atomic semaphores, NoC copies
between per-core L1s, tile-layout compute), then run; host.cpp stages the inputs, runs the program,
reads the outputs back and compares them with the program's sequential reference, exactly as it would on
a device. This checks what the generated code computes and that every handshake and turn completes; it
says nothing about the real chip's timing or about fidelity to tt-metal beyond the documented semantics
the model implements."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from mica.emit_metalium.api import CHECK_TOLERANCE

from .programs import BF16, HAVE_HALO, PHASE, compiled, rendered

GXX = shutil.which("g++")
SIM = Path(__file__).parent / "sim"
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def unity_source(files: dict[str, str]) -> str:
    """One translation unit holding every kernel in its own namespace, registered under its path."""
    plan = json.loads(files["plan.json"])
    sem_id = {s["name"]: s["id"] for s in plan["semaphores"]}
    streamed = sum(1 << c["index"] for c in plan["circular_buffers"] if c.get("slots", 1) > 1)
    out = ['#include "mica_tt_sim.hpp"', "#include <stdint.h>", '#include "kernels/mica_mesh.h"',
           '#include "kernels/mica_dataflow.h"',
           f"static const int streamed_ = (mica_sim::streamed_cbs = {streamed}u, 0);  // double buffers"]
    for path, k in sorted(plan["kernels"].items()):
        name = Path(path).stem
        ct = [str(sem_id[n]) for n in k["compile_arg_names"]] + ["0"]
        out += [f"namespace k_{name} {{", f"static constexpr uint32_t ct_[] = {{{', '.join(ct)}}};",
                "#define get_compile_time_arg_val(i) (ct_[i])", f'#include "{path}"', "#undef get_compile_time_arg_val",
                "}"]
        # every kernel, compute included, has the entry point kernel_main
        out.append(f'static const int reg_{name} = (mica_sim::registry()["{path}"] = &k_{name}::kernel_main, 0);')
    return "\n".join(out) + "\n"


#: The flags every build against the model uses (the precompiled header must be built with the same ones).
FLAGS = ["-std=c++17", "-O0", "-pthread"]


@lru_cache(maxsize=None)
def _precompiled() -> list[str]:
    """Include flags that put a precompiled ``mica_tt_sim.hpp`` (built once per test process, in a directory
    of its own beside a copy of the header) first in both translation units: the model's header and the
    standard library it pulls in are most of a build's time (2.7 s -> 1.9 s for the K-tree GEMV). Empty when
    the header does not precompile; g++ itself falls back to the header when the .gch does not match."""
    where = Path(tempfile.mkdtemp(prefix="mica_tt_pch_"))
    shutil.copy(SIM / "mica_tt_sim.hpp", where / "mica_tt_sim.hpp")
    r = subprocess.run([GXX, *FLAGS, "-x", "c++-header", str(where / "mica_tt_sim.hpp"), "-o",
                        str(where / "mica_tt_sim.hpp.gch")], capture_output=True, text=True)
    return ["-I", str(where), "-include", "mica_tt_sim.hpp"] if r.returncode == 0 else []


def build_against_model(out: Path, exe: Path) -> subprocess.CompletedProcess:
    """g++ of ``out``'s unity.cpp and host.cpp against the model into ``exe``."""
    return subprocess.run([GXX, *FLAGS, *_precompiled(), "-I", str(SIM), "-I", str(out), str(out / "unity.cpp"),
                           str(out / "host.cpp"), "-o", str(exe)], capture_output=True, text=True)


def run_emitted(files: dict[str, str], out: Path, timeout: float = 120) -> tuple[int, str]:
    """(exit code, stdout) of the emitted program built against the model."""
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    (out / "unity.cpp").write_text(unity_source(files))
    exe = out / "program"
    r = build_against_model(out, exe)
    assert r.returncode == 0, r.stderr[:4000]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, cwd=out)
    return r.returncode, r.stdout + r.stderr


SLOW = pytest.mark.slow


# The default run covers ring shifts with landing buffers (interleaved matmul) and multicasts, shifts,
# element-wise adds and fills (gemv K-tree); ``-m slow`` runs the rest (about 4 s each).
@pytest.mark.parametrize("name", ["matmul_interleaved_wormhole", "gemv_ktree_wormhole",
                                  *(["jacobi2d_wormhole"] if HAVE_HALO else []),
                                  "mm3_side_by_side_wormhole",
                                  pytest.param("line_move_east_wormhole", marks=SLOW),
                                  pytest.param("mvt_side_by_side_wormhole", marks=SLOW),
                                  "matmul_summa_8x8_wormhole", "chain_streamed_wormhole",
                                  pytest.param("line_move_south_wormhole", marks=SLOW),
                                  pytest.param("chain3_wormhole", marks=SLOW),
                                  pytest.param("matmul_summa_blackhole", marks=SLOW),
                                  pytest.param("mm2_wormhole", marks=SLOW),
                                  pytest.param("matmul_partial_wormhole", marks=SLOW),
                                  pytest.param("triangle_wormhole", marks=SLOW),
                                  "stencil_forms_wormhole", "trisolv_step_owner_wormhole",
                                  pytest.param("triangle_sqrt_wormhole", marks=SLOW),
                                  "attention_wormhole", "sweeps_phase_wormhole", "gemv_levels_wormhole",
                                  "kv_append_wormhole", "online_attention_wormhole", "math_calls_wormhole",
                                  pytest.param("sweeps_phase_blackhole", marks=SLOW),
                                  pytest.param("gemv_phase_wormhole", marks=SLOW),
                                  pytest.param("attention_8x8_wormhole", marks=SLOW),
                                  pytest.param("attention_blackhole", marks=SLOW)])
def test_emitted_program_computes_the_reference(name, tmp_path):
    rc, out = run_emitted(rendered(name), tmp_path)
    assert rc == 0, out
    lines = [ln for ln in out.splitlines() if "max |device - reference|" in ln]
    assert lines, out
    for ln in lines:
        m = re.search(r"= (\S+) \(scale (\S+)\) (\w+)", ln)
        worst, scale = float(m.group(1)), float(m.group(2))
        assert m.group(3) == "ok" and worst <= 1e-5 * scale, ln     # the model computes in fp32
    assert sorted(ln.split(":")[0] for ln in lines) == sorted(compiled(name).program.outputs)


@SLOW
def test_a_miscounted_multicast_hangs_or_aborts(tmp_path):
    """The model is not vacuous: a multicast announcing one receiver too many waits forever for a ready
    signal that never comes (a hang on the device too)."""
    files = dict(rendered("matmul_summa_wormhole"))
    files["kernels/reader_c0.cpp"] = files["kernels/reader_c0.cpp"].replace(
        "(uint32_t)((x1 - x0) * (y1 - y0))", "(uint32_t)((x1 - x0) * (y1 - y0) + 1)")
    with pytest.raises(subprocess.TimeoutExpired):
        run_emitted(files, tmp_path, timeout=20)


def test_placed_programs_hold_blocks_away_from_core_0():
    """The side-by-side and line-move programs run above really are placed: mvt's boxes with a non-zero
    origin reach host.cpp; the line move's second operator holds t on cores away from column 0 (its box
    has no x dimension: the region places it). Semaphores stay within the 8 per core."""
    for name in ("mvt_side_by_side_wormhole", "line_move_east_wormhole"):
        c = compiled(name)
        assert c.schedule.placed
        assert len(json.loads(rendered(name)["plan.json"])["semaphores"]) <= 8
    mvt = compiled("mvt_side_by_side_wormhole")
    origins = {d.origin for t in mvt.mesh_program.tensors for d in t.box} - {0}
    assert origins
    assert any(f", {o}}}" in rendered("mvt_side_by_side_wormhole")["host.cpp"] for o in origins)
    line = compiled("line_move_east_wormhole").mesh_program
    assert any(t.array == "t" and t.region.x0 == 5 for t in line.tensors)


def test_later_phases_reuse_valid_flags_when_semaphores_run_short():
    """3mm side by side needs 10 semaphores with one ready/valid pair per op geometry; G = E F's multicasts
    (the last phase) take the valid flags of E = A B's ring (the first), never its ready counters."""
    plan = json.loads(rendered("mm3_side_by_side_wormhole")["plan.json"])
    assert len(plan["semaphores"]) == 8
    users: dict[str, set] = {}
    for e in plan["exchanges"]:
        for s in e["semaphores"]:
            users.setdefault(s, set()).add(e["exchange"])
    shared = {s for s, ex in users.items() if {"ring_shift", "step_S5"} <= ex}
    assert shared and all(s.endswith("_valid") for s in shared)


def test_a_wrong_tile_index_changes_the_result(tmp_path):
    files = dict(rendered("matmul_partial_wormhole"))
    path = "kernels/compute_c0.cpp"
    files[path] = files[path].replace("mt * 2 + kt, kt * 1 + nt", "mt * 2 + kt, (kt ^ 1) * 1 + nt")  # B's k tiles swapped
    assert files[path] != rendered("matmul_partial_wormhole")[path], "the mutation did not apply"
    rc, out = run_emitted(files, tmp_path)
    assert rc == 1 and "MISMATCH" in out, out


def _check_lines(out: str) -> list[tuple[float, float, str]]:
    found = []
    for ln in out.splitlines():
        m = re.search(r"= (\S+) \(scale (\S+)\) (\w+)", ln) if "max |device - reference|" in ln else None
        if m:
            found.append((float(m.group(1)), float(m.group(2)), m.group(3)))
    return found


@pytest.mark.parametrize("name", BF16)
def test_bf16_programs_compute_the_reference(name, tmp_path):
    """bf16 programs: Float16_b tiles in L1 and DRAM (staged through the host's bfloat16), computed by a model
    that unpacks them exactly, accumulates in an fp32 Dst and rounds when it packs; the host's check holds
    within the bf16 tolerance. The generic path (the triangle) rounds as the reference does: exact."""
    files = rendered(name)
    assert "tt::DataFormat::Float16_b" in files["host.cpp"] and "std::vector<bfloat16> staged" in files["host.cpp"]
    rc, out = run_emitted(files, tmp_path)
    assert rc == 0, out
    checks = _check_lines(out)
    assert len(checks) == len(compiled(name).program.outputs), out
    if name.startswith("attention"):
        # its arithmetic runs on the generic path (scalar loops that round as the reference does): exact
        kinds = {op["kind"] for op in json.loads(files["plan.json"])["tile_ops"]}
        assert "generic" in kinds and not kinds & {"matmul", "eltwise", "scalar"}, kinds
    for worst, scale, verdict in checks:
        assert verdict == "ok" and worst <= CHECK_TOLERANCE["bf16"] * scale, out
        if name.startswith(("triangle", "attention")):
            assert worst == 0.0, out
        else:
            assert worst > 0.0, out      # rounded at other points than the reference: not a float copy of it


def test_a_bf16_tile_read_as_float32_fails(tmp_path):
    """The model is not vacuous about formats: declaring the bf16 CBs Float32 makes the compute kernel read
    pairs of bf16 values as floats, and the check fails."""
    files = dict(rendered("matmul_summa_bf16_wormhole"))
    files["host.cpp"] = files["host.cpp"].replace("tt::DataFormat::Float16_b", "tt::DataFormat::Float32")
    rc, out = run_emitted(files, tmp_path)
    assert rc == 1 and "MISMATCH" in out, out


@pytest.mark.parametrize("name", PHASE)
def test_phase_loop_programs_run_one(name):
    """The phase-loop programs above are what they say: their plans loop around whole operators (so the
    functional runs check a loop the kernels' turns go round, with ``t`` read from the step loops inside)."""
    from mica.meshir.ir import phase_loops
    (loop,) = phase_loops(compiled(name).mesh_program)
    assert loop.count >= 2
    assert f"for (int32_t v_{loop.var} = 0; v_{loop.var} < {loop.count}; ++v_{loop.var})" in rendered(name)["kernels/reader_c0.cpp"]
