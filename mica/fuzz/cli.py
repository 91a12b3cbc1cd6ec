"""The command line of the fuzzer (``python -m mica.fuzz``): the long run, the malformed-C run and the
replay of a reproducer."""

from __future__ import annotations

import argparse

from . import __doc__ as _PACKAGE_DOC
from .malformed import malformed_run
from .oracle import check_case
from .soak import read_reproducer, soak


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mica.fuzz", description=_PACKAGE_DOC.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the program run lasts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--count", type=int, default=None, help="number of inputs (malformed) or programs")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds one program may take")
    ap.add_argument("--max-size", type=int, default=10, help="largest value of the size parameters n, m")
    ap.add_argument("--shrink-seconds", type=float, default=300.0, help="time spent shrinking one failure")
    ap.add_argument("--max-shrinks", type=int, default=5, help="failures shrunk (the others are written as found)")
    ap.add_argument("--out", default=".", help="directory for reproducers")
    ap.add_argument("--keep-going", action="store_true", help="collect every failure instead of stopping")
    ap.add_argument("--malformed", action="store_true", help="fuzz the C front end with malformed text")
    ap.add_argument("--replay", metavar="FILE", help="re-run a reproducer written by a failing run")
    ap.add_argument("--inject-bug", choices=("mismatch", "segfault", "hang"), default=None,
                    help="self-test: programs with a '] +=' fail this way, the others pass uncompiled")
    a = ap.parse_args(argv)
    if a.replay:
        case = read_reproducer(a.replay)
        out = check_case(case)
        print(f"{case.header()}\n{out.kind} ({out.reason}) in {out.seconds:.1f} s\n{out.message}")
        return 1 if out.failed else 0
    if a.malformed:
        return malformed_run(a.count or 5000, a.seed, out_dir=a.out)
    return soak(a.seconds, a.seed, a.jobs, out_dir=a.out, keep_going=a.keep_going, timeout=a.timeout,
                max_size=a.max_size, shrink_s=a.shrink_seconds, limit=a.count, max_shrinks=a.max_shrinks,
                inject=a.inject_bug)
