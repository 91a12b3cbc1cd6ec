"""The operator-level search maps its splits in a forked worker (mica.tiling.forked): the same results, in
the same order, as run in one process; a worker that fails costs only time."""

import os
from pathlib import Path

import numpy as np
import pytest

import mica
from mica.testing import run_c
from mica.tiling import forked
from mica.tiling.forked import run_tasks

DECODE_LAYER = (Path(__file__).resolve().parents[2] / "examples" / "decode_layer.c").read_text()


@pytest.fixture
def two_jobs(monkeypatch):
    """Forking on, whatever the machine or ``MICA_JOBS`` say."""
    monkeypatch.setattr(forked, "jobs", lambda: 2)


def test_results_come_back_in_order_from_the_worker(two_jobs):
    parent = os.getpid()
    got = run_tasks([lambda: ("a", os.getpid()), lambda: ("b", os.getpid()), lambda: ("c", os.getpid())])
    assert [name for name, _ in got] == ["a", "b", "c"]
    assert got[0][1] == parent
    assert got[1][1] == got[2][1] != parent           # the later tasks ran in one worker


def test_without_fork_every_task_runs_here(two_jobs):
    got = run_tasks([os.getpid, os.getpid], fork=False)
    assert got == [os.getpid()] * 2


def test_cache_entries_the_worker_made_come_back(two_jobs):
    cache = {"old": 1}

    def fill():
        cache["new"] = 2
        cache["unpicklable"] = lambda: None           # left out, not an error
        return "done"
    assert run_tasks([lambda: "here", fill], cache=cache) == ["here", "done"]
    assert cache == {"old": 1, "new": 2}


def test_a_task_failing_in_the_worker_fails_here_as_it_would_have(two_jobs):
    calls = []

    def boom():
        calls.append(os.getpid())
        raise ValueError("no plan")
    with pytest.raises(ValueError, match="no plan"):
        run_tasks([lambda: 1, boom])
    assert calls == [os.getpid()]                      # the worker's attempt is not in this process's list


def test_a_result_that_does_not_pickle_is_computed_here(two_jobs):
    here = os.getpid()
    got = run_tasks([lambda: 0, lambda: (lambda: os.getpid())])
    assert got[1]() == here


def test_the_first_task_failing_stops_the_worker(two_jobs):
    def slow():
        import time
        time.sleep(30)
    with pytest.raises(KeyError):
        run_tasks([lambda: {}["missing"], slow])       # returns at once: the worker is killed, not awaited


def test_mica_jobs_caps_the_processes(monkeypatch):
    monkeypatch.setenv("MICA_JOBS", "1")
    assert forked.jobs() == 1
    assert run_tasks([os.getpid, os.getpid]) == [os.getpid()] * 2
    monkeypatch.setenv("MICA_JOBS", "not a number")
    assert forked.jobs() >= 1


# CI: 8x8; a mesh the sizes do not divide with -m slow
@pytest.mark.parametrize("mesh,target", [((8, 8), "wse2"), pytest.param((6, 5), "wse2", marks=pytest.mark.slow)])
def test_forked_search_chooses_the_plan_one_process_chooses(monkeypatch, mesh, target):
    """The decode layer has two splits (its 19 loop nests, and 30 operators distributed), so the second is
    mapped in a worker: the plan, every way's account and the run equal the one-process search's, and the run
    matches the C compiled natively."""
    prog = mica.affine.from_c(DECODE_LAYER, "layer", defines={"D": 32, "L": 16, "F": 64})
    monkeypatch.setattr(forked, "jobs", lambda: 2)
    spawned = []
    real_fork = os.fork

    def counting_fork():
        spawned.append(1)
        return real_fork()
    monkeypatch.setattr(forked.os, "fork", counting_fork)
    two = mica.compile_affine(prog, mesh=mesh, target=target)
    assert spawned, "the search did not fork"
    monkeypatch.setattr(forked, "jobs", lambda: 1)
    one = mica.compile_affine(prog, mesh=mesh, target=target)
    assert two.schedule == one.schedule
    assert two.cost.total_cycles == one.cost.total_cycles
    rng = np.random.default_rng(1)
    ins = {a: rng.uniform(-0.5, 0.5, prog.array(a).shape).astype(np.float32) for a in prog.inputs}
    want = run_c(DECODE_LAYER, "layer", ins, {}, defines={"D": 32, "L": 16, "F": 64})
    res = two.run(ins)
    for name, value in want.items():
        np.testing.assert_allclose(res.outputs[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
