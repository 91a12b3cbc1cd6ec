"""The names-first boundary to isl.

This is the only module that deals with isl's dimension types and positions. Everything else in MICA
speaks of loop names, array names and mesh-axis names and passes isl objects built from text whose
identifiers MICA generated or validated.

One isl context (:data:`CTX`) is used for every object; isl objects never cross into emulator threads.
isl errors are wrapped in the :class:`~mica.errors.MicaError` subclass the caller names.

Public API: :data:`CTX`, :func:`iset`, :func:`imap`, :func:`uset`, :func:`umap`, :func:`dim_names`,
:func:`param_names`, :func:`int_bounds`, :func:`max_of`, :func:`min_of`, :func:`fix_params`, :func:`aff_text`,
:func:`single_affine_of`.
"""

from __future__ import annotations

from functools import lru_cache

import os
import re
from contextlib import contextmanager
from typing import Mapping, Sequence

import islpy as isl

from ..errors import AffineError, BudgetError, MicaError, ScheduleError

CTX = isl.DEFAULT_CONTEXT

#: isl operations one compiler step may take (``MICA_ISL_BUDGET`` overrides; 0: unlimited). The whole
#: test suite passes with 2e7; a pathological loop nest stops here (about a minute on this machine)
#: instead of running for hours.
DEFAULT_BUDGET = int(os.environ.get("MICA_ISL_BUDGET", "50000000"))
_QUOTA = "maximal number of operations exceeded"
_steps: list[tuple[str, int]] = []       # the running steps, innermost last: (name, limit)


def out_of_budget(exc: BaseException) -> bool:
    """True when ``exc`` is isl giving up because the current step's operation budget is spent."""
    return isinstance(exc, isl.Error) and _QUOTA in str(exc)


def _budget_error(exc: BaseException) -> BudgetError:
    step, limit = _steps[-1] if _steps else ("isl", CTX.get_max_operations())
    return BudgetError(f"{step} needed more than its budget of {limit:,} isl operations (set "
                       f"MICA_ISL_BUDGET higher, or simplify the loop nest)", step=step, detail=str(exc))


@contextmanager
def isl_budget(step: str, ops: int | None = None):
    """Runs the body as compiler step ``step`` with at most ``ops`` isl operations (default
    :data:`DEFAULT_BUDGET`); running out raises :class:`BudgetError` naming the step. Steps nest: an inner
    step (one search candidate) starts a fresh count and, when it ends, the enclosing step's count
    restarts — so the work of a whole compile is bounded by the budget times the number of steps."""
    limit = DEFAULT_BUDGET if ops is None else ops
    _steps.append((step, limit))
    CTX.set_max_operations(limit)
    CTX.reset_operations()
    try:
        yield
    except isl.Error as exc:
        if out_of_budget(exc):
            raise _budget_error(exc) from None
        # An isl failure is a MICA bug, but it still reaches the user as a MicaError naming the step.
        raise ScheduleError(f"{step}: isl failed: {str(exc).splitlines()[0] if str(exc) else 'error'}",
                            detail=str(exc)) from None
    finally:
        _steps.pop()
        CTX.set_max_operations(_steps[-1][1] if _steps else 0)
        CTX.reset_operations()


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_ident(name: str, what: str = "name") -> str:
    """``name`` if it is a plain C/isl identifier, else :class:`AffineError`."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise AffineError(f"{what} {name!r} is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*)")
    return name


@lru_cache(maxsize=8192)
def _read(kind, text: str):
    """``text`` parsed as a ``kind``, memoised: the search builds thousands of candidates whose domains,
    accesses and placements repeat the same texts, and islpy objects are values (every operation returns a
    new object), so one parsed object serves every caller. A failed parse raises and is not remembered."""
    obj = kind.read_from_str(CTX, text)
    if kind is isl.Set:
        _remember_text(obj, text)
    return obj


#: The text each set :func:`_read` parsed was read from, by the set's ``id`` (the entry holds the set, so the id
#: is not reused while it is here): :func:`count_points` keys its memo on a set's text without printing it.
_TEXT_OF: dict[int, tuple[isl.Set, str]] = {}


def _remember_text(s: isl.Set, text: str) -> None:
    if len(_TEXT_OF) >= 16384:
        _TEXT_OF.clear()
    _TEXT_OF[id(s)] = (s, text)


def _text_of(s: isl.Set) -> str:
    """isl text of ``s``: the text it was parsed from when :func:`iset` made it, else isl's printing."""
    hit = _TEXT_OF.get(id(s))
    return hit[1] if hit is not None and hit[0] is s else str(s)


def _parse(kind, text: str, error: type[MicaError]):
    try:
        return _read(kind, text)
    except isl.Error as exc:
        if out_of_budget(exc) or (_steps and _parses_unbudgeted(kind, text)):
            # isl's reader reports a spent budget as a syntax error: a text that parses without the
            # budget was cut short by it.
            raise _budget_error(exc) from None
        raise error(f"isl could not parse {kind.__name__} {text!r}: {exc}") from None


def _parses_unbudgeted(kind, text: str) -> bool:
    limit = CTX.get_max_operations()
    CTX.set_max_operations(0)
    try:
        kind.read_from_str(CTX, text)
        return True
    except isl.Error:
        return False
    finally:
        CTX.set_max_operations(limit)


def iset(text: str, error: type[MicaError] = AffineError) -> isl.Set:
    """An ``isl.Set`` from isl text."""
    return _parse(isl.Set, text, error)


def imap(text: str, error: type[MicaError] = AffineError) -> isl.Map:
    """An ``isl.Map`` from isl text."""
    return _parse(isl.Map, text, error)


def uset(text: str, error: type[MicaError] = AffineError) -> isl.UnionSet:
    return _parse(isl.UnionSet, text, error)


def umap(text: str, error: type[MicaError] = AffineError) -> isl.UnionMap:
    return _parse(isl.UnionMap, text, error)


def dim_names(obj: isl.Set | isl.BasicSet, kind: str = "set") -> tuple[str, ...]:
    """Names of the set (``kind='set'``), input (``'in'``), output (``'out'``) or parameter dims."""
    dt = {"set": isl.dim_type.set, "in": isl.dim_type.in_, "out": isl.dim_type.out,
          "param": isl.dim_type.param}[kind]
    return tuple(obj.get_dim_name(dt, i) for i in range(obj.dim(dt)))


def param_names(obj) -> tuple[str, ...]:
    return tuple(obj.get_dim_name(isl.dim_type.param, i) for i in range(obj.dim(isl.dim_type.param)))


def tuple_name(obj: isl.Set) -> str | None:
    return obj.get_tuple_name()


def _dim_pos(s: isl.Set, name: str) -> int:
    pos = s.find_dim_by_name(isl.dim_type.set, name)
    if pos < 0:
        raise AffineError(f"no dimension {name!r} in {s}")
    return pos


def int_bounds(s: isl.Set, name: str) -> tuple[int, int] | None:
    """Inclusive (min, max) of set dimension ``name`` over ``s`` (no parameters), or None if empty.

    Raises :class:`AffineError` if the dimension is unbounded.
    """
    if s.is_empty():
        return None
    pos = _dim_pos(s, name)
    lo = s.dim_min_val(pos)
    hi = s.dim_max_val(pos)
    if not (lo.is_int() and hi.is_int()):
        raise AffineError(f"dimension {name!r} of {s} is unbounded")
    return int(lo.to_python()), int(hi.to_python())


def _expr_extreme(s: isl.Set, expr: str, maximise: bool) -> int | None:
    names = dim_names(s)
    tname = s.get_tuple_name() or ""
    params = param_names(s)
    ptxt = f"[{', '.join(params)}] -> " if params else ""
    m = imap(f"{ptxt}{{ {tname}[{', '.join(names)}] -> [{expr}] }}")
    img = s.apply(m)
    if img.is_empty():
        return None
    v = img.dim_max_val(0) if maximise else img.dim_min_val(0)
    if not v.is_int():
        raise AffineError(f"{expr} is unbounded over {s}")
    return int(v.to_python())


def max_of(s: isl.Set, expr: str) -> int | None:
    """The maximum of the affine expression ``expr`` (in the set's dim names) over ``s``; None if empty."""
    return _expr_extreme(s, expr, True)


def min_of(s: isl.Set, expr: str) -> int | None:
    return _expr_extreme(s, expr, False)


def fix_params(obj, values: Mapping[str, int]):
    """``obj`` with the named parameters fixed to ``values`` (other parameters untouched)."""
    for name, v in values.items():
        pos = obj.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            obj = obj.fix_val(isl.dim_type.param, pos, isl.Val.int_from_si(CTX, int(v)))
    return obj


def aff_text(terms: Mapping[str, int] | Sequence[tuple[str, int]], const: int = 0) -> str:
    """isl/C text of ``sum(coeff * name) + const``."""
    items = terms.items() if isinstance(terms, Mapping) else terms
    parts = []
    for name, c in items:
        if c == 0:
            continue
        parts.append(name if c == 1 else f"-{name}" if c == -1 else f"{c}*{name}")
    if const or not parts:
        parts.append(str(const))
    return " + ".join(parts).replace("+ -", "- ")


def single_affine_of(m: isl.Map, out_name: str) -> isl.PwAff | None:
    """If output dim ``out_name`` of ``m`` is a single-valued function of the input, that function as a
    piecewise affine expression over the input space; otherwise None."""
    pos = m.find_dim_by_name(isl.dim_type.out, out_name)
    if pos < 0:
        raise AffineError(f"no output dimension {out_name!r} in {m}")
    proj = m.project_out(isl.dim_type.out, pos + 1, m.dim(isl.dim_type.out) - pos - 1)
    proj = proj.project_out(isl.dim_type.out, 0, pos)
    if not proj.is_single_valued():
        return None
    pma = proj.as_pw_multi_aff()
    return pma.get_pw_aff(0)


def pw_aff_pieces(pa: isl.PwAff) -> list[tuple[isl.Set, isl.Aff]]:
    """The (domain, affine) pieces of a piecewise affine expression."""
    return pa.get_pieces()


def aff_coefficients(aff: isl.Aff) -> tuple[dict[str, int], int, int]:
    """(coefficient per input-dim name, constant, denominator) of an affine expression without divs."""
    if aff.dim(isl.dim_type.div) != 0:
        raise AffineError(f"affine expression {aff} has integer divisions")
    den = aff.get_denominator_val().to_python()
    coeffs = {}
    for i in range(aff.dim(isl.dim_type.in_)):
        c = aff.get_coefficient_val(isl.dim_type.in_, i).to_python() * den
        if c:
            coeffs[aff.get_dim_name(isl.dim_type.in_, i)] = int(c)
    for i in range(aff.dim(isl.dim_type.param)):
        c = aff.get_coefficient_val(isl.dim_type.param, i).to_python() * den
        if c:
            coeffs[aff.get_dim_name(isl.dim_type.param, i)] = int(c)
    const = int(aff.get_constant_val().to_python() * den)
    return coeffs, const, int(den)


def rename_dims(obj, kind: str, names: Sequence[str]):
    """``obj`` with its ``kind`` (``'in'``, ``'out'``, ``'set'``) dimensions named ``names`` in order."""
    dt = {"set": isl.dim_type.set, "in": isl.dim_type.in_, "out": isl.dim_type.out}[kind]
    for i, n in enumerate(names):
        obj = obj.set_dim_name(dt, i, n)
    return obj


def count_points(s: isl.Set, fix: Mapping[str, int], drop: Sequence[str] = ()) -> int:
    """Number of points of ``s`` with parameters ``fix`` fixed and parameters ``drop`` projected out
    (the union over all their values), exactly.

    Parameters then fixed (by ``fix`` or by the set's own equalities) are substituted away, which leaves a
    parameter-free set that :func:`_count_closed` counts in closed form where it can (a box by its volume, a
    product of independent dimensions as the product of their counts) and by isl's ``count_val`` otherwise.
    A set that keeps a free parameter is counted by ``count_val`` as before (it counts the parameter's values
    as a dimension; 0 for a parameter the set does not bound). Counts are memoised on the set's text and the
    fixed values: the search counts the same tile on the same core for many candidates."""
    return _count_cached(_text_of(s), tuple(sorted(fix.items())), tuple(drop))


@lru_cache(maxsize=32768)
def _count_cached(text: str, fix: tuple[tuple[str, int], ...], drop: tuple[str, ...]) -> int:
    return _count_closed(_without_fixed_params(_reduced(iset(text), dict(fix), drop)))


def _reduced(s: isl.Set, fix: Mapping[str, int], drop: Sequence[str]) -> isl.Set:
    """``s`` (space ``[params] -> { S[dims] }``) with parameters ``fix`` fixed to their values and parameters
    ``drop`` projected out: the same tuple, the same set dimensions, the remaining parameters."""
    s = fix_params(s, fix)
    for name in drop:
        pos = s.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            s = s.project_out(isl.dim_type.param, pos, 1)
    return s


def _without_fixed_params(s: isl.Set) -> isl.Set:
    """``s`` with every parameter that each of its pieces fixes to one and the same value projected out: the
    same points (for that value), in the space ``[other params] -> { S[dims] }``. Projecting out a parameter
    ``p`` that satisfies ``p = v`` everywhere substitutes ``v`` for it, so no division is introduced."""
    pos = 0
    while pos < s.dim(isl.dim_type.param):
        if s.plain_get_val_if_fixed(isl.dim_type.param, pos).is_nan():
            pos += 1
        else:
            s = s.project_out(isl.dim_type.param, pos, 1)
    return s


def _count_closed(s: isl.Set) -> int:
    """The number of points of ``s``: 0 when empty; for a parameter-free ``s``, the volume of its bounding
    box when the box lies inside it, else the product of independent dimensions' counts
    (:func:`_factored_count`) for a large box, else isl's ``count_val`` (which enumerates all dimensions but
    the last); a set with parameters is counted by ``count_val``."""
    if s.is_empty():
        return 0
    bounds = _bounding_box(s)
    if bounds is not None:
        volume, box = bounds
        if box.is_subset(s):
            return volume           # a box: counted in constant time
        factored = _factored_count(s) if volume >= FACTOR_ABOVE else None   # small: isl's count is quicker
        if factored is not None:
            return factored
    v = s.count_val()
    text = v.to_str() if v.is_int() else None
    if text is None:
        raise AffineError(f"cannot count the points of {s}"
                          + (" (isl ran out of its operation budget)" if _steps else ""))
    return int(text)


def count_param_values(s: isl.Set, param: str, fix: Mapping[str, int], drop: Sequence[str] = ()) -> int:
    """Number of values of parameter ``param`` for which ``s`` (parameters ``fix`` fixed, ``drop`` projected
    out) has a point: e.g. the steps ``__t`` at which a core runs some instance of a kernel."""
    s = _reduced(s, fix, drop)
    pos = s.find_dim_by_name(isl.dim_type.param, param)
    if pos < 0:
        return 1 if not s.is_empty() else 0
    n = s.dim(isl.dim_type.set)
    s = s.project_out(isl.dim_type.set, 0, n).move_dims(isl.dim_type.set, 0, isl.dim_type.param, pos, 1)
    return count_points(s, {})


#: Bounding-box volume from which :func:`count_points` tries to count a set as a product of its dimensions.
FACTOR_ABOVE = 100_000


def _factored_count(s: isl.Set) -> int | None:
    """The number of points of a non-empty, parameter-free ``s`` that is the product of one of its dimensions and the
    others (no constraint ties that dimension to the rest: a causal ``j <= i`` domain times a free ``d``),
    counted as the product of the two counts; None when no dimension is independent. isl's ``count_val``
    scans every point of all dimensions but the last, which a 4096 x 4096 triangle times 128 makes take
    a tenth of a second per count."""
    n = s.dim(isl.dim_type.set)
    if n < 2:
        return None
    s = s.reset_space(isl.Space.set_alloc(s.get_ctx(), 0, n))       # anonymous: tuples and names dropped
    for i in range(n):
        alone = s.project_out(isl.dim_type.set, i + 1, n - i - 1).project_out(isl.dim_type.set, 0, i)
        rest = s.project_out(isl.dim_type.set, i, 1)
        lifted = alone.insert_dims(isl.dim_type.set, 0, i).add_dims(isl.dim_type.set, n - i - 1)
        if rest.insert_dims(isl.dim_type.set, i, 1).intersect(lifted).is_subset(s):
            return _count_closed(alone) * _count_closed(rest)
    return None


def _bounding_box(s: isl.Set) -> tuple[int, isl.Set] | None:
    """The number of points of the bounding box of a non-empty ``s`` (the product of its dimensions' ranges)
    and that box, or None when ``s`` has parameters or an unbounded dimension. When the box is a subset of
    ``s`` it is ``s``'s count: isl's ``count_val`` enumerates points, which a 2048^3 matmul domain makes take
    seconds; a box is counted in constant time."""
    if s.dim(isl.dim_type.param):
        return None
    box = isl.Set.universe(s.get_space())
    n = 1
    for i in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(i), s.dim_max_val(i)
        if not (lo.is_int() and hi.is_int()):
            return None
        n *= int(hi.to_python()) - int(lo.to_python()) + 1
        box = box.lower_bound_val(isl.dim_type.set, i, lo).upper_bound_val(isl.dim_type.set, i, hi)
    return n, box


def shift_params(text: str, shifts: Mapping[str, int], error: type[MicaError] = AffineError) -> str:
    """The set or map of isl ``text`` with each parameter ``p`` of ``shifts`` replaced by ``p - shifts[p]``
    (the space is unchanged: same tuples, same parameters): what held at ``p = v`` holds at ``v + shift``.
    Parameters the text does not name are left alone. A union (statements of several tuples, as a sequence
    kernel's domain) is shifted piece by piece."""
    is_map = "->" in text.split("{", 1)[1]
    union = _parse(isl.UnionMap if is_map else isl.UnionSet, text, error)
    pieces: list = []
    (union.foreach_map if is_map else union.foreach_set)(pieces.append)
    if len(pieces) > 1:
        shifted = [shift_params(str(p), shifts, error) for p in pieces]
        kind = isl.UnionMap if is_map else isl.UnionSet
        out = _parse(kind, shifted[0], error)
        for t in shifted[1:]:
            out = out.union(_parse(kind, t, error))
        return str(out)
    obj = _parse(isl.Map if is_map else isl.Set, text, error)
    order = param_names(obj)
    for name, k in shifts.items():
        if not k or name not in param_names(obj):
            continue
        old = name + "__unshifted"
        pos = param_names(obj).index(name)
        obj = obj.set_dim_name(isl.dim_type.param, pos, old)
        cons = isl.Set(f"[{name}, {old}] -> {{ : {old} = {name} - ({k}) }}", context=CTX)
        obj = obj.intersect_params(cons)
        obj = obj.project_out(isl.dim_type.param, param_names(obj).index(old), 1)
    return str(obj.align_params(isl.Set(f"[{', '.join(order)}] -> {{ : }}", context=CTX).space))


def shift_cores(text: str, ox: int, oy: int, error: type[MicaError] = AffineError) -> str:
    """The relation of isl ``text`` whose domain is a core tuple ``name[x, y]`` (or a wrapped pair of them,
    ``[core_src[..] -> core_dst[..]]``, or a tuple with dimensions named ``x`` and ``y`` among others, as in
    ``M[t, x, y]``) with every core moved by ``(ox, oy)``; the range is unchanged."""
    rel = _parse(isl.Map, text, error)
    dom = rel.domain()

    def moved(tup: str, names: list[str], var: str = "v") -> tuple[str, str]:
        if "x" not in names or "y" not in names:
            names = ["x", "y"] if len(names) == 2 else names
        vars_ = [f"{var}{i}" for i in range(len(names))]
        out = [f"{v} + {ox}" if n == "x" else f"{v} + {oy}" if n == "y" else v for v, n in zip(vars_, names)]
        return f"{tup}[{', '.join(vars_)}]", f"{tup}[{', '.join(out)}]"
    if dom.is_wrapping():
        pair = dom.unwrap()
        a = moved(pair.get_tuple_name(isl.dim_type.in_), ["x", "y"])
        b = moved(pair.get_tuple_name(isl.dim_type.out), ["x", "y"], "w")
        shift = f"{{ [{a[0]} -> {b[0]}] -> [{a[1]} -> {b[1]}] }}"
    else:
        names = [rel.get_dim_name(isl.dim_type.in_, i) for i in range(rel.dim(isl.dim_type.in_))]
        a = moved(rel.get_tuple_name(isl.dim_type.in_), names)
        shift = f"{{ {a[0]} -> {a[1]} }}"
    return str(rel.apply_domain(_parse(isl.Map, shift, error)))
