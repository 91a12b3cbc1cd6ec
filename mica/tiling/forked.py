"""Independent parts of a search run side by side in forked worker processes.

The operator-level search tries each way of cutting a program into operators on its own (the splits share
only a cache of operator searches, which a fresh search would fill with the same results), so on a machine
with several cores each split can be mapped in its own process. A worker is a ``fork`` of the compiling
process: it inherits the program, the target and the cache, runs its tasks and sends their results back
pickled through a pipe. Nothing here changes what a task computes; the results come back in task order, so
the search chooses exactly what it would choose run sequentially.

A worker that fails in any way (an exception, a result that does not pickle, a crash) costs only time: the
parent runs the task itself, where an error surfaces as it would have without workers. ``MICA_JOBS`` caps
the number of processes (``MICA_JOBS=1``: no workers)."""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Callable, TypeVar

T = TypeVar("T")

#: The fewest operators the tasks given to workers must map together for forking to pay (a fork of the
#: compiling process, with its isl state, costs tens of milliseconds; one operator's search about as much).
MIN_FORKED_OPERATORS = 8


def jobs() -> int:
    """How many processes a search may use: the cores this process may run on, capped by ``MICA_JOBS``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        cap = int(os.environ.get("MICA_JOBS", "0"))
    except ValueError:
        cap = 0
    return max(1, min(cores, cap) if cap > 0 else cores)


def _read_all(fd: int) -> bytes:
    parts = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def _new_entries(cache: dict | None, known: set) -> list[bytes]:
    """The entries of ``cache`` not in ``known``, each pickled on its own (those that do not pickle left out)."""
    out = []
    for key, value in (cache or {}).items():
        if key not in known:
            try:
                out.append(pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
            except Exception:      # noqa: BLE001 - a cache entry only saves time
                pass
    return out


def _merge(cache: dict | None, entries: list[bytes]) -> None:
    """Adds to ``cache`` the entries a worker made (:func:`_new_entries`) that unpickle here."""
    if cache is None:
        return
    for blob in entries:
        try:
            key, value = pickle.loads(blob)
        except Exception:          # noqa: BLE001 - a cache entry only saves time
            continue
        cache.setdefault(key, value)


def _die_with_parent() -> None:
    """Asks Linux to kill this (forked) process when its parent dies, so a compile killed from outside (a
    timeout) leaves no worker running; elsewhere the worker ends when it finds the pipe closed."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker(tasks: list[Callable[[], T]], fd: int, cache: dict | None) -> None:
    """Runs in the forked child: each task's result pickled (None when it raised or does not pickle), and the
    entries the tasks added to ``cache``, written to ``fd``; never returns."""
    code = 1
    try:
        known = set(cache or ())
        results = []
        for task in tasks:
            try:
                results.append(pickle.dumps(task(), protocol=pickle.HIGHEST_PROTOCOL))
            except Exception:      # noqa: BLE001 - the parent runs the task again and sees the error itself
                results.append(None)
        data = pickle.dumps((results, _new_entries(cache, known)), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    except BaseException:          # noqa: BLE001 - a child must never unwind into the parent's code
        pass
    finally:
        os._exit(code)


def run_tasks(tasks: list[Callable[[], T]], *, fork: bool = True, cache: dict | None = None) -> list[T]:
    """The results of ``tasks``, in order. With ``fork`` and more than one job (:func:`jobs`), the first
    task runs in this process and the others in one forked worker started before it; the entries the worker's
    tasks added to the shared ``cache`` (a dict of results a fresh computation would reproduce) are added to
    this process's. Any failure of the worker makes this process run the affected tasks itself, so the results
    are those of running the tasks in order here (an exception a task raises surfaces from that run)."""
    if not fork or len(tasks) < 2 or jobs() < 2 or not hasattr(os, "fork"):
        return [task() for task in tasks]
    rest = tasks[1:]
    try:
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except OSError:
        return [task() for task in tasks]
    if pid == 0:
        os.close(read)
        _die_with_parent()
        _worker(rest, write, cache)
    os.close(write)
    try:
        first = tasks[0]()
    except BaseException:
        os.close(read)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    data = _read_all(read)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    results, entries = [None] * len(rest), []
    if status == 0 and data:
        try:
            results, entries = pickle.loads(data)
        except Exception:          # noqa: BLE001 - then every task runs here
            results, entries = [None] * len(rest), []
    _merge(cache, entries)
    return [first] + [_result(task, blob) for task, blob in zip(rest, results)]


def _result(task: Callable[[], T], blob: bytes | None) -> T:
    """The worker's result of ``task`` (``blob``), or, when it has none that unpickles, ``task()`` run here."""
    if blob is not None:
        try:
            return pickle.loads(blob)
        except Exception:          # noqa: BLE001 - then the task runs here
            pass
    return task()
