"""Golden CSL file sets: every change to emitted code shows up here, as a diff. ``python -m pytest
tests/emit_csl/test_golden.py --update-golden`` (or ``MICA_UPDATE_GOLDEN=1``) rewrites them."""

from pathlib import Path

import pytest

from mica.emit_csl import FILES

from .programs import GOLDEN, rendered

HERE = Path(__file__).parent / "golden"


@pytest.mark.parametrize("target", ["wse2", "wse3"])
@pytest.mark.parametrize("name", GOLDEN)
def test_golden(name, target, golden):
    files = rendered(name, target)
    golden({f: files[f] for f in FILES}, HERE / f"{name}_{target}")
