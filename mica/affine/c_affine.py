"""Affine forms and Presburger formulas for the C front end.

A *formula* is an immutable tuple tree over integer affine forms (:class:`Lin`):

* ``("T",)`` / ``("F",)``: true / false;
* ``("ge", a)``: ``a >= 0``; ``("eq", a)``: ``a == 0``;
* ``("and", (f, ...))`` / ``("or", (f, ...))``.

Negation is pushed to the atoms (:func:`f_neg`), so formulas stay in negation normal form; constant
atoms are folded as formulas are built. :func:`f_text` prints isl constraint text.

A *piecewise* affine value (what a C integer expression with ternaries denotes) is a list of
``(formula, Lin)`` pairs whose formulas partition the space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .expr import Aff
from .isl_names import aff_text

TRUE = ("T",)
FALSE = ("F",)

#: Words isl's parser reserves; loop and array names must avoid them.
ISL_KEYWORDS = frozenset({"and", "or", "not", "min", "max", "floor", "ceil", "floord", "ceild", "exists",
                          "true", "false", "infty", "infinity", "mod", "implies", "rat", "nan", "xor", "div"})


def is_isl_keyword(name: str) -> bool:
    """isl reads its keywords in any letter case (``MAX``, ``Floor`` ...)."""
    return name.lower() in ISL_KEYWORDS

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Lin:
    """``sum(c * term) + const`` where a term is a loop name or an integer division ``floor((e)/d)``
    (printed in isl syntax). Like :class:`Aff`, but division terms are allowed (in conditions)."""

    coeffs: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(terms: dict, const: int = 0) -> "Lin":
        return Lin(tuple(sorted((k, v) for k, v in terms.items() if v)), const)

    @staticmethod
    def var(name: str) -> "Lin":
        return Lin(((name, 1),), 0)

    @staticmethod
    def floor_div(e: "Lin", d: int) -> "Lin":
        """``floor(e / d)`` for ``d > 0``."""
        if not e.coeffs:
            return Lin((), e.const // d)
        return Lin.var(f"floor(({e.text()})/{d})")

    def coeff(self, name: str) -> int:
        return dict(self.coeffs).get(name, 0)

    def mentions(self, name: str) -> bool:
        pat = re.compile(rf"\b{re.escape(name)}\b")
        return any(k == name or pat.search(k) for k, _ in self.coeffs)

    def __add__(self, other: "Lin | int") -> "Lin":
        if isinstance(other, int):
            return Lin(self.coeffs, self.const + other)
        d = dict(self.coeffs)
        for n, c in other.coeffs:
            d[n] = d.get(n, 0) + c
        return Lin.of(d, self.const + other.const)

    def text(self) -> str:
        return aff_text(self.coeffs, self.const)

    def __str__(self) -> str:
        return self.text()

    def to_aff(self) -> Aff | None:
        """The :class:`Aff` of this form, or None if it has division terms."""
        if any(not _IDENT.match(k) for k, _ in self.coeffs):
            return None
        return Aff.of(dict(self.coeffs), self.const)


def aff_const(v: int) -> Lin:
    return Lin((), v)


def aff_scale(a: Lin, k: int) -> Lin:
    return Lin.of({n: c * k for n, c in a.coeffs}, a.const * k)


def aff_sub(a: Lin, b: Lin) -> Lin:
    return a + aff_scale(b, -1)


def is_const(a: Lin) -> bool:
    return not a.coeffs


def atom_ge(a: Lin):
    """``a >= 0``, folded if constant."""
    if is_const(a):
        return TRUE if a.const >= 0 else FALSE
    return ("ge", a)


def atom_eq(a: Lin):
    if is_const(a):
        return TRUE if a.const == 0 else FALSE
    return ("eq", a)


def f_and(*fs):
    parts = []
    for f in fs:
        if f == FALSE:
            return FALSE
        if f == TRUE:
            continue
        if f[0] == "and":
            parts.extend(f[1])
        elif f not in parts:
            parts.append(f)
    if not parts:
        return TRUE
    return parts[0] if len(parts) == 1 else ("and", tuple(parts))


def f_or(*fs):
    parts = []
    for f in fs:
        if f == TRUE:
            return TRUE
        if f == FALSE:
            continue
        if f[0] == "or":
            parts.extend(f[1])
        elif f not in parts:
            parts.append(f)
    if not parts:
        return FALSE
    return parts[0] if len(parts) == 1 else ("or", tuple(parts))


def f_neg(f):
    k = f[0]
    if k == "T":
        return FALSE
    if k == "F":
        return TRUE
    if k == "ge":                      # not (a >= 0)  <=>  -a - 1 >= 0
        return atom_ge(aff_scale(f[1], -1) + (-1))
    if k == "eq":
        return f_or(atom_ge(f[1] + (-1)), atom_ge(aff_scale(f[1], -1) + (-1)))
    if k == "and":
        return f_or(*(f_neg(g) for g in f[1]))
    return f_and(*(f_neg(g) for g in f[1]))


def compare(op: str, a: Lin, b: Lin):
    """The formula ``a op b`` for a C comparison operator."""
    if op == "<":
        return atom_ge(aff_sub(b, a) + (-1))
    if op == "<=":
        return atom_ge(aff_sub(b, a))
    if op == ">":
        return atom_ge(aff_sub(a, b) + (-1))
    if op == ">=":
        return atom_ge(aff_sub(a, b))
    if op == "==":
        return atom_eq(aff_sub(a, b))
    if op == "!=":
        return f_neg(atom_eq(aff_sub(a, b)))
    raise ValueError(op)


def atoms(f):
    """Every atom of ``f``."""
    if f[0] in ("ge", "eq"):
        yield f
    elif f[0] in ("and", "or"):
        for g in f[1]:
            yield from atoms(g)


def size(f) -> int:
    return 1 if f[0] not in ("and", "or") else sum(size(g) for g in f[1])


def _atom_text(f) -> str:
    """``a >= 0`` / ``a = 0`` printed as ``positive terms op negative terms``."""
    a: Lin = f[1]
    pos = {n: c for n, c in a.coeffs if c > 0}
    neg = {n: -c for n, c in a.coeffs if c < 0}
    lhs = Lin.of(pos, max(a.const, 0)).text()
    rhs = Lin.of(neg, max(-a.const, 0)).text()
    return f"{lhs} {'>=' if f[0] == 'ge' else '='} {rhs}"


def f_text(f) -> str:
    """isl constraint text of ``f``."""
    k = f[0]
    if k == "T":
        return "true"
    if k == "F":
        return "false"
    if k in ("ge", "eq"):
        return _atom_text(f)
    if k == "and":
        return " and ".join(f_text(g) for g in f[1])
    return "(" + " or ".join(f"({f_text(g)})" if g[0] == "and" else f_text(g) for g in f[1]) + ")"


def set_text(tuple_name: str, dims, f) -> str:
    """``{ name[dims] : f }``."""
    head = f"{tuple_name}[{', '.join(dims)}]"
    if f == TRUE:
        return f"{{ {head} }}"
    return f"{{ {head} : {f_text(f)} }}"
