"""Set-up shared by every test directory.

* ``tests/`` is put on ``sys.path``, so any test imports the shared helpers as top-level modules:
  :mod:`samples` (the sample C programs) and :mod:`golden_files` (golden-file comparison). (pytest's default
  import mode already prepends ``tests/`` for this conftest; doing it here keeps it true under any mode.)
* ``--update-golden`` (or ``MICA_UPDATE_GOLDEN=1``) makes the golden tests rewrite their files instead of
  failing; the :func:`golden` fixture hands the tests a checker bound to that choice.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from golden_files import check_golden  # noqa: E402 - needs tests/ on sys.path


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files of tests/emit_*/golden with what is emitted now "
                          "(same as MICA_UPDATE_GOLDEN=1)")


@pytest.fixture
def golden(request):
    """``golden(files, directory, label)``: :func:`golden_files.check_golden` with the update flag of this run."""
    update = request.config.getoption("--update-golden") or os.environ.get("MICA_UPDATE_GOLDEN") == "1"

    def check(files: dict[str, str], directory: Path, label: str = "") -> None:
        check_golden(files, directory, update=update, label=label)
    return check
