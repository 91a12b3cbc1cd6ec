"""Sweeps whose steps multicast from the core owning the step's element (:func:`mica.lower.reads.step_owner_plan`:
trisolv, LU, Cholesky with their main nest aligned, gramschmidt as written): the root of each multicast is
``floor(t / tile)`` (MeshIR ``Lin.div``), the root packs only the step's panel. The Metalium back end writes the
root per step with ``mica_floord`` in the reader; the emitted program passes ``validate``, the syntax check
against the declaration header, and runs in the functional model with its reference check passing. The plans are
searched for WSE-2 (on Wormhole the search keeps these small sizes on one core) and compiled for Wormhole.
Cholesky and gramschmidt take square roots on the generic path (``mica_sqrtf``: integer arithmetic, correctly
rounded), so every output equals the reference exactly."""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import lru_cache

import pytest

from mica.emit_metalium import render
from mica.emit_metalium.kernels import MESH_H
from mica.meshir.ir import Exchange, Multicast, step_blocks

from .programs import step_owner
import samples
from .test_functional import _check_lines, run_emitted
from .test_syntax import syntax_errors


GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


@lru_cache(maxsize=None)
def step_owner_program(name: str, mesh: tuple[int, int]):
    return step_owner(name, mesh)


# 4x3 and 8x8, and meshes the sizes do not divide (trisolv's 30 over 4 and 8 columns, LU's 24 over 7x5); CI runs
# every kernel, on both 4x3 and 8x8 only trisolv and LU, the others' second mesh with -m slow
CASES = [("trisolv", (4, 3)), ("trisolv", (8, 8)), ("lu", (4, 3)), ("lu", (8, 8)), ("lu", (7, 5)),
         ("cholesky", (8, 8)), ("gramschmidt", (4, 3))]
SLOW_CASES = [("cholesky", (4, 3)), ("gramschmidt", (8, 8))]


@pytest.mark.parametrize("name, mesh", CASES + [pytest.param(*c, marks=pytest.mark.slow) for c in SLOW_CASES],
                         ids=[f"{n}-{w}x{h}" for n, (w, h) in CASES + SLOW_CASES])
def test_step_owner_plan_emits_and_computes_the_reference(name, mesh, tmp_path):
    c = step_owner_program(name, mesh)
    mp = c.mesh_program
    assert step_blocks(mp) and c.cost.cores > 1, (name, mesh)
    files = render(c)                                    # validates
    assert syntax_errors(files, tmp_path / "syntax") == {}
    rc, out = run_emitted(files, tmp_path / "run")
    assert rc == 0, out
    checks = _check_lines(out)
    assert len(checks) == len(c.program.outputs), out
    for worst, _, verdict in checks:
        assert verdict == "ok" and worst == 0.0, out    # f32 tile passes in the statement's order, soft sqrt exact


def test_the_root_follows_the_owner_of_each_step():
    """plan.json's per-step records (evaluated from the emitted expressions) put the multicast's sender at
    floor(t / tile) on every row, and every receiver of that row waits for it."""
    c = step_owner_program("trisolv", (8, 8))
    files = render(c)
    plan = json.loads(files["plan.json"])
    roots = [op.root for ex, _ in c.mesh_program.walk() if isinstance(ex, Exchange) for op in ex.ops
             if isinstance(op, Multicast) and op.root.div != 1]
    assert roots and all(f"mica_floord(v_t, {r.div})" in json.dumps(plan["exchanges"]) for r in roots)
    div = roots[0].div
    sends = [s for s in plan["steps"] if "send" in s]
    recvs = [s for s in plan["steps"] if "recv" in s]
    assert sends and recvs
    for s in sends:
        assert s["send"][0] == s["step"]["t"] // div
    for r in recvs:
        assert r["from"] == [r["step"]["t"] // div, r["recv"][1]]
    assert any("mica_floord(v_t, " in text for path, text in files.items() if path.startswith("kernels/reader_"))


SQRT_CHECK = r"""
#include <cmath>
#include <cstdio>
#include <cstring>
#include "mica_mesh.h"
int main() {
    unsigned long long bad = 0;
    for (unsigned long long i = 0; i < (1ull << 32); i += 65521) {      // every exponent, many mantissas
        for (unsigned s = 0; s < 2; ++s) {
            uint32_t u = (uint32_t)i + s * 0x3fffffu;
            float a; std::memcpy(&a, &u, 4);
            float x = std::sqrt(a), y = mica_sqrtf(a), f = std::fabs(a), g = mica_fabsf(a);
            uint32_t ux, uy, uf, ug;
            std::memcpy(&ux, &x, 4); std::memcpy(&uy, &y, 4); std::memcpy(&uf, &f, 4); std::memcpy(&ug, &g, 4);
            if ((ux != uy && !(x != x && y != y)) || uf != ug) bad++;
        }
    }
    std::printf("%llu\n", bad);
    return bad != 0;
}
"""


def test_soft_sqrt_is_correctly_rounded(tmp_path):
    """``mica_sqrtf`` / ``mica_fabsf`` (the generic path's math on a RISC-V without FPU or libm) equal the
    host's IEEE ``sqrt`` / ``fabs`` bit for bit, subnormals, zeros, infinities and NaNs included."""
    (tmp_path / "mica_mesh.h").write_text(MESH_H)
    (tmp_path / "check.cpp").write_text(SQRT_CHECK)
    r = subprocess.run([GXX, "-std=c++17", "-O1", "-I", str(tmp_path), str(tmp_path / "check.cpp"), "-o",
                        str(tmp_path / "check")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "0", r.stdout


@pytest.mark.parametrize("mesh", [(4, 3), (3, 5)])
def test_a_sweep_counting_down_runs_its_steps_from_the_last(mesh, tmp_path):
    """A back substitution's column sweep counts down (MeshIR ``Loop.down``): the readers and the compute kernel
    run their step loop from its last value; the functional model's check against the reference passes."""
    c = samples.back_substitution(30, "wormhole", mesh)
    assert c.cost.cores > 1 and any(getattr(op, "down", False) for op, _ in c.mesh_program.walk())
    files = render(c)
    assert "counting down" in "".join(files.values())
    assert syntax_errors(files, tmp_path / "syntax") == {}
    rc, out = run_emitted(files, tmp_path / "run")
    assert rc == 0, out
    checks = _check_lines(out)
    assert len(checks) == len(c.program.outputs) and all(v == "ok" for _, _, v in checks), out
