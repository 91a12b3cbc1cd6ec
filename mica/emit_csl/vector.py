"""A statement's right-hand side along an innermost loop -> a sequence of CSL DSD operations.

The expression tree of a statement whose innermost loop moves its destination (any constant stride) is
evaluated as whole rows, one DSD operation per arithmetic node, in the C statement's own order of
evaluation, each operation rounded to the element type exactly as the scalar statement rounds it, so the
rows hold the bits the scalar loop would. Operands (SDK "Builtins for DSD Operations"; hardware.md §2.2):

* a **vector** read: an array read that moves with the loop (a memory DSD at the read's stride and first
  element: shifted offsets are simply other start offsets);
* a **scalar**: a loop-invariant subtree (constants, scalar arguments, reads that do not move with the
  loop), passed as the ``f32`` / ``f16`` value operand;
* a **row** of temporaries (scratch rows the PE program allocates, counted in its SRAM).

``+``, ``-``, ``*`` become ``@fadd`` / ``@fsub`` / ``@fmul`` (``dest, src1, src2`` with either source a
scalar), unary minus ``@fneg``, a copy ``@fmov``, and ``a + b * s``, ``b * s + a``, ``a - b * s`` (``b`` a
vector, ``s`` a scalar) one ``@fmac`` (``dest = src1 + src2 * scalar``; ``a - b*s`` as ``a + b*(-s)``, the
same bits since negation is exact). ``s`` is ``s`` (f32) or ``h`` (f16) after the name. Division, math
functions, conditionals, conversions and loop indices used as values have no DSD operation here: the loop
stays scalar and :class:`Refused` names why.

The result goes straight into the destination row when that is safe -- every read of the destination's
buffer is of the very elements written, and only in the first operation -- else into scratch row 0 and is
copied into the destination at the end. A read of the destination's buffer at elements an earlier iteration
of the loop writes (a loop-carried dependence) keeps the loop scalar.

Public API: :func:`compile_rows` -> ``(ops, rows, direct)``; :class:`Refused`; operand records
:class:`Vec`, :class:`Scal`, :class:`Row`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..affine.expr import Bin, Call, Cmp, Conv, Expr, Index, Neg, Read, Select

#: Temporary rows one statement may use (scratch row 0 for the result, more for subtrees).
MAX_ROWS = 3


class Refused(Exception):
    """The statement stays a scalar loop; ``str(exc)`` is the reason (recorded in plan.json)."""


@dataclass(frozen=True)
class Vec:
    """A vector read (the read ``expr``, its access, its stride along the loop in elements)."""
    expr: Read
    access: object
    stride: int


@dataclass(frozen=True)
class Scal:
    """A loop-invariant scalar subtree."""
    expr: Expr


@dataclass(frozen=True)
class Row:
    """Temporary row ``k`` (row 0 is the result: the destination itself when written directly)."""
    k: int


def compile_rows(e: Expr, vec: Callable[[Expr], Vec | None], invariant: Callable[[Expr], bool],
                 own: Callable[[Vec], str]) -> tuple[list[tuple], int, bool]:
    """The DSD operations computing ``e`` along the loop: ``(ops, rows, direct)``; each op is ``(name,
    dest, *sources)`` with ``name`` in fmac, fadd, fsub, fmul, fneg, fmov and operands :class:`Vec`,
    :class:`Scal`, :class:`Row`; ``rows`` the scratch rows needed; ``direct`` whether row 0 is the
    destination itself (else a final ``fmov`` of scratch row 0 into it is the caller's).

    ``vec(e)`` gives a vector read or None, ``invariant(e)`` whether ``e`` is a scalar operand, ``own(v)``
    the relation of a vector read to the destination: ``"other"`` (another buffer), ``"same"`` (the very
    elements written), ``"ahead"`` (elements of its buffer the loop writes later or never) or a reason
    string why the loop must stay scalar. Raises :class:`Refused`."""
    if invariant(e):
        return [("fmov", Row(0), Scal(e))], 0, True
    ops: list[tuple] = []
    top = [0]

    def operand(x: Expr):
        v = vec(x)
        if v is not None:
            return v
        return Scal(x) if invariant(x) else None

    def gen(x: Expr, k: int) -> None:
        top[0] = max(top[0], k)
        if k >= MAX_ROWS:
            raise Refused(f"the expression needs more than {MAX_ROWS} temporary rows")
        v = vec(x)
        if v is not None:
            ops.append(("fmov", Row(k), v))
            return
        if isinstance(x, Neg):
            a = operand(x.arg)
            if a is None:
                gen(x.arg, k)
                a = Row(k)
            ops.append(("fneg", Row(k), a))
            return
        if isinstance(x, Bin) and x.op in "+-" and _fmac(x, vec, invariant, gen, k, ops):
            return
        if isinstance(x, Bin) and x.op in ("+", "-", "*"):
            name = {"+": "fadd", "-": "fsub", "*": "fmul"}[x.op]
            lo, ro = operand(x.lhs), operand(x.rhs)
            if lo is not None and ro is not None:
                ops.append((name, Row(k), lo, ro))
            elif ro is not None:
                gen(x.lhs, k)
                ops.append((name, Row(k), Row(k), ro))
            elif lo is not None:
                gen(x.rhs, k)
                ops.append((name, Row(k), lo, Row(k)))
            else:
                gen(x.lhs, k)
                gen(x.rhs, k + 1)
                ops.append((name, Row(k), Row(k), Row(k + 1)))
            return
        raise Refused(_why(x))

    gen(e, 0)
    reads = [(i, s) for i, op in enumerate(ops) for s in op[2:] if isinstance(s, Vec)]
    direct = True
    for i, v in reads:
        rel = own(v)
        if rel == "other":
            continue
        if rel not in ("same", "ahead"):
            raise Refused(rel)
        if rel == "ahead" or i > 0:
            direct = False
    rows = top[0] + (0 if direct else 1)
    return ops, rows, direct


def _fmac(x: Bin, vec, invariant, gen, k: int, ops: list) -> bool:
    """``a + b*s``, ``b*s + a`` or ``a - b*s`` (``b`` a vector read, ``s`` a scalar, ``a`` not a scalar) as
    one ``fmac``; False when ``x`` is none of them."""
    cands = [(x.lhs, x.rhs, 1)] + ([(x.rhs, x.lhs, 1)] if x.op == "+" else [])
    for a, prod, sign in cands:
        if not (isinstance(prod, Bin) and prod.op == "*") or invariant(a):
            continue
        for b, s in ((prod.lhs, prod.rhs), (prod.rhs, prod.lhs)):
            bv = vec(b)
            if bv is None or not invariant(s):
                continue
            scal = Scal(s if x.op == "+" else Neg(s))
            av = vec(a)
            if av is None:
                gen(a, k)
                ops.append(("fmac", Row(k), Row(k), bv, scal))
            else:
                ops.append(("fmac", Row(k), av, bv, scal))
            return True
    return False


def _why(x: Expr) -> str:
    """Why node ``x`` has no DSD operation."""
    if isinstance(x, Bin) and x.op == "/":
        return "divides (CSL has no DSD division)"
    if isinstance(x, Bin):
        return f"uses operator {x.op} (no DSD operation for it)"
    if isinstance(x, Call):
        return f"calls {x.fn}() (no DSD operation)"
    if isinstance(x, (Select, Cmp)):
        return "evaluates a condition per element (no DSD operation)"
    if isinstance(x, Conv):
        return "converts between types per element"
    if isinstance(x, Index):
        return "uses a loop index as a value"
    if isinstance(x, Read):
        return "reads an array at a stride no DSD can take, or of another dtype"
    return f"has a {type(x).__name__} node with no DSD operation"
