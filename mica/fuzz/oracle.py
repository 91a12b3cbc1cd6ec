"""Running one random program and judging it: :func:`check_case` compiles it with MICA, runs it on the
emulator and compares every written array with the C compiled natively (the oracle), giving an
:class:`Outcome` (ok, refused with a clear reason, or a failure)."""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass
from math import isqrt

import numpy as np

from ..affine.c_parse import find_function, fold_int, parse_c, signature, typedefs_of
from ..affine.fold import fold_classes, fold_factor, fold_program
from ..affine.from_c import from_c
from ..affine.repeat import repeat_candidates
from ..errors import CommError, MicaError, ScheduleError
from ..pipeline import LOWERING, compile_affine
from ..tiling.operators import phase_loop_plan
from ..testing import run_c
from .generate import FuzzCase

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
_INT_NP = {"i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8}



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


def make_inputs(source: str, params: dict, seed: int = 0, data: str = "uniform") -> dict:
    """Inputs for every array and floating scalar parameter of the last function: uniform in [0.5, 1.5),
    or with ``data="small-int"`` integers 0..3 (scalars 1..3), so that equal values (ties of max/min and
    arg-min) are common and every value the programs compute is exact (sums and products of small
    integers, halvings), whatever order a mapping evaluates them in."""
    rng = np.random.default_rng(seed)
    ast = parse_c(source, "<fuzz>")
    fdef = find_function(ast, None, "<fuzz>")
    out = {}
    for p in signature(fdef, typedefs_of(ast)):
        if p.kind == "array":
            shape = tuple(fold_int(d, lambda n: params[n.name], "<fuzz>", "extent") for d in p.dims)
            dt = np.float64 if p.elem == "double" else np.float32
            if p.elem == "int":
                out[p.name] = rng.integers(0, 4, shape).astype(_INT_NP[p.dtype])
            elif data == "small-int":
                out[p.name] = rng.integers(0, 4, shape).astype(dt)
            else:
                out[p.name] = rng.uniform(0.5, 1.5, shape).astype(dt)
        elif p.kind in ("double", "float"):
            out[p.name] = float(rng.integers(1, 4)) if data == "small-int" else float(rng.uniform(0.5, 1.5))
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
    """Compiles and runs ``case`` and compares it with the natively compiled C (see the package doc of
    :mod:`mica.fuzz`)."""
    t0 = time.perf_counter()

    def done(kind, reason="", message=""):
        return Outcome(kind, reason, message, time.perf_counter() - t0)

    try:
        prog = from_c(case.source, params=case.params, filename="fuzz.c")
    except Exception as exc:        # the generator only writes valid programs of the subset
        return done("crash", f"from_c: {type(exc).__name__}", _exc_text(exc))
    ins = make_inputs(case.source, case.params, input_seed, case.data)
    want = run_c(case.source, None, ins, case.params, filename="fuzz.c")
    try:
        compiled = compile_affine(prog, mesh=case.mesh, target=case.target)
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
    tol = F32_TOL if case.dtype == "f32" else dict(rtol=0, atol=0) if case.dtype == "i32" else F64_TOL
    problems = _differences(got, want, tol)
    if problems:
        plan = str(compiled.schedule).split("\n")[0]
        return done("mismatch", "mismatch", "\n".join(problems) + f"\nplan: {plan}")
    if repeat_candidates(compiled.program) and not compiled.schedule.repeat:
        # A time loop around several nests: its phase-loop plan too, which the search may not have chosen.
        try:
            looped = compile_affine(prog, mesh=case.mesh, target=case.target, schedule=phase_loop_plan(
                compiled.program, case.mesh, compiled.target, LOWERING))
        except MicaError:
            return done("ok")
        except Exception as exc:
            return done("crash", f"phase loop: {type(exc).__name__}", _exc_text(exc))
        try:
            got = looped.run(given, threads=case.threads).outputs
        except Exception as exc:
            return done("crash", f"run (phase loop): {type(exc).__name__}", _exc_text(exc))
        problems = _differences(got, want, tol)
        if problems:
            plan = str(looped.schedule).split("\n")[0]
            return done("mismatch", "mismatch (phase loop)", "\n".join(problems) + f"\nplan: {plan}")
    folds = [] if compiled.program.folded else fold_classes(prog)
    b = fold_factor(folds[0].n, isqrt(folds[0].n)) if folds else None
    if b is not None:
        # A loop that folds: the folded program too (mica.affine.fold), which the search rarely picks at
        # these sizes; it takes and gives the arrays in the C's shapes.
        try:
            folded = compile_affine(fold_program(prog, folds[0], b), mesh=case.mesh, target=case.target)
        except (ScheduleError, CommError) as exc:
            return done("ok") if _clear(exc) else done("crash", f"unclear refusal (folded): {type(exc).__name__}",
                                                        _exc_text(exc))
        except Exception as exc:
            return done("crash", f"compile_affine (folded): {type(exc).__name__}", _exc_text(exc))
        try:
            got = folded.run(given, threads=case.threads).outputs
        except Exception as exc:
            return done("crash", f"run (folded): {type(exc).__name__}", _exc_text(exc))
        problems = _differences(got, want, tol)
        if problems:
            plan = str(folded.schedule).split("\n")[0]
            return done("mismatch", "mismatch (folded)", "\n".join(problems) + f"\nplan: {plan}")
    return done("ok")


def _differences(got: dict, want: dict, tol: dict) -> list[str]:
    """What differs between the outputs ``got`` and the native C's ``want`` (within ``tol``), one line each."""
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
    return problems


def _exc_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _same_failure(a: Outcome, b: Outcome) -> bool:
    return b.failed and a.kind == b.kind and (a.kind != "crash" or a.reason == b.reason)
