"""Every benchmark of ``bench/`` still runs and checks its result: the suites run once each, untimed
(``--benchmark-disable``), so an API change that breaks a benchmark fails here, in CI, not weeks later."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def test_every_benchmark_runs_once():
    done = subprocess.run([sys.executable, "-m", "pytest", str(BENCH), "-q", "-p", "no:cacheprovider",
                           "--benchmark-disable", "-x"], capture_output=True, text=True, cwd=BENCH.parent)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
