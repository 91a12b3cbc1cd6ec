"""The one printer of right-hand-side expression trees (:mod:`mica.affine.expr`) in any :class:`Language`.

The language decides the syntax; the caller decides where data live: ``read(ref)`` gives the text of an
array read (its buffer and offset in the caller's layout), ``scalar(name)`` that of a scalar argument.

Public API: :func:`print_expr`, :func:`expr_text`.
"""

from __future__ import annotations

from typing import Callable

from ..affine.expr import Bin, Call, Cmp, Const, Expr, Neg, Read, Scalar, Select
from ..errors import EmitError
from .languages import TEXT, Language


def print_expr(e: Expr, lang: Language, read: Callable[[str], str],
               scalar: Callable[[str], str] | None = None, *, elem: str = "", where: str = "") -> str:
    """``e`` in ``lang``; ``elem`` is the element type as the language spells it (literals and math
    functions depend on it); a node the language cannot print raises :class:`EmitError` prefixed by
    ``where``."""

    def refuse(reason: str, node: Expr, **kw):
        raise EmitError(f"{where}: {reason.format(e=repr(node), kind=type(node).__name__, **kw)}")

    def go(e: Expr) -> str:
        if isinstance(e, Const):
            text = lang.const(e.value, elem)
            return text if text is not None else refuse(lang.no_const, e, v=float(e.value))
        if isinstance(e, Scalar):
            return scalar(e.name) if scalar is not None else refuse(lang.no_scalar, e)
        if isinstance(e, Read):
            return read(e.ref)
        if isinstance(e, (Bin, Cmp)):
            return lang.binary.format(go(e.lhs), e.op, go(e.rhs))
        if isinstance(e, Neg):
            return lang.neg.format(go(e.arg))
        if isinstance(e, Call):
            if lang.call is None:
                refuse(lang.no_call, e, fn=e.fn)
            return f"{lang.call(e.fn, elem)}({', '.join(go(a) for a in e.args)})"
        if isinstance(e, Select):
            return lang.select.format(go(e.cond), go(e.then), go(e.other))
        if lang.repr_unknown:
            return repr(e)
        return refuse("cannot print expression {e}", e)
    return go(e)


def expr_text(e: Expr, ref_text: Callable[[str], str]) -> str:
    """Readable text of ``e`` (the MeshIR text form); ``ref_text(ref)`` gives that of an array read."""
    return print_expr(e, TEXT, ref_text, lambda name: name)
