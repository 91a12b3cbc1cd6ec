"""The one printer of right-hand-side expression trees (:mod:`mica.affine.expr`) in any :class:`Language`.

The language decides the syntax; the caller decides where data live: ``read(ref)`` gives the text of an
array read (its buffer and offset in the caller's layout), ``scalar(name)`` that of a scalar argument, and
``env`` the text of each loop iterator's GLOBAL index (what an :class:`~mica.affine.expr.Index` reads).

Public API: :func:`print_expr`, :func:`expr_text`.
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..affine.expr import Bin, Call, Cmp, Const, Expr, Index, Neg, Read, Scalar, Select
from ..errors import EmitError
from .aff import print_aff
from .languages import TEXT, Language


def print_expr(e: Expr, lang: Language, read: Callable[[str], str],
               scalar: Callable[[str], str] | None = None, *, elem: str = "", where: str = "",
               env: Mapping[str, str] | None = None) -> str:
    """``e`` in ``lang``; ``elem`` is the element type as the language spells it (literals, math
    functions and the conversion of an iterator's value depend on it); ``env`` maps each loop name to the
    text of its global index; a node the language cannot print (an :class:`Index` without ``env``)
    raises :class:`EmitError` prefixed by ``where``."""

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
        if isinstance(e, Index):
            if env is None or lang.index is None:
                return refuse(lang.no_index, e, aff=e.aff.text())
            return lang.index.format(print_aff(e.aff, env, lang), elem)
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
    return print_expr(e, TEXT, ref_text, lambda name: name, env=_Names())


class _Names(dict):
    """Every loop name printed as itself."""

    def __missing__(self, key: str) -> str:
        return key
