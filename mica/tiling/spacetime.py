"""Where and when a schedule runs each statement instance: the placement relation
``{ S[loops] -> M[t, x, y] }`` (step, core column, core row) and the constraints it is written from.

Legality (:mod:`.legality`) orders dependent instances through it; :mod:`mica.comm.sets` derives what
each core needs at each step from it; kernels (:mod:`mica.lower.build`) enumerate their instances with it."""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from ..affine.isl_names import imap, iset
from ..affine.program import Statement
from ..errors import CommError
from .schedule import Home, Schedule

# Names MICA uses next to user loop names in isl text; users cannot name anything with a leading "__".
T, X, Y, KB = "__t", "__x", "__y", "__kb"


def owner_rows(stmt: Statement, sched: Schedule, axis: str) -> tuple[int, str] | None:
    """Where ``stmt`` runs along a mesh ``axis`` it has no spatial loop for, when that is not coordinate 0:
    ``(tile, index)`` when its write's home lays the dimension indexed by ``index`` out along ``axis`` in
    tiles of ``tile`` and some written element lies beyond the first tile — the statement then runs on
    the core that owns the element it writes (*owner computes*: ``tile*a <= index < tile*a + tile``)
    instead of writing into another core's block. None when the statement runs at coordinate 0 (every
    element it writes is owned there, or the home is not laid out along ``axis``)."""
    home = next((h for h in sched.homes if h.array == stmt.write.array), None)
    if home is None:
        return None
    return _owner_rows(stmt, home, axis)


@lru_cache(maxsize=4096)
def _owner_rows(stmt: Statement, home: Home, axis: str) -> tuple[int, str] | None:
    for d, (a, tile) in enumerate(home.dims):
        if a != axis or d >= len(stmt.write.index):
            continue
        index = stmt.write.index[d].text()
        written = stmt.access_map(stmt.write).range()
        dims = ", ".join(f"e{i}" for i in range(len(stmt.write.index)))
        beyond = iset(f"{{ {stmt.write.array}[{dims}] : e{d} < 0 or e{d} >= {tile} }}")
        if written.intersect(beyond).is_empty():
            return None
        return tile, index
    return None


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
        elif (owner := owner_rows(stmt, sched, sm.axis)) is not None:
            tile, index = owner
            cons.append(f"{tile}*{a} <= {index} < {tile}*{a} + {tile}")
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
        cons.append(f"{T} = {at}{wx}*{X} + {wy}*{Y} + {st.start}")
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
