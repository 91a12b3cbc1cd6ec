"""Golden outputs: every emitted file of a few small programs, diffed so each change to emitted code shows
in review. ``python -m pytest tests/emit_metalium/test_golden.py --update-golden`` (or
``MICA_UPDATE_GOLDEN=1``) rewrites them and deletes stale files."""

from __future__ import annotations

from pathlib import Path

import pytest

from .programs import GOLDEN, rendered

HERE = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", GOLDEN)
def test_emitted_files_match_golden(name, golden):
    golden(rendered(name), HERE / name)
