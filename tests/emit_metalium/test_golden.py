"""Golden outputs: every emitted file of a few small programs, diffed so each change to emitted code shows
in review. ``MICA_UPDATE_GOLDEN=1 python -m pytest tests/emit_metalium/test_golden.py`` rewrites them."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from .programs import GOLDEN, rendered

HERE = Path(__file__).parent / "golden"
UPDATE = os.environ.get("MICA_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("name", GOLDEN)
def test_emitted_files_match_golden(name):
    files = rendered(name)
    root = HERE / name
    if UPDATE:
        for old in root.rglob("*") if root.exists() else []:
            if old.is_file() and str(old.relative_to(root)) not in files:
                old.unlink()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    on_disk = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()} if root.exists() else {}
    assert sorted(on_disk) == sorted(files), f"file set of {name} changed (MICA_UPDATE_GOLDEN=1 to accept)"
    diffs = []
    for rel in sorted(files):
        if files[rel] != on_disk[rel]:
            diffs += list(difflib.unified_diff(on_disk[rel].splitlines(), files[rel].splitlines(),
                                               f"golden/{name}/{rel}", f"emitted/{rel}", lineterm="", n=1))[:40]
    assert not diffs, "emitted Metalium differs from golden (MICA_UPDATE_GOLDEN=1 to accept):\n" + "\n".join(diffs)
