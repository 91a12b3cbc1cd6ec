"""The one printer of affine index expressions (:class:`mica.affine.expr.Aff`) in any :class:`Language`,
and of the block a skewed step gives a core (the same formula in every back end).

Public API: :func:`print_aff`, :func:`skew_block`.
"""

from __future__ import annotations

from typing import Mapping

from ..affine.expr import Aff
from .languages import Language


def print_aff(a: Aff, env: Mapping[str, str], lang: Language) -> str:
    """``a`` in ``lang``, each variable ``n`` printed as the text ``env[n]``."""
    parts = [lang.aff_var.format(env[n]) if c == 1 else lang.aff_term.format(c, env[n]) for n, c in a.coeffs]
    if a.const or not parts:
        parts.append(lang.int_lit.format(a.const))
    return lang.aff_group.format(" + ".join(parts))


def skew_block(kind: str, n: int, lang: Language, x: str = "x", y: str = "y", t: str = "t") -> str:
    """The block core (``x``, ``y``) works on at step ``t`` of a skewed loop of ``n`` blocks:
    ``(t + l(x) + l(y)) mod n`` with l the identity (``cannon``) or the interleaved ring position
    (:class:`mica.meshir.ir.Skew`), in ``lang``'s integer syntax (operands are non-negative)."""
    mod = lang.int_lit.format(n)
    if kind == "cannon":
        return f"({t} + {x} + {y}) % {mod}"
    last = lang.int_lit.format(n - 1)
    lx = f"({x} % 2 == 0 ? {x} / 2 : {last} - {x} / 2)"
    ly = f"({y} % 2 == 0 ? {y} / 2 : {last} - {y} / 2)"
    return f"({t} + {lx} + {ly}) % {mod}"
