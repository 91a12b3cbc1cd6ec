"""The long differential run (:func:`soak`): random programs from one seed evaluated in worker processes,
counts of the outcomes, and for each failure a shrunk reproducer file (:func:`write_reproducer`,
:func:`read_reproducer`)."""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter

from .generate import FuzzCase, case_from_choices, case_from_seed
from .oracle import Outcome
from .shrink import shrink
from .workers import _Pool


def _program_seed(seed: int, index: int) -> str:
    return f"{seed}:{index}"


def write_reproducer(path: str, case: FuzzCase, out: Outcome, seed: int, index: int) -> None:
    choices = list(case.choices)
    while choices and choices[-1] == 0:     # zeros past the end are implied
        choices.pop()
    meta = {"seed": seed, "index": index, "mesh": list(case.mesh), "target": case.target,
            "params": case.params, "threads": case.threads, "dtype": case.dtype, "data": case.data,
            "choices": choices}
    msg = out.message.replace("*/", "* /")
    text = (f"/* MICA fuzz failure: {out.kind} ({out.reason})\n"
            f"   program {index} of `python -m mica.fuzz --seed {seed}`\n"
            f"   {case.header()}\n"
            f"   replay: python -m mica.fuzz --replay {os.path.basename(path)}\n\n"
            + "\n".join("   " + ln for ln in msg.splitlines()) +
            f"\n*/\n// MICA-FUZZ {json.dumps(meta)}\n{case.source}")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)   # --out may name a new directory
    with open(path, "w") as f:
        f.write(text)


def read_reproducer(path: str) -> FuzzCase:
    text = open(path).read()
    m = re.search(r"^// MICA-FUZZ (\{.*\})$", text, re.M)
    if not m:
        raise SystemExit(f"{path}: no '// MICA-FUZZ {{...}}' line")
    meta = json.loads(m.group(1))
    source = text[m.end() + 1:]
    return FuzzCase(source, meta["params"], tuple(meta["mesh"]), meta["threads"], meta["target"], meta["dtype"],
                    meta.get("data", "uniform"), tuple(meta.get("choices", ())))


def _log(s: str) -> None:
    print(s, flush=True)


def soak(seconds: float, seed: int, jobs: int = 1, *, out_dir: str = ".", keep_going: bool = False,
         timeout: float = 180.0, max_size: int = 10, shrink_s: float = 300.0, limit: int | None = None,
         max_shrinks: int = 5, inject: str | None = None, log=_log) -> int:
    """The long differential run (see the package doc of :mod:`mica.fuzz`). Returns the process exit status."""
    t0 = time.monotonic()
    pool = _Pool(jobs, timeout, inject)
    counts: Counter = Counter()
    refused: Counter = Counter()
    failures: list[tuple[int, FuzzCase, Outcome]] = []
    index = 0
    pending: dict[int, FuzzCase] = {}
    last_report = t0
    slowest = (0.0, None)
    try:
        while True:
            stop = (time.monotonic() - t0 >= seconds or (failures and not keep_going)
                    or (limit is not None and index >= limit))
            if not stop:
                for w in pool.idle():
                    case = case_from_seed(_program_seed(seed, index), max_size=max_size)
                    pending[index] = case
                    pool.submit(w, index, case.choices, max_size)
                    index += 1
            if not pool.busy():
                break
            for k, out in pool.collect(1.0):
                case = pending.pop(k)
                counts["programs"] += 1
                counts[out.kind] += 1
                if out.kind == "refused":
                    refused[out.reason] += 1
                if out.seconds > slowest[0]:
                    slowest = (out.seconds, k)
                if out.failed:
                    log(f"FAILURE program {k}: {out.kind} ({out.reason}); {case.header()}\n{case.source}"
                        f"{out.message}")
                    failures.append((k, case, out))
            if time.monotonic() - last_report > 60:
                last_report = time.monotonic()
                log(f"[{last_report - t0:7.0f} s] {_summary(counts, refused)}")
        status = 0
        for n, (k, case, out) in enumerate(failures):
            if n < max_shrinks:
                log(f"shrinking program {k} ({out.kind}: {out.reason}) ...")
                small, small_out = shrink(case.choices, out, lambda c: pool.run_one(c, max_size),
                                          max_size=max_size, budget_s=shrink_s, log=log)
                case, out = case_from_choices(small, max_size=max_size), small_out
            path = os.path.join(out_dir, f"mica-fuzz-failure-{seed}-{k}.c")
            write_reproducer(path, case, out, seed, k)
            log(f"reproducer written to {path}:\n{case.header()}\n{case.source}{out.message}")
            status = 1
    finally:
        pool.close()
    elapsed = time.monotonic() - t0
    log(f"seed {seed}, {jobs} job(s), elapsed {elapsed:.0f} s, {index} programs generated: "
        f"{_summary(counts, refused)}")
    if slowest[1] is not None:
        log(f"slowest program: {slowest[1]} ({slowest[0]:.1f} s)")
    for reason, n in refused.most_common():
        log(f"  refused {n:6d}  {reason}")
    return status


def _summary(counts: Counter, refused: Counter) -> str:
    return (f"{counts['programs']} programs: {counts['ok']} compiled and matched, {counts['refused']} refused "
            f"({len(refused)} reasons), {counts['mismatch']} mismatches, {counts['crash']} crashes, "
            f"{counts['timeout']} timeouts, {counts['died']} died")
