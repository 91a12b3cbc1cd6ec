"""Every benchmark of ``bench/`` still runs and checks its result: the suites run once each, untimed
(``--benchmark-disable``), so an API change that breaks a benchmark fails here, in CI, not weeks later. CI runs
each benchmark function with its first parametrisation; ``-m slow`` runs every parametrisation."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
#: The child pytest's environment: this one's without pytest-xdist's worker variables (under ``-n``, a child
#: that inherits them counts as a worker, and pytest-benchmark then disables timing and saving).
ENV = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}


def _run_once(*extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", str(BENCH), "-q", "-p", "no:cacheprovider",
                           "--benchmark-disable", "-x", *extra], capture_output=True, text=True, cwd=BENCH.parent, env=ENV)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
    return done.stdout


def test_every_benchmark_function_runs_once():
    """CI: each benchmark function with its first parametrisation."""
    out = _run_once("--first-params-only")
    assert "deselected" in out.splitlines()[-1]


@pytest.mark.slow
def test_every_benchmark_runs_once():
    _run_once()


def test_timed_runs_are_saved_with_compact_columns(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pytest", str(BENCH / "test_compile_time.py"), "-q", "-p",
                           "no:cacheprovider", "-k", "test_compile_matmul and 512-16x16", "--benchmark-storage", str(tmp_path),
                           "--benchmark-min-rounds=1", "--benchmark-max-time=0.000001", "--benchmark-warmup=off"],
                          capture_output=True, text=True, cwd=BENCH.parent, env=ENV)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    saved = list(tmp_path.rglob("*.json"))
    assert len(saved) == 1, saved                                      # autosaved, once
    data = json.loads(saved[0].read_text())
    assert [b["name"] for b in data["benchmarks"]] == ["test_compile_matmul[512-16x16]"]
    header = next(ln for ln in done.stdout.splitlines() if ln.startswith("Name (time in"))
    assert header.split()[4:] == ["Median", "IQR", "OPS", "Rounds"], header
    assert max(len(ln) for ln in done.stdout.splitlines()) <= 120
