"""Fuzzing the C front end with malformed text: :func:`malformed_texts` yields truncated, byte-flipped,
token-mutated, spliced and random texts; :func:`check_malformed` feeds one to ``from_c``, whose only
acceptable answers are a Program or a MicaError within a time bound; :func:`malformed_run` is the
command-line run."""

from __future__ import annotations

import os
import random
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from ..affine.from_c import from_c
from ..affine.program import Program
from ..errors import MicaError
from .generate import case_from_seed
from .oracle import _exc_text
from .soak import _log


_HANDWRITTEN = [
    """void kernel_mix(int n, double alpha, double A[10][12], double x[12], double y[10])
{
  int i, j;
  double t;
#pragma scop
  for (i = 0; i < n; i++) {
    t = 0.0;  /* a comment */
    for (j = (i > 2 ? i - 2 : 0); j <= (11 < i + 3 ? 11 : i + 3); j++)
      t += A[i][j] * x[j];
    if (i % 2 == 0 || i > n - 3)
      y[i] = alpha * t + (y[i] < t ? y[i] : sqrt(t));
    else
      y[i] -= i < 4 ? t : 2.0 * t;   // line comment
  }
  for (i = n - 1; i >= 1; i--)
    y[i - 1] = y[i - 1] + y[i] / 3.0;
#pragma endscop
}
""",
    """typedef double real;
static real helper(real a) { return a * 2; }
void kernel_tri(int n, real L[8][8], real b[8], real x[8])
{
  for (int i = 0; i < n; i++) {
    x[i] = b[i];
    for (int j = 0; j < i; j++)
      x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }
}
""",
]

_VOCAB = ("for if else while do return int double float void const static char long unsigned "
          "i j k n m A B C x y alpha sqrt fabs fmax ( ) [ ] { } ; , = += -= *= /= ++ -- + - * / % < <= > >= "
          "== != && || ! ? : 0 1 2 10 0.5 1e308 2147483647 -1 # pragma \" ' \\ /* */ // \n").split(" ")
_OPERATORS = ("+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "=", "+=", "-=", "*=", "/=",
              "++", "--", "?", ":", ",", "&", "|", "^", "<<", ">>")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+\.?\d*(?:[eE][-+]?\d+)?[fF]?|\+\+|--|&&|\|\||<<|>>|[-+*/%<>=!&|^]=?|\S|\s+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def malformed_texts(seed: int, count: int, *, max_size: int = 10) -> Iterator[tuple[str, str, dict]]:
    """``count`` texts ``(kind, text, params)`` that are mostly not valid C of the subset."""
    rng = random.Random(seed)
    bases: list[tuple[str, dict]] = [(t, {"n": 8}) for t in _HANDWRITTEN]
    for k in range(64):
        c = case_from_seed(f"malformed:{seed}:{k}", max_size=max_size)
        bases.append((c.source, c.params))
    kinds = ("truncate", "byteflip", "delete", "duplicate", "replace", "swap", "splice", "insert", "random",
             "bytes", "nest", "ident", "number", "operator", "ident", "number", "operator")
    for n in range(count):
        kind = kinds[n % len(kinds)]
        text, params = bases[rng.randrange(len(bases))]
        if kind == "truncate":
            text = text[:rng.randrange(len(text))]
        elif kind == "byteflip":
            b = bytearray(text.encode())
            for _ in range(rng.randint(1, 4)):
                p = rng.randrange(len(b))
                b[p] ^= 1 << rng.randrange(8)
            text = b.decode("utf-8", errors="replace") if rng.random() < 0.5 else b.decode("latin-1")
        elif kind in ("delete", "duplicate", "replace", "swap", "insert"):
            toks = _tokens(text)
            for _ in range(rng.randint(1, 4)):
                if not toks:
                    break
                p = rng.randrange(len(toks))
                if kind == "delete":
                    del toks[p:p + rng.randint(1, 3)]
                elif kind == "duplicate":
                    toks[p:p] = toks[p:p + rng.randint(1, 6)]
                elif kind == "replace":
                    toks[p] = rng.choice(_VOCAB)
                elif kind == "swap":
                    q = rng.randrange(len(toks))
                    toks[p], toks[q] = toks[q], toks[p]
                else:
                    toks[p:p] = [" ", rng.choice(_VOCAB), " "]
            text = "".join(toks)
        elif kind in ("ident", "number", "operator"):      # token-class preserving: mostly still parses
            toks = _tokens(text)
            for _ in range(rng.randint(1, 2)):
                if kind == "ident":
                    pos = [i for i, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_]\w*", t)]
                    names = sorted({toks[i] for i in pos}) + ["n", "m", "x", "S0", "__t", "min", "and", "t", "y",
                                                                "int", "double", "float", "sqrt", "exp", "q"]
                elif kind == "number":
                    pos = [i for i, t in enumerate(toks) if re.fullmatch(r"\d[\w.]*", t)]
                    names = ["0", "1", "2", "-1", "12", "13", "100", "2147483648", "99999999999999999999", "0x10",
                             "1.5", "1e9", "07", "0.0", "3f"]
                else:
                    pos = [i for i, t in enumerate(toks) if t in _OPERATORS]
                    names = list(_OPERATORS)
                if pos:
                    toks[rng.choice(pos)] = rng.choice(names)
            text = "".join(toks)
        elif kind == "splice":
            other, _ = bases[rng.randrange(len(bases))]
            a, b = _tokens(text), _tokens(other)
            text = "".join(a[:rng.randrange(len(a) + 1)] + b[rng.randrange(len(b) + 1):])
        elif kind == "random":
            text = " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(0, 80)))
        elif kind == "bytes":
            text = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))).decode("latin-1")
        else:       # deep nesting of one construct
            d = rng.choice([50, 200, 1000, 3000])
            what = rng.randrange(3)
            if what == 0:
                text = "void f(double A[4]) { A[0] = " + "(" * d + "1.0" + ")" * d + "; }"
            elif what == 1:
                text = "void f(double A[4]) { " + "{" * d + "A[0] = 1.0;" + "}" * d + " }"
            else:
                text = "void f(double A[4]) { A[0] = " + " + ".join(["A[1]"] * d) + "; }"
            params = {}
        if rng.random() < 0.5:      # keep only the params whose names still occur
            words = set(re.findall(r"\w+", text))
            params = {k: v for k, v in params.items() if k in words}
        yield kind, text, params


@dataclass(frozen=True)
class MalformedOutcome:
    kind: str           # "program", "error" (a MicaError), "internal" (a MicaError saying internal error),
    #                     "crash" (any other exception), "slow"
    error: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind in ("crash", "slow")


def check_malformed(text: str, params: dict, *, time_limit: float = 2.0) -> MalformedOutcome:
    """Feeds ``text`` to ``from_c``; a Program or a MicaError within ``time_limit`` seconds of this process's
    CPU time is fine (CPU time, so that other work on the machine -- a parallel test run -- does not make a
    front end that did the same work look slow; a hang is the watchdog's, which counts wall time)."""
    t0 = time.process_time()
    try:
        prog = from_c(text, params=params, filename="mal.c")
        kind, err = ("program", "") if isinstance(prog, Program) else ("crash", f"returned {type(prog)!r}")
    except MicaError as exc:
        kind = "internal" if "internal error" in str(exc) else "error"
        err = f"{type(exc).__name__}: {exc}"
    except BaseException as exc:     # noqa: BLE001 - anything else is the failure being looked for
        if isinstance(exc, KeyboardInterrupt):
            raise
        kind, err = "crash", _exc_text(exc)
    dt = time.process_time() - t0
    if dt > time_limit and kind != "crash":
        kind, err = "slow", f"took {dt:.2f} s (> {time_limit} s); outcome {kind}: {err}"
    return MalformedOutcome(kind, err, dt)


class _Watchdog:
    """Exits the process (status 3) with a message if one input runs longer than ``limit`` seconds (a
    hang inside native code cannot be interrupted otherwise)."""

    def __init__(self, limit: float, on_hang: Callable[[], None]):
        self.limit, self.on_hang = limit, on_hang
        self.started = None
        self.lock = threading.Lock()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def begin(self):
        with self.lock:
            self.started = time.monotonic()

    def end(self):
        with self.lock:
            self.started = None

    def stop(self):
        self.stopped = True

    def _run(self):
        while not self.stopped:
            time.sleep(0.5)
            with self.lock:
                hung = self.started is not None and time.monotonic() - self.started > self.limit
            if hung:
                self.on_hang()
                os._exit(3)


def malformed_run(count: int, seed: int, *, out_dir: str = ".", time_limit: float = 2.0, log=_log) -> int:
    t0 = time.monotonic()
    counts: Counter = Counter()
    errors: Counter = Counter()
    by_kind: Counter = Counter()
    failures = []
    current = {}

    def on_hang():
        path = os.path.join(out_dir, f"mica-fuzz-malformed-hang-{seed}.c")
        with open(path, "w") as f:
            f.write(current.get("text", ""))
        sys.stderr.write(f"an input ran for more than {10 * time_limit:g} s; written to {path}\n")

    dog = _Watchdog(10 * time_limit, on_hang)
    slowest = 0.0
    for n, (kind, text, params) in enumerate(malformed_texts(seed, count)):
        current["text"] = text
        dog.begin()
        out = check_malformed(text, params, time_limit=time_limit)
        dog.end()
        counts[out.kind] += 1
        by_kind[(kind, out.kind)] += 1
        slowest = max(slowest, out.seconds)
        if out.kind in ("error", "internal"):
            errors[out.error.split(":")[0]] += 1
        if out.failed or out.kind == "internal":
            failures.append((n, kind, text, params, out))
    dog.stop()
    elapsed = time.monotonic() - t0
    log(f"malformed C, seed {seed}: {count} inputs in {elapsed:.1f} s (slowest {slowest * 1000:.0f} ms): "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for e, v in errors.most_common():
        log(f"  {v:6d}  {e}")
    for n, kind, text, params, out in failures:
        path = os.path.join(out_dir, f"mica-fuzz-malformed-{seed}-{n}.c")
        with open(path, "w") as f:
            f.write(f"/* {kind} input {n} (params {params}): {out.kind}\n{out.error.replace('*/', '* /')}\n*/\n")
            f.write(text)
        log(f"FAILURE input {n} ({kind}): {out.kind}: {out.error[:500]} -> {path}")
    return 1 if any(o.failed for *_, o in failures) else 0
