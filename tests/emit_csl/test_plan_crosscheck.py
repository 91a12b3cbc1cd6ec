"""What the CSL back end emitted (plan.json) against the emulator's lowered op code and comm/'s traffic."""

import copy
import dataclasses
import json
from functools import lru_cache

import pytest

from mica.emit_csl import planned_program

from .crosscheck import crosscheck
from .programs import ALL, program, rendered


@lru_cache(maxsize=None)
def emitted(name, target):
    return program(name, target), rendered(name, target)


@pytest.mark.parametrize("target", ["wse2", "wse3"])
@pytest.mark.parametrize("name", ALL)
def test_plan_matches_emulator_routes_messages_and_traffic(name, target):
    p, files = emitted(name, target)
    plan = json.loads(files["plan.json"])
    assert plan["channels"], "every example program communicates"
    if "relayed_multicasts" in plan:        # the plan is the emulator's reading of the relayed MeshIR
        mp, _, _ = planned_program(p.mesh_program, p.target)
        p = dataclasses.replace(p, mesh_program=mp)
    assert crosscheck(p, plan) == []


def test_crosscheck_fails_on_a_dropped_route():
    p, files = emitted("matmul_summa", "wse2")
    plan = json.loads(files["plan.json"])
    bad = copy.deepcopy(plan)
    bad["channels"][0]["routes"].pop()
    assert any("routes differ" in m for m in crosscheck(p, bad))


def test_crosscheck_fails_on_a_wrong_message_size():
    p, files = emitted("gemv_ktree", "wse2")
    bad = json.loads(files["plan.json"])
    for b in bad["buffers"]:
        if b["name"] == "x":
            b["dims"][0][1] += 1            # a tile one element larger
    problems = crosscheck(p, bad)
    assert any("sends differ" in m for m in problems)


def test_crosscheck_fails_on_a_misdirected_route():
    p, files = emitted("matmul_interleaved", "wse3")
    bad = json.loads(files["plan.json"])
    r = bad["channels"][0]["routes"][0]
    r["tx"] = ["E"] if r["tx"] != ["E"] else ["W"]
    problems = crosscheck(p, bad)
    assert any("routes differ" in m for m in problems) and any("per-link bytes" in m or "no route" in m
                                                               for m in problems)


def test_moving_root_multicast_gets_one_channel_per_root():
    _, files = emitted("matmul_summa", "wse2")
    plan = json.loads(files["plan.json"])
    a = [c for c in plan["channels"] if c["src"] == "A"]
    assert len(a) == 4 and sorted(c["uses"][0]["t"][0] for c in a) == [0, 1, 2, 3]
    assert all(c["uses"] == [{"t": [c["uses"][0]["t"][0], c["uses"][0]["t"][0] + 1]}] for c in a)
    assert len({c["colour"] for c in a}) == 4          # rows overlap: one colour each
