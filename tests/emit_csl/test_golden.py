"""Golden CSL file sets: every change to emitted code shows up here. Regenerate with MICA_UPDATE_GOLDEN=1."""

import os
from pathlib import Path

import pytest

from mica.emit_csl import FILES
from programs import GOLDEN, rendered

HERE = Path(__file__).parent / "golden"


@pytest.mark.parametrize("target", ["wse2", "wse3"])
@pytest.mark.parametrize("name", GOLDEN)
def test_golden(name, target):
    files = rendered(name, target)
    d = HERE / f"{name}_{target}"
    if os.environ.get("MICA_UPDATE_GOLDEN") == "1":
        d.mkdir(parents=True, exist_ok=True)
        for f in FILES:
            (d / f).write_text(files[f], encoding="utf-8")
    for f in FILES:
        path = d / f
        assert path.exists(), f"missing golden {path}; run with MICA_UPDATE_GOLDEN=1"
        assert files[f] == path.read_text(encoding="utf-8"), f"{path} differs from what is emitted now"
