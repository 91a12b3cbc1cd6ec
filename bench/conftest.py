"""bench/ compiles the sample programs of the tests: ``tests/`` on ``sys.path`` makes ``import samples`` work."""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
