"""Differential fuzzing of MICA: random affine C programs on random meshes against the C itself.

Two fuzzers live here, each usable from tests (small, derandomized) and from the command line (long runs):

* **Programs.** :func:`generate` builds a random C function in the affine subset
  :func:`mica.affine.from_c.from_c` accepts -- 1-4 statements in 1-4 loops, nested and sequential,
  rectangular, offset (``i = 1``, ``i < n - 1``), triangular (``j <= i``, ``j = i + 1``) and min-bounded
  loops, up and down, several arrays of rank 1-3 with in-bounds affine subscripts (in bounds *by
  construction*: every subscript's range over the loop ranges is computed and the array extents are made
  to cover it), ``=``/``+=`` updates (reductions whenever a statement's subscripts drop a loop), ``int``
  size parameters and floating scalar parameters; one element type per program (``double``/``float``) --
  plus a random mesh (1x1 .. 6x5, most of which do not divide the sizes) and a thread count.
  :func:`check_case` compiles it (``from_c`` -> ``compile_affine(target="wormhole")`` -> ``run``) and
  compares every written array with :func:`mica.testing.run_c` (the C compiled natively).

  Outcomes (:class:`Outcome`): ``ok``; ``refused`` -- ``compile_affine`` raised a
  :class:`~mica.errors.ScheduleError` (including :class:`~mica.errors.SramError`) or a
  :class:`~mica.errors.CommError` with a clear message, an accepted answer that is counted by reason;
  everything else is a failure: ``mismatch`` (wrong numbers), ``crash`` (any other exception, from the
  front end, the compiler or the emulator; an unclear refusal), ``timeout`` and ``died`` (the process
  running the program was killed by a signal, e.g. a segfault in native code) in the long run.

  Programs are drawn through a :class:`Chooser`: a seeded :class:`RandomChooser` for the long run,
  :func:`cases` (a hypothesis strategy whose draws shrink) for tests. A random program is identified by
  its list of choices, which :func:`shrink` reduces to a minimal failing program.

* **Malformed C.** :func:`malformed_texts` yields truncated, byte-flipped, token-mutated, spliced and
  random texts; :func:`check_malformed` feeds one to ``from_c``, whose only acceptable answers are a
  :class:`~mica.affine.program.Program` or a :class:`~mica.errors.MicaError`, within a time bound.

Command line::

    python -m mica.fuzz --seconds 3600 --seed 1 [--jobs 2] [--out DIR] [--keep-going]
    python -m mica.fuzz --malformed --count 5000 --seed 1
    python -m mica.fuzz --replay mica-fuzz-failure-1-17.c

The long run evaluates every program in a worker process (a crash or hang of native code cannot take the
fuzzer down), prints the counts (programs, compiled, refused by reason, mismatches, crashes, elapsed) and on
the first failure shrinks it, writes the minimal reproducer (C source, mesh, target, params, seed, the
failure) to ``DIR/mica-fuzz-failure-<seed>-<n>.c`` and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

__all__ = ["Chooser", "RandomChooser", "ReplayChooser", "FuzzCase", "Outcome", "generate", "cases",
           "case_from_seed", "case_from_choices",
           "check_case", "make_inputs", "shrink", "malformed_texts", "check_malformed", "main"]

TARGET = "wormhole"
MAX_EXTENT = 12                 # every array dimension is at most this long
MESH_W, MESH_H = 6, 5           # meshes 1x1 .. 6x5
_MESH_WIDTHS = (2, 1, 3, 4, 5, 6)
F64_TOL = dict(rtol=1e-9, atol=1e-12)
# f32 programs use only + * fmaxf and exact halvings on inputs in [0.5, 1.5) (no '-', so no
# cancellation): the relative error of any result is at most (operations on its path) * 2^-24 whatever
# order the mapping sums in. A value depends on at most 12^3 = 1728 terms of up to 4 factors plus a few
# chained updates, so the worst case is ~ 1e4 * 6e-8 = 6e-4 and the typical one (errors grow like the
# square root of the count) ~ 100 * 6e-8 = 6e-6: rtol 1e-4 is ~ 15x the typical error of the largest sums,
# while a missing or doubled term of a sum of n terms changes it by ~ 1/n of itself on average, >= 6e-4
# for n <= 1728 (a term much smaller than the average may slip through). (f64 programs may
# subtract; rtol 1e-9 is >= 1e3 x their worst-case rounding (1e4 operations x 1e-16), and atol 1e-12
# covers results that cancel to ~ 0.)
F32_TOL = dict(rtol=1e-4, atol=1e-6)


# -- choices ---------------------------------------------------------------------------------------------

class Chooser:
    """The source of every random decision of :func:`generate`: ``draw(n)`` is an int in ``[0, n)``.

    Decisions are made so that smaller draws give simpler programs (0 = the simplest option), which is
    what makes shrinking a list of choices towards zeros shrink the program.
    """

    def __init__(self):
        self.record: list[int] = []

    def _draw(self, n: int) -> int:
        raise NotImplementedError

    def draw(self, n: int) -> int:
        if n <= 1:
            return 0
        v = self._draw(n)
        self.record.append(v)
        return v

    def choice(self, seq: Sequence):
        return seq[self.draw(len(seq))]

    def coin(self, p: float) -> bool:
        """True with probability ``p`` (a zero draw is False)."""
        return self.draw(100) >= 100 - round(100 * p)

    def between(self, lo: int, hi: int) -> int:
        return lo + self.draw(hi - lo + 1)


class RandomChooser(Chooser):
    """Draws from ``random.Random(seed)``."""

    def __init__(self, seed):
        super().__init__()
        self.rng = random.Random(seed)

    def _draw(self, n: int) -> int:
        return self.rng.randrange(n)


class ReplayChooser(Chooser):
    """Replays a list of choices (clamped to each draw's range); zeros once the list is exhausted."""

    def __init__(self, choices: Sequence[int]):
        super().__init__()
        self.choices = list(choices)
        self.pos = 0

    def _draw(self, n: int) -> int:
        v = self.choices[self.pos] if self.pos < len(self.choices) else 0
        self.pos += 1
        return min(max(int(v), 0), n - 1)


class _HypothesisChooser(Chooser):
    def __init__(self, draw):
        super().__init__()
        self._hdraw = draw

    def _draw(self, n: int) -> int:
        from hypothesis import strategies as st
        return self._hdraw(st.integers(0, n - 1))


# -- the program generator -------------------------------------------------------------------------------

@dataclass(frozen=True)
class FuzzCase:
    """One random program and where it runs."""

    source: str
    params: dict
    mesh: tuple[int, int]
    threads: int = 2
    target: str = TARGET
    dtype: str = "f64"
    choices: tuple[int, ...] = field(default=(), compare=False)

    def header(self) -> str:
        return (f"mesh={self.mesh[0]}x{self.mesh[1]} target={self.target} params={self.params} "
                f"threads={self.threads} dtype={self.dtype}")


@dataclass
class _Loop:
    var: str
    lo: int                 # the iterator's range over every execution: [lo, hi] (inclusive)
    hi: int
    header: str = ""
    body: list = field(default_factory=list)


@dataclass
class _Stmt:
    lhs: tuple              # (array, [subscript texts])
    op: str
    rhs: str


ARRAY_NAMES = ("A", "B", "C", "D", "E", "F")
LOOP_VARS = ("i", "j", "k", "l")
SCALARS = ("alpha", "beta")


class _Gen:
    def __init__(self, ch: Chooser, max_size: int):
        self.ch = ch
        self.dtype = "float" if ch.draw(3) == 2 else "double"
        self.sizes = {"n": ch.between(2, max_size), "m": ch.between(2, max_size)}
        self.loops_left = 1 + ch.draw(4)
        self.stmts_left = 1 + ch.draw(4)
        self.ranks: dict[str, int] = {}                 # array -> rank, in order of first use
        self.ranges: dict[str, list[list[int]]] = {}    # array -> per dim [min, max] index used
        self.scalars_used: set[str] = set()
        self.decl_in_for = ch.coin(0.3)

    # -- loops ------------------------------------------------------------------------------------------
    def size_text(self) -> tuple[str, int]:
        k = self.ch.draw(3)
        if k == 0:
            return "n", self.sizes["n"]
        if k == 1:
            return "m", self.sizes["m"]
        c = self.ch.between(2, 8)
        return str(c), c

    def loop(self, scope: list[_Loop]) -> _Loop | None:
        ch = self.ch
        var = LOOP_VARS[len(scope)]
        N, nv = self.size_text()
        forms = [("0", N, 0, nv - 1), ("1", N, 1, nv - 1), ("0", f"{N} - 1", 0, nv - 2)]
        if scope:
            u = scope[ch.draw(len(scope))]
            forms += [("0", f"{u.var} + 1", 0, u.hi),                      # j <= i
                      (u.var, N, u.lo, nv - 1),                           # j = i .. N-1
                      (f"{u.var} + 1", N, u.lo + 1, nv - 1),              # j = i+1 .. N-1
                      ("0", u.var, 0, u.hi - 1),                          # j < i
                      (u.var, f"({u.var} + 2 < {N} ? {u.var} + 2 : {N})", u.lo, min(u.hi + 1, nv - 1))]
        lo_t, ub_t, lo, hi = forms[ch.draw(len(forms))]
        if lo > hi:
            lo_t, ub_t, lo, hi = forms[0]
        v = var
        decl = f"int {v}" if self.decl_in_for else v
        if ch.coin(0.25):                                  # downwards
            start = ub_t[:-4] if ub_t.endswith(" + 1") else f"{ub_t} - 1"
            header = f"for ({decl} = {start}; {v} >= {lo_t}; {v}--)"
        elif ch.coin(0.3):                                 # inclusive upper bound
            last = ub_t[:-4] if ub_t.endswith(" + 1") else f"{ub_t} - 1"
            header = f"for ({decl} = {lo_t}; {v} <= {last}; {v}++)"
        else:
            header = f"for ({decl} = {lo_t}; {v} < {ub_t}; {ch.choice(['++' + v, v + '++', v + ' += 1'])})"
        return _Loop(var, lo, hi, header)

    # -- accesses ---------------------------------------------------------------------------------------
    def subscript(self, scope: list[_Loop], v: _Loop | None) -> tuple[str, int, int]:
        """An affine subscript over the loops in scope, mostly of ``v``, with its index range [lo, hi]
        (within bounds)."""
        ch = self.ch
        top = MAX_EXTENT - 1
        if not scope or ch.coin(0.08):
            c = ch.draw(3)
            return str(c), c, c
        if v is None or ch.coin(0.2):
            v = scope[ch.draw(len(scope))]
        kind = ch.draw(10)
        if kind >= 6:
            off = ch.choice([1, -1, 2])
            if v.lo + off >= 0 and v.hi + off <= top:
                return (f"{v.var} + {off}" if off > 0 else f"{v.var} - {-off}"), v.lo + off, v.hi + off
        if kind == 5:                                       # reversed
            k = v.hi + ch.draw(2)
            if k <= top:
                return f"{k} - {v.var}", k - v.hi, k - v.lo
        if kind == 4 and len(scope) > 1:                    # sum of two iterators
            u = scope[ch.draw(len(scope))]
            if u is not v and u.hi + v.hi <= top:
                return f"{u.var} + {v.var}", u.lo + v.lo, u.hi + v.hi
        if kind == 3 and 2 * v.hi <= top:                   # strided
            return f"2 * {v.var}", 2 * v.lo, 2 * v.hi
        return v.var, v.lo, v.hi

    def access(self, scope: list[_Loop], name: str | None = None) -> str:
        ch = self.ch
        if name is None:
            fresh = [a for a in ARRAY_NAMES if a not in self.ranks]
            if not self.ranks or (fresh and ch.coin(0.35)):
                name = fresh[0]
            else:
                name = ch.choice(list(self.ranks))
        if name not in self.ranks:
            self.ranks[name] = 1 + ch.draw(3) if not scope or ch.coin(0.4) else min(len(scope), 3)
            self.ranges[name] = [[MAX_EXTENT, 0] for _ in range(self.ranks[name])]
        subs = []
        rank = self.ranks[name]
        order = list(scope[-rank:])             # the innermost loops, in order, like most code
        if len(order) > 1 and ch.coin(0.3):     # transposed
            order = order[1:] + order[:1]
        for d in range(self.ranks[name]):
            text, lo, hi = self.subscript(scope, order[d] if d < len(order) else None)
            r = self.ranges[name][d]
            r[0], r[1] = min(r[0], lo), max(r[1], hi)
            subs.append(text)
        return name + "".join(f"[{s}]" for s in subs)

    # -- expressions and statements ---------------------------------------------------------------------
    def literal(self) -> str:
        v = self.ch.choice(["0.5", "2.0", "1.5", "0.25"])
        return v + ("f" if self.dtype == "float" else "")

    def term(self, scope) -> str:
        ch = self.ch
        k = ch.draw(10)
        if k == 8:
            s = ch.choice(SCALARS)
            self.scalars_used.add(s)
            return s
        if k == 9:
            return self.literal()
        return self.access(scope)

    def expr(self, scope, depth: int = 0) -> str:
        ch = self.ch
        e = self.term(scope)
        for _ in range(ch.draw(3)):
            ops = ["+", "*"] + (["-"] if self.dtype == "double" else [])
            op = ch.choice(ops)
            rhs = self.term(scope) if depth >= 1 or not ch.coin(0.2) else f"({self.expr(scope, depth + 1)})"
            e = f"{e} {op} {rhs}"
        k = ch.draw(12)
        f = "f" if self.dtype == "float" else ""
        if k == 11:
            e = f"fmax{f}({e}, {self.term(scope)})"
        elif k == 10:
            e = f"({e}) / {'2.0' if not f else '2.0f'}"
        elif k == 9 and self.dtype == "double":
            e = f"fabs({e})"
        return e

    def stmt(self, scope) -> _Stmt:
        ch = self.ch
        lhs = self.access(scope)
        op = ch.choice(["=", "+=", "="] + (["-="] if self.dtype == "double" else []))
        return _Stmt(lhs, op, self.expr(scope))

    # -- structure --------------------------------------------------------------------------------------
    def block(self, scope: list[_Loop], depth: int) -> list:
        ch = self.ch
        items = []
        for _ in range(1 + ch.draw(3 if depth == 0 else 2)):
            if self.loops_left and len(scope) < 4 and (not scope or ch.coin(0.45)):
                self.loops_left -= 1
                lp = self.loop(scope)
                lp.body = self.block(scope + [lp], depth + 1)
                if lp.body:
                    items.append(lp)
            elif self.stmts_left and (scope or ch.coin(0.1)):
                self.stmts_left -= 1
                items.append(self.stmt(scope))
        return items

    def render(self, items, pad: str) -> list[str]:
        out = []
        for it in items:
            if isinstance(it, _Loop):
                if len(it.body) == 1 and self.ch.coin(0.5):
                    out.append(pad + it.header)
                    out += self.render(it.body, pad + "  ")
                else:
                    out.append(pad + it.header + " {")
                    out += self.render(it.body, pad + "  ")
                    out.append(pad + "}")
            else:
                out.append(f"{pad}{it.lhs} {it.op} {it.rhs};")
        return out

    def program(self) -> str:
        items = self.block([], 0)
        if not any(isinstance(it, _Stmt) or it.body for it in items):
            items = [self.stmt([])]
        body = self.render(items, "  ")
        ct = self.dtype
        params = ["int n", "int m"] + [f"{ct} {s}" for s in SCALARS if s in self.scalars_used]
        for name, rank in self.ranks.items():
            dims = []
            for lo, hi in self.ranges[name]:
                ext = max(hi, 0) + 1
                if ext < MAX_EXTENT and self.ch.coin(0.2):
                    ext += 1
                if ext == self.sizes["n"] and self.ch.coin(0.5):
                    dims.append("n")
                elif ext == self.sizes["n"] + 1 and self.ch.coin(0.5):
                    dims.append("n + 1")
                else:
                    dims.append(str(ext))
            params.append(f"{ct} {name}" + "".join(f"[{d}]" for d in dims))
        lines = [f"void kernel_fuzz({', '.join(params)})", "{"]
        if not self.decl_in_for:
            lines.append("  int i, j, k, l;")
        return "\n".join(lines + body + ["}"]) + "\n"


def generate(ch: Chooser, *, max_size: int = 10, meshes: bool = True) -> FuzzCase:
    """A random :class:`FuzzCase` from the decisions of ``ch`` (sizes ``n``, ``m`` in 2..``max_size``)."""
    g = _Gen(ch, max_size)
    src = g.program()
    # a zero draw gives 2x1, the smallest mesh that distributes anything (the 0-biased hypothesis
    # draws and the shrinker then stay on meshes where the mapping matters)
    mesh = (_MESH_WIDTHS[ch.draw(MESH_W)], 1 + ch.draw(MESH_H)) if meshes else (2, 1)
    threads = 1 + ch.draw(3)
    return FuzzCase(src, dict(g.sizes), mesh, threads, TARGET, "f32" if g.dtype == "float" else "f64",
                    tuple(ch.record))


def case_from_seed(seed, **kw) -> FuzzCase:
    return generate(RandomChooser(seed), **kw)


def case_from_choices(choices: Sequence[int], **kw) -> FuzzCase:
    return generate(ReplayChooser(choices), **kw)


def cases(max_size: int = 10):
    """A hypothesis strategy of :class:`FuzzCase` (shrinks towards fewer loops, statements and arrays)."""
    from hypothesis import strategies as st

    @st.composite
    def _cases(draw):
        return generate(_HypothesisChooser(draw), max_size=max_size)
    return _cases()


# -- running one program ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """``kind`` is ok / refused / mismatch / crash / timeout / died; ``reason`` a short bucket name;
    ``message`` the details (exception text, traceback or the differing elements)."""

    kind: str
    reason: str = ""
    message: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "refused")


def make_inputs(source: str, params: dict, seed: int = 0) -> dict:
    """Inputs for every array (uniform in [0.5, 1.5)) and floating scalar parameter of the last function."""
    from .affine.c_parse import find_function, fold_int, parse_c, signature, typedefs_of
    rng = np.random.default_rng(seed)
    ast = parse_c(source, "<fuzz>")
    fdef = find_function(ast, None, "<fuzz>")
    out = {}
    for p in signature(fdef, typedefs_of(ast)):
        if p.kind == "array":
            shape = tuple(fold_int(d, lambda n: params[n.name], "<fuzz>", "extent") for d in p.dims)
            dt = np.float64 if p.elem == "double" else np.float32
            out[p.name] = rng.uniform(0.5, 1.5, shape).astype(dt)
        elif p.kind in ("double", "float"):
            out[p.name] = float(rng.uniform(0.5, 1.5))
    return out


def _reason(exc: BaseException) -> str:
    """A short bucket for a refusal: the error class and its message with numbers and names blurred."""
    msg = str(exc).split("\n")[0]
    msg = re.sub(r"\b\d+\b", "N", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    return f"{type(exc).__name__}: {msg[:90]}"


def _clear(exc: BaseException) -> bool:
    msg = str(exc)
    return len(msg.strip()) >= 15 and "internal error" not in msg and "Traceback" not in msg


def check_case(case: FuzzCase, *, input_seed: int = 0) -> Outcome:
    """Compiles and runs ``case`` and compares it with the natively compiled C (see the module doc)."""
    import mica
    from .affine.from_c import from_c
    from .errors import CommError, ScheduleError
    from .testing import run_c

    t0 = time.perf_counter()

    def done(kind, reason="", message=""):
        return Outcome(kind, reason, message, time.perf_counter() - t0)

    try:
        prog = from_c(case.source, params=case.params, filename="fuzz.c")
    except Exception as exc:        # the generator only writes valid programs of the subset
        return done("crash", f"from_c: {type(exc).__name__}", _exc_text(exc))
    ins = make_inputs(case.source, case.params, input_seed)
    want = run_c(case.source, None, ins, case.params, filename="fuzz.c")
    try:
        compiled = mica.compile_affine(prog, mesh=case.mesh, target=case.target)
    except (ScheduleError, CommError) as exc:
        if _clear(exc):
            return done("refused", _reason(exc), str(exc))
        return done("crash", f"unclear refusal: {type(exc).__name__}", _exc_text(exc))
    except Exception as exc:
        return done("crash", f"compile_affine: {type(exc).__name__}", _exc_text(exc))
    given = {k: v for k, v in ins.items() if k in set(prog.inputs) or k in {n for n, _ in prog.scalars}}
    try:
        got = compiled.run(given, threads=case.threads).outputs
    except Exception as exc:
        return done("crash", f"run: {type(exc).__name__}", _exc_text(exc))
    tol = F32_TOL if case.dtype == "f32" else F64_TOL
    problems = []
    if set(got) != set(want):
        problems.append(f"outputs {sorted(got)}, expected {sorted(want)}")
    for name in sorted(set(got) & set(want)):
        g, w = np.asarray(got[name]), np.asarray(want[name])
        if g.shape != w.shape:
            problems.append(f"{name}: shape {g.shape}, expected {w.shape}")
            continue
        close = np.isclose(g, w, equal_nan=True, **tol)
        if not close.all():
            bad = np.argwhere(~close)
            first = tuple(int(v) for v in bad[0])
            problems.append(f"{name}: {len(bad)} of {w.size} elements differ; first at {first}: "
                            f"got {g[first].item()!r}, expected {w[first].item()!r}")
    if problems:
        plan = str(compiled.schedule).split("\n")[0]
        return done("mismatch", "mismatch", "\n".join(problems) + f"\nplan: {plan}")
    return done("ok")


def _exc_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _same_failure(a: Outcome, b: Outcome) -> bool:
    return b.failed and a.kind == b.kind and (a.kind != "crash" or a.reason == b.reason)


# -- worker processes -------------------------------------------------------------------------------------

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
        import signal
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
        import multiprocessing as mp
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
        from multiprocessing.connection import wait as mp_wait
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


# -- shrinking ----------------------------------------------------------------------------------------------

def shrink(choices: Sequence[int], failure: Outcome, evaluate: Callable[[list[int]], Outcome], *,
           max_size: int = 10, budget_s: float = 300.0, max_tries: int = 300,
           log: Callable[[str], None] = lambda s: None) -> tuple[list[int], Outcome]:
    """The smallest choice list found (by deleting spans and lowering values) whose program still fails
    the same way as ``failure`` under ``evaluate``; with its outcome."""
    best = list(choices)
    best_out = failure
    best_src = case_from_choices(best, max_size=max_size).source
    deadline = time.monotonic() + budget_s
    tries = 0
    seen = {best_src}

    def attempt(cand: list[int]) -> bool:
        nonlocal best, best_out, best_src, tries
        if tries >= max_tries or time.monotonic() > deadline:
            return False
        src = case_from_choices(cand, max_size=max_size)
        key = src.source + src.header()
        if key in seen:
            return False
        seen.add(key)
        tries += 1
        out = evaluate(cand)
        if _same_failure(failure, out):
            best, best_out, best_src = cand, out, src.source
            log(f"  shrunk to {len(best)} choices, {len(best_src)} characters")
            return True
        return False

    improved = True
    while improved and tries < max_tries and time.monotonic() < deadline:
        improved = False
        for size in (16, 8, 4, 2, 1):
            i = 0
            while i < len(best):
                if attempt(best[:i] + best[i + size:]):
                    improved = True
                else:
                    i += size
        for i in range(len(best)):
            for v in (0, best[i] // 2, best[i] - 1):
                if 0 <= v < best[i] and attempt(best[:i] + [v] + best[i + 1:]):
                    improved = True
                    break
    return best, best_out


# -- the long run -------------------------------------------------------------------------------------------

def _program_seed(seed: int, index: int) -> str:
    return f"{seed}:{index}"


def write_reproducer(path: str, case: FuzzCase, out: Outcome, seed: int, index: int) -> None:
    choices = list(case.choices)
    while choices and choices[-1] == 0:     # zeros past the end are implied
        choices.pop()
    meta = {"seed": seed, "index": index, "mesh": list(case.mesh), "target": case.target,
            "params": case.params, "threads": case.threads, "dtype": case.dtype, "choices": choices}
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
                    tuple(meta.get("choices", ())))


def _log(s: str) -> None:
    print(s, flush=True)


def soak(seconds: float, seed: int, jobs: int = 1, *, out_dir: str = ".", keep_going: bool = False,
         timeout: float = 180.0, max_size: int = 10, shrink_s: float = 300.0, limit: int | None = None,
         max_shrinks: int = 5, inject: str | None = None, log=_log) -> int:
    """The long differential run (see the module doc). Returns the process exit status."""
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


# -- malformed C ----------------------------------------------------------------------------------------------

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
    """Feeds ``text`` to ``from_c``; a Program or a MicaError within ``time_limit`` seconds is fine."""
    from .affine.from_c import from_c
    from .affine.program import Program
    from .errors import MicaError
    t0 = time.perf_counter()
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
    dt = time.perf_counter() - t0
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


# -- command line -------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mica.fuzz", description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    sys.exit(main())
