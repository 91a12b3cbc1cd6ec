"""A program's floating type changed: every ``f64`` (or ``f32``/``f16``) array, scalar and cast made ``dtype``.

    prog32 = with_float_dtype(from_c(open("gemm.c").read(), params=...), "f32")

The PolyBench-style kernels people have are written in ``double``; the hardware back ends have no f64
(CSL: f32 and f16; Tenstorrent: bf16/f32 tiles), so ``mica compile --dtype f32`` retargets them. Integer
arrays, integer scalars and casts to integer types are left as they are; loop structure, domains and accesses
are unchanged (only :attr:`Array.dtype`, float :attr:`Program.scalars` and float :class:`Conv` nodes change).
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..errors import AffineError
from ..targets import DTYPES, dtype_name
from .expr import Conv, Expr
from .program import Array, Program


def with_float_dtype(prog: Program, dtype) -> Program:
    """``prog`` with its floating-point arrays, scalars and casts of type ``dtype`` (a float dtype or an alias
    such as ``"float32"``); ``prog`` itself when nothing changes."""
    try:
        dtype = dtype_name(dtype)
    except ValueError as exc:
        raise AffineError(str(exc)) from None
    if dtype not in DTYPES:
        raise AffineError(f"--dtype/with_float_dtype takes a floating type ({', '.join(DTYPES)}), got {dtype!r}; "
                          f"integer arrays keep their types")

    def expr(e: Expr) -> Expr:
        changes = {}
        for f in fields(e):
            v = getattr(e, f.name)
            if isinstance(v, Expr):
                w = expr(v)
                if w is not v:
                    changes[f.name] = w
            elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
                w = tuple(expr(x) for x in v)
                if any(a is not b for a, b in zip(w, v)):
                    changes[f.name] = w
        if isinstance(e, Conv) and e.dtype in DTYPES and e.dtype != dtype:
            changes["dtype"] = dtype
        return replace(e, **changes) if changes else e

    arrays = tuple(Array(a.name, a.shape, dtype) if a.dtype in DTYPES else a for a in prog.arrays)
    scalars = tuple((n, dtype if d in DTYPES else d) for n, d in prog.scalars)
    stmts = tuple(replace(s, expr=expr(s.expr)) for s in prog.statements)
    if arrays == prog.arrays and scalars == prog.scalars and all(a.expr is b.expr for a, b in zip(stmts, prog.statements)):
        return prog
    return replace(prog, arrays=arrays, scalars=scalars, statements=stmts)
