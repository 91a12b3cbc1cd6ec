"""The one printer of right-hand-side expression trees (:mod:`mica.affine.expr`) in any :class:`Language`.

The language decides the syntax; the caller decides where data live: ``read(ref)`` gives the text of an
array read (its buffer and offset in the caller's layout), ``scalar(name)`` that of a scalar argument, and
``env`` the text of each loop iterator's GLOBAL index (what an :class:`~mica.affine.expr.Index` reads).

A language with ``explicit_conv`` (CSL) spells every conversion C makes implicitly between integer and float
operands: an integer subtree in float arithmetic, or a float one in an integer context, is wrapped in the
language's ``conv`` to the context's type (``elem``, or ``i32``).

Types (:func:`mica.affine.expr.int_typed`): a caller that passes ``dtype_of`` (the dtype of a read or scalar
leaf) and the written array's ``dtype`` gets C's integer arithmetic where the tree has integer operands:
integer literals there print as the language's integer literals, :class:`~mica.affine.expr.Conv` as its cast;
float parts print as before (literals in ``elem``). Without ``dtype_of`` every node is float (as before).

Public API: :func:`print_expr`, :func:`expr_text`.
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..affine.expr import (INT_DTYPES, Bin, Call, Cmp, Const, Conv, Expr, Index, Neg, Read, Scalar, Select,
                           int_typed)
from ..errors import EmitError
from .aff import print_aff
from .half import compute_dtype
from .languages import TEXT, Language


def print_expr(e: Expr, lang: Language, read: Callable[[str], str],
               scalar: Callable[[str], str] | None = None, *, elem: str = "", where: str = "",
               env: Mapping[str, str] | None = None, dtype_of: Callable[[Expr], str] | None = None,
               dtype: str = "") -> str:
    """``e`` in ``lang``; ``elem`` is the float element type as the language spells it (float literals, math
    functions and the conversion of an iterator's value in a float context depend on it); ``env`` maps each
    loop name to the text of its global index; ``dtype_of`` gives the dtype of a read or scalar leaf and
    ``dtype`` is the written array's (its context: a neutral tree stored to an integer array is integer
    arithmetic); a node the language cannot print (an :class:`Index` without ``env``) raises
    :class:`EmitError` prefixed by ``where``."""

    def refuse(reason: str, node: Expr, **kw):
        raise EmitError(f"{where}: {reason.format(e=repr(node), kind=type(node).__name__, **kw)}")

    def kind(e: Expr, ctx: bool) -> bool:
        """Whether ``e``'s operands compute as integers, in a context that is integer (``ctx``) or not."""
        if dtype_of is None:
            return False
        k = int_typed(e, dtype_of)
        return ctx if k is None else k

    def go(e: Expr, ctx: bool) -> str:
        if lang.explicit_conv and dtype_of is not None and not isinstance(e, (Cmp, Index, Const)):
            own = int_typed(e, dtype_of)
            if own is not None and own != ctx:     # C converts implicitly here; the language needs it spelled
                to = lang.types.get("i32" if ctx else elem)
                if lang.conv is None or to is None:
                    refuse(lang.no_int, e)
                return lang.conv.format(to, node(e, own))
        return node(e, ctx)

    def node(e: Expr, ctx: bool) -> str:
        if isinstance(e, Const):
            if ctx and isinstance(e.value, int) and not isinstance(e.value, bool):
                if lang.int_const is None:
                    refuse(lang.no_int, e)
                return lang.int_const(e.value)
            text = lang.const(e.value, elem)
            return text if text is not None else refuse(lang.no_const, e, v=float(e.value))
        if isinstance(e, Scalar):
            return scalar(e.name) if scalar is not None else refuse(lang.no_scalar, e)
        if isinstance(e, Read):
            return read(e.ref)
        if isinstance(e, Index):
            if env is None or lang.index is None:
                return refuse(lang.no_index, e, aff=e.aff.text())
            ity = lang.types.get("i32") if ctx else None     # an iterator's value in integer arithmetic: an int
            return lang.index.format(print_aff(e.aff, env, lang), ity or elem)
        if isinstance(e, (Bin, Cmp)):
            k = kind(e, ctx)
            if k and lang.int_const is None:
                refuse(lang.no_int, e)
            if e.op == "%" and not k and dtype_of is not None:
                refuse("operator % on floating-point operands in {e}", e)
            if k and e.op in ("/", "%") and lang.int_div is not None:
                return lang.int_div.format("div" if e.op == "/" else "mod", go(e.lhs, k), go(e.rhs, k))
            return lang.binary.format(go(e.lhs, k), e.op, go(e.rhs, k))
        if isinstance(e, Neg):
            return lang.neg.format(go(e.arg, kind(e, ctx)))
        if isinstance(e, Call):
            if lang.call is None:
                refuse(lang.no_call, e, fn=e.fn)
            return f"{lang.call(e.fn, elem)}({', '.join(go(a, False) for a in e.args)})"
        if isinstance(e, Select):
            k = kind(e, ctx)
            return lang.select.format(go(e.cond, False), go(e.then, k), go(e.other, k))
        if isinstance(e, Conv):
            if e.dtype in lang.conv_round:
                return lang.conv_round[e.dtype].format(go(e.arg, kind(e.arg, False)))
            if lang.conv is None or e.dtype not in lang.types:
                refuse(lang.no_int, e)
            return lang.conv.format(lang.types[e.dtype], go(e.arg, kind(e.arg, e.dtype in INT_DTYPES)))
        if lang.repr_unknown:
            return repr(e)
        return refuse("cannot print expression {e}", e)
    return go(e, bool(dtype_of is not None and dtype in INT_DTYPES))


def iterator_casts_dropped(e: Expr, dtype: str) -> Expr:
    """``e`` with each conversion of a loop iterator's value to ``dtype`` (``(float)i`` in C, ``Conv(dtype,
    Index(aff))``) replaced by the bare :class:`Index`: a language that prints an iterator in a float context
    as that conversion of its integer affine value (``index``: the CSL and Metalium back ends, which have no
    integer arithmetic otherwise) then prints it, and prints the same value. Nothing else changes."""
    if isinstance(e, Conv) and e.dtype == dtype and isinstance(e.arg, Index):
        return e.arg
    kids = e.children()
    return e.with_children(tuple(iterator_casts_dropped(k, dtype) for k in kids)) if kids else e


def float_dtype(e: Expr, dtype_of: Callable[[Expr], str], dtype: str) -> str:
    """The float dtype the float parts of ``e`` compute in when it is stored to an array of ``dtype``: that
    dtype if it is a float one (MICA's convention; f32 for a 16-bit one, :mod:`.half`), else -- C's usual
    conversions for a float value stored to an integer array -- ``f64`` if a leaf is ``f64`` or a float literal
    (a C double literal), ``f32`` if a leaf is ``f32`` or 16-bit, ``f64`` otherwise."""
    if dtype not in INT_DTYPES:
        return compute_dtype(dtype)
    leaves = [x for x in e.walk() if isinstance(x, (Read, Scalar, Const))]
    if any(isinstance(x, Const) and not isinstance(x.value, int) for x in leaves):
        return "f64"
    kinds = {compute_dtype(dtype_of(x)) for x in leaves if not isinstance(x, Const)}
    kinds |= {compute_dtype(x.dtype) for x in e.walk() if isinstance(x, Conv)}
    return "f64" if "f64" in kinds or "f32" not in kinds else "f32"


def int_store_float_dtype(e: Expr, dtype_of: Callable[[Expr], str], dtype: str) -> str | None:
    """For ``e`` stored to an array of integer ``dtype``: the float dtype its float parts compute in
    (:func:`float_dtype`; ``f64`` where C computes in double), or None when ``dtype`` is not an integer one or
    ``e`` has no float part. Changes nothing."""
    if dtype not in INT_DTYPES or not any(int_typed(x, dtype_of) is False for x in e.walk()):
        return None
    return float_dtype(e, dtype_of, dtype)


def expr_text(e: Expr, ref_text: Callable[[str], str]) -> str:
    """Readable text of ``e`` (the MeshIR text form); ``ref_text(ref)`` gives that of an array read."""
    return print_expr(e, TEXT, ref_text, lambda name: name, env=_Names())


class _Names(dict):
    """Every loop name printed as itself."""

    def __missing__(self, key: str) -> str:
        return key
