"""Set-up shared by every test directory.

* ``tests/`` is put on ``sys.path``, so any test imports the shared helpers as top-level modules:
  :mod:`samples` (the sample C programs) and :mod:`golden_files` (golden-file comparison). (pytest's default
  import mode already prepends ``tests/`` for this conftest; doing it here keeps it true under any mode.)
* Under pytest-xdist the workers already keep every core busy, so a compile does not fork a search worker
  (``MICA_JOBS=1`` unless set; :mod:`mica.tiling.forked` — its own tests force the fork on).
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

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("MICA_JOBS", "1")


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


#: The test files that take longest (a minute or more of one core in a clean run: many compiles of large
#: programs, or a model's fixtures), longest first. They start first so that pytest-xdist's file-by-file
#: scheduling (README's ``--dist loadfile``) does not leave one of them to run alone at the end; the other
#: files keep their order, and every file keeps its own.
FIRST = ("native/test_c_kernels.py", "models/test_llama.py", "behaviour/test_behaviour.py", "test_readme.py",
         "native/test_aligned_kernels.py", "test_bench_smoke.py", "emit_csl/test_step_owner_wse3.py",
         "fuzz/test_fuzz_programs.py", "tiling/test_transposed_plans.py", "native/test_privatised_kernels.py",
         "emit_metalium/test_step_owner.py", "emit_metalium/test_functional.py", "emit_csl/test_step_owner.py",
         "emit_csl/test_csl_execution.py", "affine/test_recurrence.py", "emit_metalium/test_syntax.py",
         "fuzz/test_hostile_names.py", "tiling/test_on_mesh_shares.py", "native/test_decode_layer.py",
         "native/test_runtime_fuzz.py")


def pytest_configure(config):
    """Keeps :data:`FIRST`'s order under ``--dist loadfile``: pytest-xdist 3.8 and later otherwise hand out the
    files most-tests-first (``--loadscope-reorder``, their default), which started a 115 s file at the end of a
    27-minute run; older versions have no such option and keep the collection order anyway."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    rank = {name: k for k, name in enumerate(FIRST)}

    def key(item) -> int:
        try:
            rel = Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
        except ValueError:
            return len(FIRST)
        return rank.get(rel, len(FIRST))
    items.sort(key=key)          # stable: the order inside every file, and of the other files, is kept
