"""Plans whose multicasts start at the core owning a sweep step's block (root ``floor(t / tile)``, MeshIR
``Lin.div``; :func:`mica.lower.reads.step_owner_plan`): trisolv, LU and Cholesky with their main nest aligned,
gramschmidt as written. The CSL back end emits them -- one route table per root while the colours and
queues fit, else the multicasts relayed hop by hop (:mod:`mica.emit_csl.relay`, WSE-3 from 8x8) -- and the
emitted files, validated and syntax-checked by ``render``, execute in the CSL interpreter with results
bit-identical to the emulator's (the same f32 operations in the same order) and within tolerance of
run.py's reference."""

import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mica.affine.from_c import from_c
from mica.affine.retype import with_float_dtype
from mica.emit_csl import render
from mica.meshir.ir import step_blocks

from .test_csl_execution import execute

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from frontend_util import MANIFEST, kernel_function, kernel_source, make_inputs  # noqa: E402
import samples  # noqa: E402

KERNELS = ("trisolv", "lu", "cholesky", "gramschmidt")


@lru_cache(maxsize=None)
def _program(name: str):
    spec = MANIFEST[name]
    src, fn, params = samples.step_owner_kernel(name)
    prog = with_float_dtype(from_c(src, fn, params=params), "f32")
    ins = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) else v)
           for k, v in make_inputs(src, fn, params, spec, seed=5).items()}
    return prog, ins


def _check(name: str, mesh: tuple[int, int], target: str):
    prog, ins = _program(name)
    compiled = samples.step_owner_compile(prog, mesh, target, searched_for=target)
    assert step_blocks(compiled.mesh_program), "the plan has no multicast from a step's owner"
    if mesh == (8, 8):
        assert compiled.cost.cores > 1
    files = render(compiled)
    plan = json.loads(files["plan.json"])
    arrays = {a.name: ins.get(a.name, np.zeros(a.shape, np.float32)) for a in compiled.program.arrays}
    got, want = execute(compiled, files, arrays=arrays)
    emulated = compiled.run(ins, threads=1).outputs
    assert got
    for k, v in got.items():
        np.testing.assert_allclose(v, want[k], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k]).max())))
        assert np.array_equal(v, emulated[k]), f"{name} {k} on {mesh} {target}: not the emulator's bits"
    return plan


# CI: every kernel on 4x3 and on 3x7 (which the sizes do not divide), trisolv and LU also on 8x8; cholesky and
# gramschmidt on 8x8 with -m slow
@pytest.mark.parametrize("name, mesh", [(k, m) for m in ((4, 3), (3, 7)) for k in KERNELS]
                         + [("trisolv", (8, 8)), ("lu", (8, 8))]
                         + [pytest.param(k, (8, 8), marks=pytest.mark.slow) for k in ("cholesky", "gramschmidt")])
def test_step_owner_multicasts_execute_on_wse2(name, mesh):
    plan = _check(name, mesh, "wse2")
    assert len(plan["colours"]) <= plan["colour_budget"]


@pytest.mark.parametrize("mesh", [(4, 3), (3, 5)])
def test_a_sweep_counting_down_executes(mesh):
    """A back substitution runs as a sweep whose steps count down (MeshIR ``Loop.down``): the PE's state machine
    starts the loop variable at its last value and decrements it; the results are the emulator's bits and
    within tolerance of run.py's reference (which sums each row in the source's order)."""
    n = 30
    compiled = samples.back_substitution(n, "wse2", mesh)
    assert compiled.cost.cores > 1 and any(getattr(op, "down", False) for op, _ in compiled.mesh_program.walk())
    files = render(compiled)
    assert "counting down" in files["pe_program.csl"]
    rng = np.random.default_rng(2)
    ins = {"A": (rng.uniform(0.5, 1.5, (n, n)) + n * np.eye(n)).astype(np.float32),
           "y": rng.uniform(0.5, 1.5, n).astype(np.float32)}
    arrays = {a.name: ins.get(a.name, np.zeros(a.shape, np.float32)) for a in compiled.program.arrays}
    got, want = execute(compiled, files, arrays=arrays)
    emulated = compiled.run(ins, threads=1).outputs
    np.testing.assert_allclose(got["x"], want["x"], rtol=1e-5, atol=1e-7)
    assert np.array_equal(got["x"], emulated["x"])


def test_a_root_that_moves_every_tile_steps_is_relayed_with_its_block():
    """The relay of a multicast whose root is ``floor(t / tile)``: the root copy runs on the owner of step
    t's block and the hops start there (not at column t)."""
    from mica.emit_csl.relay import relay_multicasts, relayable
    from mica.meshir import ir
    prog, _ = _program("trisolv")
    mp = samples.step_owner_compile(prog, (8, 8), "wse3", searched_for="wse3").mesh_program
    assert relayable(mp) == ["x_panel0->x_recv"]
    out = relay_multicasts(mp)
    shifts = [c for op, _ in out.walk() if isinstance(op, ir.Exchange) for c in op.ops if isinstance(c, ir.Shift)]
    assert shifts and all(c.senders.x0[0].div == 4 for c in shifts)
    copy = next(k for k in out.kernels if k.name.endswith("_root_copy"))
    assert "floor((1*__t + 0) / 4)" in copy.domain


def test_more_roots_than_colours_on_wse2_are_relayed_and_keep_the_bits():
    """trisolv (n = 60) on 30 x 2: 30 roots floor(t / 2) need more route tables than WSE-2's colours; the
    multicast is relayed hop by hop on a few colours, the plan is the emulator's reading of the relayed
    MeshIR (cross-check), and that MeshIR computes the original program's bits on the emulator."""
    import dataclasses

    from mica.emit_csl import planned_program

    from .crosscheck import crosscheck
    src = kernel_source("trisolv").replace("30 + 0", "60 + 0")
    prog = with_float_dtype(from_c(src, kernel_function("trisolv"), params={"n": 60}), "f32")
    compiled = samples.step_owner_compile(prog, (30, 2), "wse2")
    assert compiled.cost.cores == 30 and step_blocks(compiled.mesh_program)
    plan = json.loads(render(compiled)["plan.json"])
    assert plan["relayed_multicasts"] == ["x_panel0->x_recv"] and len(plan["colours"]) <= 8
    mp, _, _ = planned_program(compiled.mesh_program, compiled.target)
    relayed = dataclasses.replace(compiled, mesh_program=mp)
    assert crosscheck(relayed, plan) == []
    ins = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) else v)
           for k, v in make_inputs(src, kernel_function("trisolv"), {"n": 60}, MANIFEST["trisolv"], seed=5).items()}
    assert np.array_equal(relayed.run(ins, threads=1).outputs["x"], compiled.run(ins, threads=1).outputs["x"])
