"""MeshIR affine values and rectangles as C++ expressions, and a Python evaluator for those expressions.

Loop variable ``t`` becomes ``v_t``; the core's logical coordinates are ``my_x`` / ``my_y``. Only integer
literals, identifiers, ``+ - *``, parentheses and calls of the ``mica_*`` helpers (``kernels/mica_mesh.h``)
appear, so the very strings written into the kernels are also valid Python: :func:`evaluate` runs them
with Python implementations of the helpers. ``plan.json``'s per-step transfer lists are computed that way,
from the emitted text, not re-derived from MeshIR.

Public API: :func:`lin_c`, :func:`lower_c`, :func:`upper_c`, :func:`in_rect_c`, :func:`evaluate`.
"""

from __future__ import annotations

from ..meshir.ir import Lin, Rect


def var_c(name: str) -> str:
    return f"v_{name}"


def lin_c(v: Lin) -> str:
    """``v`` as C++; with ``v.div > 1`` its floor division (``mica_floord``, exact for negative values)."""
    parts = []
    for name, c in v.terms:
        parts.append(var_c(name) if c == 1 else f"{c} * {var_c(name)}")
    if v.const or not parts:
        parts.append(str(v.const))
    text = " + ".join(parts).replace("+ -", "- ")
    if v.div != 1:
        # the block of a step loop (the core owning step t's element): floor division, also of negatives
        return f"mica_floord({text}, {v.div})"
    return text if len(parts) == 1 and not text.startswith("-") else f"({text})"


def lower_c(bound: tuple[Lin, ...], clamp: int | None = None) -> str:
    """``max`` of the terms (a rectangle's lower bound), optionally clamped from below."""
    terms = [lin_c(b) for b in bound]
    if clamp is not None and str(clamp) not in terms:
        terms.append(str(clamp))
    out = terms[0]
    for t in terms[1:]:
        out = f"mica_max({out}, {t})"
    return out


def upper_c(bound: tuple[Lin, ...], clamp: int | None = None) -> str:
    """``min`` of the terms (a rectangle's upper bound), optionally clamped from above."""
    terms = [lin_c(b) for b in bound]
    if clamp is not None and str(clamp) not in terms:
        terms.append(str(clamp))
    out = terms[0]
    for t in terms[1:]:
        out = f"mica_min({out}, {t})"
    return out


def in_rect_c(r: Rect, x: str = "my_x", y: str = "my_y") -> str:
    """Whether core (x, y) is a member of ``r`` (bounds, strides and phases)."""
    return (f"mica_in_rect({x}, {y}, {lower_c(r.x0)}, {upper_c(r.x1)}, {lower_c(r.y0)}, {upper_c(r.y1)}, "
            f"{r.xs}, {lin_c(r.xp)}, {r.ys}, {lin_c(r.yp)})")


# -- the Python side of kernels/mica_mesh.h ------------------------------------------------------------

def _in_range(c, lo, hi, stride, phase):
    return lo <= c < hi and (c - phase) % stride == 0


HELPERS = {
    "mica_max": max,
    "mica_min": min,
    "mica_mod": lambda a, b: a % b,
    "mica_floord": lambda a, b: a // b,
    "mica_in_range": _in_range,
    "mica_in_rect": lambda x, y, x0, x1, y0, y1, xs, xp, ys, yp:
        _in_range(x, x0, x1, xs, xp) and _in_range(y, y0, y1, ys, yp),
    "mica_both": lambda a, b: bool(a) and bool(b),
    "mica_positive": lambda a: a > 0,
}


def evaluate(expr: str, env: dict[str, int]):
    """The value of a rendered expression for ``env`` (``my_x``, ``my_y`` and ``v_<loop var>``)."""
    return eval(expr, {"__builtins__": {}}, {**HELPERS, **env})  # noqa: S307 - our own rendered text
