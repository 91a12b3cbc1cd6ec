"""Refusals remembered across the candidate plans of one program: a read that no communication pattern
serves under one candidate fails the same way under every candidate that places its statement, lays
out the read array and sizes the cores with work alike.

The schedule search builds thousands of candidates for a program of many operators, and most of those it
rejects fail in :func:`mica.lower.reads.plan_read` (``data moves in both mesh directions``, ``the sending
core is not a single function of the step``) or in its write check (``cores would write elements of ... that
another core owns``) after half of the build. What decides such a failure is exactly:

* the statement's placement ``{ S[loops] -> M[t, x, y] }`` — the text of
  :func:`mica.tiling.spacetime.placement_constraints`, which covers its spatial loops, owner-computes rows
  and step;
* the home of the read array (its box, tiles and pins) and the cores with work (the home's region and the
  mirror's are cut from them); for a write, the written array's home and how the operator combines partial
  results (a routed write's staging box is cut from the same);
* what is fixed for the program being searched: which arrays it writes, which arrays an earlier operator
  left on the mesh (``resident``), the target (a mirror of a resident array is transposed on it).

:func:`refuse_known` raises the remembered error for a candidate whose key matches, after the legality proof
and before the build proper; :func:`remember` records a failure. Skewed steps are left out (their ring buffers are chosen from
the whole schedule). The memory keeps the refusals of the last :data:`PROGRAMS` programs (with the arrays
left on the mesh and the target), an operator cut again from the same program being the same program.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

from ..affine.program import Access, Statement
from ..errors import MicaError
from ..tiling.spacetime import placement_constraints
from .builder import _Builder

#: How many programs' refusals are kept (a program of many operators searches each of them several times).
PROGRAMS = 256

_Known = dict[tuple[str, str], dict[tuple, MicaError]]
_MEMORY: OrderedDict[tuple, _Known] = OrderedDict()


def _known(b: _Builder) -> _Known | None:
    """The refusals remembered for ``b``'s program, residents and target (None under a skewed step)."""
    step = b.sched.step
    if step is not None and step.skew != "none":
        return None
    key = (b.prog, b.resident, b.target.name)
    known = _MEMORY.get(key)
    if known is None:
        known = _MEMORY[key] = {}
        while len(_MEMORY) > PROGRAMS:
            _MEMORY.popitem(last=False)
    else:
        _MEMORY.move_to_end(key)
    return known


def _key(b: _Builder, stmt: Statement, acc: Access | None) -> tuple:
    """What decides whether ``acc`` of ``stmt`` can be read under ``b``'s schedule (module docstring), or with
    ``acc`` None whether its write lands on the core that owns the element: the same, with the write's home
    and how the operator combines partial results (the reduced axes and arrays, whether ``stmt`` is combined)."""
    r = b.region
    head = (tuple(placement_constraints(stmt, b.sched)), (r.x0, r.x1, r.y0, r.y1), b.sched.step)
    if acc is not None:
        return head + (b.sched.home(acc.array),)
    return head + (b.sched.home(stmt.write.array), tuple(b.reduced_axes), b.reduced_arrays, stmt.name in b.combined)


def refuse_known(b: _Builder) -> None:
    """Raises (a copy of) the error an access of ``b``'s program failed with under an earlier candidate whose
    key matches ``b``'s schedule; changes nothing otherwise. Called before the build proper, so a candidate
    that also fails in an earlier step of the build (a home reaching beyond the cores with work) is rejected
    for the remembered reason instead: both hold, and the plans chosen are the same."""
    known = _known(b)
    if not known:
        return
    for (sname, ref), failures in known.items():
        stmt = b.prog.statement(sname)
        exc = failures.get(_key(b, stmt, None if ref == stmt.write.ref else stmt.access(ref)))
        if exc is not None:
            raise copy.copy(exc).with_traceback(None)


def remember(b: _Builder, stmt: Statement, acc: Access | None, exc: MicaError) -> None:
    """Records that ``acc`` of ``stmt`` cannot be read (``acc`` None: that its write cannot land) under
    ``b``'s schedule, failing with ``exc``."""
    known = _known(b)
    if known is not None:
        ref = stmt.write.ref if acc is None else acc.ref
        known.setdefault((stmt.name, ref), {})[_key(b, stmt, acc)] = copy.copy(exc).with_traceback(None)
