"""What the search remembers across candidates (:mod:`mica.lower.refusals`, the kept legality verdicts of
:mod:`mica.tiling.legality`, the hash programs keep) changes its speed, not its plans: with every memory switched
off the same programs get the same schedules, costs, MeshIR and kernels. (A candidate refused for a remembered
read may be counted under that cause where the full build would first have found another one; both hold.)"""

from __future__ import annotations

import json
import pickle
from collections import OrderedDict
from pathlib import Path

import pytest

import mica
import mica.lower.build as build
import mica.tiling.legality as legality
import mica.tiling.operators as operators
import mica.tiling.search as search_mod
from mica.lower import refusals
from mica.affine.from_c import from_c
from mica.errors import ScheduleError
from mica.pipeline import LOWERING
from mica.tiling.mapping import derive_schedule
from mica.tiling.schedule import SpaceMap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class _Forgetful(OrderedDict):
    """A store that keeps nothing."""

    def __contains__(self, key):
        return False

    def __setitem__(self, key, value):
        pass


def _decisions(node):
    """A schedule's JSON without its human-readable reasons (they tally the rejected candidates by cause)."""
    if isinstance(node, dict):
        return {k: _decisions(v) for k, v in node.items() if k != "reasons"}
    if isinstance(node, list):
        return [_decisions(v) for v in node]
    return node


def _account(prog) -> str:
    kernels = [src for _, src in sorted(prog.kernels.items())]
    return "\n".join([json.dumps(_decisions(json.loads(prog.schedule.to_json()))), str(prog.cost), prog.meshir,
                      *kernels])


def _decode_layer():
    return from_c((EXAMPLES / "decode_layer.c").read_text(), "layer")


@pytest.mark.parametrize("make, mesh", [pytest.param(_decode_layer, (8, 8), marks=pytest.mark.slow),
                                        (lambda: from_c((EXAMPLES / "attention.c").read_text()), (5, 3))])
def test_plans_are_the_same_with_every_memory_switched_off(monkeypatch, make, mesh):
    remembered = _account(mica.compile_affine(make(), mesh=mesh))
    with monkeypatch.context() as m:
        m.setattr(build, "refuse_known", lambda b: None)
        m.setattr(legality, "_verdicts", _Forgetful())
        m.setattr(refusals, "_MEMORY", _Forgetful())
        m.setattr(legality, "_dependence_verdicts", _Forgetful())
        m.setattr(search_mod, "uncombined", lambda d: d)
        legality._placed_time.cache_clear()
        legality._coverage_fault.cache_clear()
        forgotten = _account(mica.compile_affine(make(), mesh=mesh))
    assert forgotten == remembered


def test_the_search_remembers_the_reads_and_writes_it_refuses():
    """The decode layer's search rejects candidates whose reads move data in both mesh directions (or whose
    writes land on another core's element); those refusals are remembered, with their messages."""
    prog = _decode_layer()
    refusals._MEMORY.clear()
    mica.compile_affine(prog, mesh=(8, 8))
    remembered = [failures for known in refusals._MEMORY.values() for failures in known.values()]
    assert remembered, "the decode layer's search refuses reads"
    messages = {str(exc) for failures in remembered for exc in failures.values()}
    assert any("both mesh directions" in m or "another core owns" in m for m in messages)


def test_legality_verdicts_are_kept_for_illegal_mappings_too():
    src = "void f(float A[16][16]) { for (int i = 1; i < 16; i++) for (int j = 0; j < 16; j++) A[i][j] = A[i-1][j] * 0.5f; }"
    prog = from_c(src, "f")
    sched = derive_schedule(prog, (4, 4), assignment=[("j", "x")])
    legality.check_legal(prog, sched)                      # j carries nothing: legal, and kept so
    bad = sched.copy(space=(SpaceMap("i", "y", 4), SpaceMap("j", "x", 4)), step=None)
    messages = []
    for _ in range(2):
        with pytest.raises(ScheduleError) as err:
            legality.check_legal(prog, bad)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "before the instance" in messages[0] or "same step" in messages[0]


def test_programs_keep_their_hash_but_never_pickle_it():
    prog = _decode_layer()
    h = hash(prog)
    assert hash(prog) == h and "_hash" in prog.__dict__
    again = pickle.loads(pickle.dumps(prog))
    assert "_hash" not in again.__dict__ and again == prog and hash(again) == h
    stmt = prog.statements[3]
    hash(stmt)
    assert "_hash" not in pickle.loads(pickle.dumps(stmt)).__dict__


def test_plans_differing_only_in_how_they_combine_share_a_rejection_decided_before_it():
    """A candidate whose sibling (the same decisions but for chain or tree, and the tree's group) was rejected
    before the build read how partial results combine is rejected for the same reason without a build; each
    such rejection is the one its own evaluation gives, cause and message (attention's operators on 8x8)."""
    evaluated, searches = set(), []
    real_evaluate, real_search = search_mod.evaluate, search_mod.search

    def counting(prog, mesh, target, d, *args, **kw):
        evaluated.add((id(prog), d))
        return real_evaluate(prog, mesh, target, d, *args, **kw)

    def recording(prog, mesh, target, lowering, **kw):
        found = real_search(prog, mesh, target, lowering, **kw)
        searches.append((prog, mesh, target, kw, found[1]))
        return found
    with pytest.MonkeyPatch.context() as m:
        m.setattr(search_mod, "evaluate", counting)
        m.setattr(operators, "search", recording)
        mica.compile_affine(from_c((EXAMPLES / "attention.c").read_text()), mesh=(8, 8))
    checked = 0
    for prog, mesh, target, kw, report in searches:
        for c in report.candidates:
            if c.cause in ("", "pruned") or (id(prog), c.decisions) in evaluated:
                continue
            assert c.error.before_combining
            own = real_evaluate(prog, mesh, target, c.decisions, LOWERING, kw.get("fixed_homes"),
                                kw.get("resident"), caps=kw.get("caps"))
            assert (own.cause, own.rejected) == (c.cause, c.rejected), c.decisions.describe()
            checked += 1
    assert checked >= 10, "attention's search shares rejections between plans that combine differently"
