"""README.md's commands and code, run as written.

* The first two blocks are the two commands README starts with; CI (``.ci/run``) runs them on a clean
  clone in a fresh environment, so here they are checked to be exactly what ``.ci/run`` runs.
* Every other ``bash`` block runs line by line in a scratch directory holding ``examples/`` (so files the
  commands write land there); a line starting with ``pip install`` is checked to name extras that
  ``pyproject.toml`` declares and the rest of the line (after ``&&``) is run -- except the API reference's
  Sphinx build, which ``tests/test_docs.py`` runs with the same flags (and ``-q --keep-going``).
* Every ``python`` block runs, in order, in one interpreter (later blocks use earlier blocks' names).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w+)\n(.*?)^```", README, re.M | re.S)]
SHELL = [body for lang, body in BLOCKS[2:] if lang == "bash"]
PYTHON = [body for lang, body in BLOCKS if lang == "python"]
#: README's API-reference build, which tests/test_docs.py runs (so it is not run twice).
DOCS_BUILD = "python -m sphinx -W -b html docs docs/_build/html"


def test_readme_starts_with_the_two_commands_ci_runs():
    assert BLOCKS[0] == ("bash", "pip install . && mica demo\n")
    assert BLOCKS[1] == ("bash", 'pip install ".[test]" && python -m pytest -q -n auto --dist loadfile\n')
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python -m pip install --quiet ".[test]"' in ci
    assert re.search(r"^python -m pytest -q -n auto --dist loadfile$", ci, re.M)
    assert re.search(r"^mica demo$", ci, re.M)


def _commands():
    for k, body in enumerate(SHELL):
        for line in body.splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):
                yield pytest.param(line, id=f"block{k}:{line[:60]}")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    (d / "examples").symlink_to(ROOT / "examples")
    (d / "docs").symlink_to(ROOT / "docs")
    return d


def _extras() -> set[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


@pytest.mark.parametrize("line", list(_commands()))
def test_readme_shell_command_runs(line, scratch):
    if line.startswith("pip install"):
        first, _, rest = line.partition("&&")
        extras = re.findall(r"\.\[(\w+)\]", first)
        assert extras and set(extras) <= _extras(), f"{first!r} names extras pyproject.toml does not declare"
        line = rest.strip()
        if line == DOCS_BUILD:          # tests/test_docs.py runs this very build (with -q --keep-going)
            assert (ROOT / "tests" / "test_docs.py").read_text().count('"-m", "sphinx", "-W"') == 1
            return
        if not line:
            return
    argv = shlex.split(line)
    if argv[0] == "python":
        argv[0] = sys.executable
    elif argv[0] == "mica":
        argv = [sys.executable, "-m", "mica", *argv[1:]]
    done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "MICA_PROGRESS": "0"})
    assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outs = [a for flag, a in zip(argv, argv[1:]) if flag in ("--out", "--plot", "--trace")]
    for out in outs:                                   # what it says it wrote exists
        assert (scratch / out).exists(), out


def test_readme_python_blocks_run_in_order(scratch):
    code = "\n".join(PYTHON)
    done = subprocess.run([sys.executable, "-c", code], cwd=scratch, capture_output=True, text=True,
                          timeout=900, env={**__import__("os").environ, "MICA_PROGRESS": "0"})
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
