"""Worker processes for the long run: each random program is evaluated in a child process (:class:`_Pool`),
so a crash or hang of native code is reported as an outcome (``died``, ``timeout``) instead of taking the
fuzzer down."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from multiprocessing.connection import wait as mp_wait

from .generate import FuzzCase, case_from_choices
from .oracle import Outcome, _exc_text, check_case


def _worker_main(conn) -> None:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        choices, max_size, inject = msg
        case = case_from_choices(choices, max_size=max_size)
        try:
            out = _injected(case, inject) if inject else check_case(case)
        except Exception as exc:    # a failure of the reference (run_c) or of the checker itself
            out = Outcome("crash", f"checker: {type(exc).__name__}", _exc_text(exc))
        conn.send(out)


def _injected(case: FuzzCase, inject: str) -> Outcome:
    """Self-test of the fuzzer (``--inject-bug``): programs with a ``+=`` update of an array element
    'fail' -- a mismatch, a segfault of the worker or a hang -- and the others pass uncompiled."""
    if "] +=" not in case.source:
        return Outcome("ok", "self-test")
    if inject == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if inject == "hang":
        time.sleep(10 ** 6)
    return Outcome("mismatch", "mismatch", "injected: the program has a += update")


class _Pool:
    """Worker processes evaluating cases (given by their choices) with a per-case timeout."""

    #: Programs one worker runs before it is replaced: every program run leaves its libraries mapped
    #: in the process (see tests/fuzz/FOUND.md, bug 8), and dlopen fails after a few thousand.
    MAX_TASKS = 300

    def __init__(self, jobs: int, timeout: float, inject: str | None = None):
        self.ctx = mp.get_context("spawn")
        self.timeout = timeout
        self.inject = inject
        self.workers = [self._spawn() for _ in range(max(1, jobs))]

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker_main, args=(child,), daemon=True)
        p.start()
        child.close()
        return {"proc": p, "conn": parent, "job": None, "since": 0.0, "tasks": 0}

    def idle(self):
        return [w for w in self.workers if w["job"] is None]

    def busy(self) -> int:
        return sum(w["job"] is not None for w in self.workers)

    def submit(self, w, key, choices, max_size) -> None:
        w["conn"].send((list(choices), max_size, self.inject))
        w["job"], w["since"] = key, time.monotonic()

    def collect(self, wait: float) -> list[tuple[object, Outcome]]:
        """Finished jobs as (key, outcome); replaces workers that died or exceeded the timeout."""
        busy = [w for w in self.workers if w["job"] is not None]
        if not busy:
            return []
        ready = mp_wait([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy], timeout=wait)
        out = []
        now = time.monotonic()
        for i, w in enumerate(self.workers):
            if w["job"] is None:
                continue
            key = w["job"]
            if w["conn"] in ready or w["conn"].poll():
                try:
                    out.append((key, w["conn"].recv()))
                    w["job"] = None
                    w["tasks"] += 1
                    if w["tasks"] >= self.MAX_TASKS:
                        self._retire(w)
                        self.workers[i] = self._spawn()
                    continue
                except (EOFError, OSError):
                    pass
            if not w["proc"].is_alive():
                code = w["proc"].exitcode
                out.append((key, Outcome("died", f"worker died (exit code {code})",
                                         f"the process running the program exited with code {code}",
                                         now - w["since"])))
                self.workers[i] = self._spawn()
            elif now - w["since"] > self.timeout:
                w["proc"].kill()
                w["proc"].join()
                out.append((key, Outcome("timeout", f"timeout after {self.timeout:g} s",
                                         f"no answer within {self.timeout:g} s", now - w["since"])))
                self.workers[i] = self._spawn()
        return out

    def _retire(self, w) -> None:
        try:
            w["conn"].send(None)
        except OSError:
            pass
        w["proc"].join(timeout=10)
        if w["proc"].is_alive():
            w["proc"].kill()
            w["proc"].join()

    def run_one(self, choices, max_size) -> Outcome:
        while self.workers[0]["job"] is not None:
            self.collect(1.0)
        w = self.workers[0]
        self.submit(w, "one", choices, max_size)
        while True:
            for key, out in self.collect(1.0):
                if key == "one":
                    return out

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except OSError:
                pass
        for w in self.workers:
            w["proc"].join(timeout=5)
            if w["proc"].is_alive():
                w["proc"].kill()
