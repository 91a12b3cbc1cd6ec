"""Where and when a schedule runs each statement instance: the placement relation
``{ S[loops] -> M[t, x, y] }`` (step, core column, core row) and the constraints it is written from.

Legality (:mod:`.legality`) orders dependent instances through it; :mod:`mica.comm.sets` derives what
each core needs at each step from it; kernels (:mod:`mica.lower.build`) enumerate their instances with it."""

from __future__ import annotations

import islpy as isl

from ..affine.isl_names import imap
from ..affine.program import Statement
from ..errors import CommError
from .schedule import Schedule

# Names MICA uses next to user loop names in isl text; users cannot name anything with a leading "__".
T, X, Y, KB = "__t", "__x", "__y", "__kb"


def statement_pins(stmt: Statement, sched: Schedule) -> dict[str, int]:
    """Mesh axes the statement has no loop for, with the coordinate it runs at (0: the root side)."""
    pins = {}
    for sm in sched.space:
        if sm.loop not in stmt.loops:
            pins[sm.axis] = 0
    return pins


def kb_clause(kind: str, n: int, body: str, *, t: str = "t", x: str = "x", y: str = "y", kb: str = "kb") -> str:
    """``exists kb: kb = (t + l(x) + l(y)) mod n and body`` (``l`` per :class:`~mica.meshir.ir.Skew`);
    the names of t, x, y and kb are those given (``body`` refers to ``kb``)."""
    if kind == "cannon":
        defs = f"__lx = {x} and __ly = {y}"
    else:
        defs = (f"(({x} = 2__ex and __lx = __ex) or ({x} = 2__ex + 1 and __lx = {n - 1} - __ex)) and "
                f"(({y} = 2__ey and __ly = __ey) or ({y} = 2__ey + 1 and __ly = {n - 1} - __ey))")
    return (f"exists (__q, {kb}, __lx, __ly, __ex, __ey: {kb} = {t} + __lx + __ly - {n}__q and "
            f"0 <= {kb} < {n} and {defs} and {body})")


def placement_constraints(stmt: Statement, sched: Schedule, *, kernel: bool = False) -> list[str]:
    """Constraints tying loops to ``__t``, ``__x``, ``__y`` (see :func:`placement_map`).

    With ``kernel=True`` a skewed step is written with ``__kb`` (the block the core works on) as a free
    name: the kernel computes it from (x, y, t) itself."""
    name = {"x": X, "y": Y}
    cons = []
    for sm in sched.space:
        a = name[sm.axis]
        if sm.loop in stmt.loops:
            cons.append(f"{sm.tile}*{a} <= {sm.loop} < {sm.tile}*{a} + {sm.tile}")
        else:
            cons.append(f"{a} = 0")
    for axis in ("x", "y"):
        if sched.loop_on(axis) is None:
            cons.append(f"{name[axis]} = 0")
    st = sched.step
    if st is not None and st.wavefront and st.encloses(stmt.loops):
        # A wavefront: the core's block of sweep iteration l runs at step period*l + wx*x + wy*y.
        wx, wy = st.wave
        at = f"{st.period}*{st.loop} + " if st.loop else ""
        cons.append(f"{T} = {at}{wx}*{X} + {wy}*{Y}")
    elif st is not None and st.loop in stmt.loops:
        if st.skew == "none":
            cons.append(f"{st.tile}*{T} <= {st.loop} < {st.tile}*{T} + {st.tile}")
        elif kernel:
            cons.append(f"{st.tile}*{KB} <= {st.loop} < {st.tile}*{KB} + {st.tile}")
        else:
            cons.append(f"0 <= {T} < {st.steps} and 0 <= {X} < {st.steps} and 0 <= {Y} < {st.steps}")
            cons.append(kb_clause(st.skew, st.steps, f"{st.tile}*{KB} <= {st.loop} < {st.tile}*{KB} + {st.tile}",
                                  t=T, x=X, y=Y, kb=KB))
    else:
        cons.append(f"{T} = 0")
    return cons


def placement_map(stmt: Statement, sched: Schedule) -> isl.Map:
    """``{ S[loops] -> M[t, x, y] }`` restricted to the statement's domain."""
    text = (f"{{ {stmt.name}[{', '.join(stmt.loops)}] -> M[{T}, {X}, {Y}] : "
            f"{' and '.join(placement_constraints(stmt, sched))} }}")
    return imap(text, CommError).intersect_domain(stmt.domain_set)
