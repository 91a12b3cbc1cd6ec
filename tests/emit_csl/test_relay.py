"""SUMMA's moving root past the colour budget: the CSL back end relays each moving-root multicast hop by
hop (:mod:`mica.emit_csl.relay`) on a fixed number of colours. A 16x16 SUMMA emits for WSE-2 and WSE-3
within 8 colours, its plan matches the emulator's run of the relayed MeshIR, that MeshIR computes the
product, and the emitted CSL computes it in the interpreter (16x16 with ``-m slow``; 4x4 in the default run,
where WSE-3 needed the relay already)."""

import dataclasses
import json
from functools import lru_cache

import numpy as np
import pytest

import mica
from mica.emit_csl import planned_program, render
from mica.emit_csl.relay import relay_multicasts, relayable
from mica.errors import EmitError
from mica.meshir.ir import Compute, Exchange, Lin, Loop, Multicast, Shift
from mica.meshir.verify import verify

from .crosscheck import crosscheck
from .test_csl_execution import execute


@lru_cache(maxsize=None)
def summa(n: int, size: int, target: str, buffers: int = 1):
    op = mica.ops.matmul(size, size, size)
    return mica.compile_affine(op, mesh=(n, n), target=target, schedule=mica.plans.summa(op, (n, n), buffers=buffers))


@lru_cache(maxsize=None)
def files_of(n: int, size: int, target: str):
    return render(summa(n, size, target))


def _relayed(compiled):
    mp, _, _ = planned_program(compiled.mesh_program, compiled.target)
    return dataclasses.replace(compiled, mesh_program=mp)


@pytest.mark.parametrize("target", ["wse2", "wse3"])
def test_a_16x16_summa_emits_within_the_colour_budget(target):
    compiled = summa(16, 32, target)
    assert len(relayable(compiled.mesh_program)) == 2
    plan = json.loads(files_of(16, 32, target)["plan.json"])      # validated and syntax-checked by render
    assert plan["relayed_multicasts"] == ["A->A_recv", "B->B_recv"]
    colours = {ch["colour"] for ch in plan["channels"]}
    assert len(colours) <= 8 < 2 * 16                               # two per direction and axis, not one per root
    # the plan is the emulator's reading of the relayed MeshIR, route by route and message by message
    relayed = _relayed(compiled)
    verify(relayed.mesh_program, relayed.target)
    assert crosscheck(relayed, plan) == []
    # ... and that MeshIR computes the product (every panel reaches every core of its line)
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    res = relayed.run({"A": a, "B": b})
    np.testing.assert_allclose(res.outputs["C"], a @ b, rtol=1e-4, atol=1e-4)


def test_relaying_replaces_each_multicast_by_a_root_copy_and_one_hop_shifts():
    mp = summa(4, 8, "wse2").mesh_program
    out = relay_multicasts(mp)
    loop = next(op for op in out.body if isinstance(op, Loop))
    assert not any(isinstance(c, Multicast) for op, _ in out.walk() if isinstance(op, Exchange) for c in op.ops)
    copies = [op for op in loop.body if isinstance(op, Compute)]
    assert [c.kernel for c in copies] == ["step_S1_0_root_copy", "step_S1_1_root_copy", "k_S1"]
    hops = next(op for op in loop.body if isinstance(op, Loop))
    assert hops.count == 3
    shifts = hops.body[0].ops
    assert all(isinstance(s, Shift) and s.distance == 1 for s in shifts)
    assert sorted(s.direction for s in shifts) == ["E", "N", "S", "W"]
    # at step t = 1, hop 0: column 1 sends east to column 2 and west to column 0
    east = next(s for s in shifts if s.direction == "E")
    west = next(s for s in shifts if s.direction == "W")
    env = {"t": 1, hops.var: 0}
    assert (list(east.senders.members(env)[0]), list(east.receivers.members(env)[0])) == ([1], [2])
    assert (list(west.senders.members(env)[0]), list(west.receivers.members(env)[0])) == ([1], [0])
    assert relay_multicasts(out) is out                 # nothing left to relay


@pytest.mark.parametrize("target, force", [("wse3", False), ("wse2", True)])
def test_relayed_summa_computes_the_product_in_the_interpreter(target, force):
    """WSE-3 4x4 (one queue per colour: refused before the relay) and WSE-2 4x4 with the relay forced."""
    compiled = summa(4, 10, target)            # 10 = 4 blocks of 3, 3, 3, 1: partial boxes at the last root
    if force:
        compiled = dataclasses.replace(compiled, mesh_program=relay_multicasts(compiled.mesh_program))
    files = render(compiled)
    assert any(ch["pattern"].endswith("relay E") for ch in json.loads(files["plan.json"])["channels"])
    got, want = execute(compiled, files)
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-4, atol=1e-4)


def _guarded(compiled):
    """``compiled`` with a guard (always true) on its SUMMA exchange: values unchanged, not relayable."""
    mp = compiled.mesh_program
    body = tuple(dataclasses.replace(op, body=tuple(dataclasses.replace(e, guard=Lin(1)) if isinstance(e, Exchange)
                                                    else e for e in op.body)) if isinstance(op, Loop) else op
                 for op in mp.body)
    return dataclasses.replace(compiled, mesh_program=dataclasses.replace(mp, body=body))


def test_a_plan_that_cannot_be_relayed_keeps_its_refusal():
    """A guarded exchange is not relayed: the colour refusal stays, by name."""
    compiled = _guarded(summa(16, 32, "wse2"))
    assert relayable(compiled.mesh_program) == []
    with pytest.raises(EmitError, match="no colour left within the budget"):
        render(compiled)


def test_a_double_buffered_summa_is_relayed_single_buffered():
    """16x16 SUMMA with buffers=2: the prefetch is dropped with the relay, the panels keep one slot; 4x4 on
    WSE-3 (past its queues) computes the product in the interpreter."""
    plan = json.loads(render(summa(16, 32, "wse3", buffers=2))["plan.json"])
    assert plan["relayed_multicasts"] == ["A->A_recv", "B->B_recv"] and "double_buffering" not in plan
    assert all(b.get("slots", 1) == 1 for b in plan["buffers"])
    compiled = summa(4, 8, "wse3", buffers=2)
    got, want = execute(compiled, render(compiled))
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["wse2", "wse3"])
def test_a_16x16_summa_computes_the_product_in_the_interpreter(target):
    """About 1.5 minutes each: 256 PEs, 16 steps of 15 relay hops per axis."""
    compiled = summa(16, 32, target)
    got, want = execute(compiled, files_of(16, 32, target))
    np.testing.assert_allclose(got["C"], want["C"], rtol=1e-4, atol=1e-4)
