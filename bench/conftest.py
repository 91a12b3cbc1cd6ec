"""bench/ compiles the sample programs of the tests: ``tests/`` on ``sys.path`` makes ``import samples`` work."""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


#: The columns of pytest-benchmark's table unless ``--benchmark-columns`` says otherwise: the run's median,
#: its spread and how many rounds it took (the default ten columns do not fit a terminal).
COMPACT_COLUMNS = ["median", "iqr", "ops", "rounds"]
DEFAULT_COLUMNS = ["min", "max", "mean", "stddev", "median", "iqr", "outliers", "ops", "rounds", "iterations"]


def pytest_configure(config):
    """Timed runs of ``bench/`` are saved and printed compactly unless the command line says otherwise:
    ``--benchmark-autosave`` (a JSON per run under ``.benchmarks/``, which ``pytest-benchmark compare``
    reads) when no ``--benchmark-save``/``--benchmark-json`` is given, the :data:`COMPACT_COLUMNS`, and short
    test names. ``--benchmark-disable`` runs (the CI smoke test) save nothing."""
    opt = config.option
    if not hasattr(opt, "benchmark_columns"):          # pytest-benchmark not loaded (-p no:benchmark)
        return
    # pytest-benchmark < 5.3 fills in its default list; later ones leave None and resolve it afterwards
    if opt.benchmark_columns is None or list(opt.benchmark_columns) == DEFAULT_COLUMNS:
        opt.benchmark_columns = list(COMPACT_COLUMNS)
    if opt.benchmark_name == "normal":
        opt.benchmark_name = "short"
    if not (opt.benchmark_disable or opt.benchmark_autosave or opt.benchmark_save or opt.benchmark_json):
        opt.benchmark_autosave = True


def pytest_addoption(parser):
    parser.addoption("--first-params-only", action="store_true",
                     help="run only the first parametrisation of each benchmark (the CI smoke test)")


def pytest_collection_modifyitems(config, items):
    """With ``--first-params-only``, each benchmark function keeps only its first parametrisation."""
    if not config.getoption("--first-params-only"):
        return
    seen, keep, drop = set(), [], []
    for item in items:
        key = (item.path, item.originalname)
        (drop if key in seen else keep).append(item)
        seen.add(key)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
