"""The code is lint-clean: ``ruff check mica tests bench`` (rules in pyproject.toml's ``[tool.ruff]``) finds
nothing. ruff comes with the ``test`` extra; without it this test fails rather than skips."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    assert importlib.util.find_spec("ruff") is not None, \
        "ruff is not installed: pip install -e '.[test]' (or pip install ruff) to run the lint check"
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "mica", "tests", "bench"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"ruff check mica tests bench:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"
