"""Runtime parameters: ints given to every run of a compiled program, used in subscripts and bounds.

A decode step writes the new token's key at ``K[pos][d]`` and attends over ``l <= pos``: ``pos`` changes
every step, and recompiling per token is not an option. A runtime parameter ``p`` has a declared range
``lo <= p < hi``; the program is compiled once, for every value in it.

Statements stay concrete (the mapping, the layouts and the communication sets are those of every value at
once) and carry a *guard*: the instances that run for the given values.

* A parameter in a bound or condition (``l <= pos``) becomes a guard on the statement's own loops: the
  domain is the union over the range (``0 <= l < hi``), the guard ``l <= pos``.
* A parameter in a subscript (``K[pos][d] = k[d]``) becomes a loop of its own, ``pos_at``, over the
  range, innermost (after the statement's loops, alone in its body), and the guard ``pos_at = pos``: the
  statement is ``K[pos_at][d] = k[d]`` for every row the value could select, and the core that owns row
  ``pos_at`` runs it when ``pos_at`` is the value. What the row needs (``k``) is sent to every core that
  might need it, over routes fixed at compile time.

A guarded write is a *may* write (:mod:`mica.affine.deps`): the arrays it writes are also inputs, and a
write that does not run leaves the element's earlier value. Kernels read the values from their scalar
arguments: in a kernel's domain, parameter ``p`` is named ``__rp_p`` (:func:`kernel_param`), so it never
meets MICA's own ``__x`` / ``__y`` / ``__t`` or a user's loop, and printed ``rp_p``. Every back end passes a
run's values to the cores: the emulator as scalar arguments, CSL as the exported ``i32`` array ``rparams``
the host writes to every PE before a launch (:mod:`mica.emit_csl`), Metalium as the last runtime args of
the reader and compute kernels (:mod:`mica.emit_metalium`).

Spaces: a guard is ``[p, ...] -> { S[loops] }`` (the declared ranges among its constraints); a statement's
domain ``{ S[loops] }`` is the guard with the parameters projected out.

Public API: :func:`expand`, :func:`guarded`, :func:`kernel_param`, :func:`check_values`,
:func:`normalise_ranges`.
"""

from __future__ import annotations

import numbers
import re
from typing import Mapping

import islpy as isl

from ..errors import AffineError, InputError
from .expr import Aff
from .isl_names import iset
from .program import Access

#: Prefix of a runtime parameter's name in kernel domains (printed as ``rp_<name>`` in C).
KERNEL_PREFIX = "__rp_"


def kernel_param(name: str) -> str:
    """The name runtime parameter ``name`` has in kernel domains."""
    return KERNEL_PREFIX + name


def normalise_ranges(runtime, where: str = "runtime") -> dict[str, tuple[int, int]]:
    """``{name: (lo, hi)}`` from what a user passes: a mapping of names to ``range(lo, hi)`` (step 1) or
    ``(lo, hi)`` pairs, both meaning ``lo <= value < hi``. Raises :class:`AffineError` for anything else."""
    if runtime is None:
        return {}
    if not isinstance(runtime, Mapping):
        raise AffineError(f"{where} must map parameter names to ranges (lo, hi) or range(lo, hi), "
                          f"got {type(runtime).__name__}")
    out = {}
    for name, r in runtime.items():
        if isinstance(r, range):
            if r.step != 1:
                raise AffineError(f"{where}: range of {name!r} must have step 1, got {r!r}")
            lo, hi = r.start, r.stop
        elif isinstance(r, (tuple, list)) and len(r) == 2:
            lo, hi = r
        else:
            raise AffineError(f"{where}: {name!r} needs a range (lo, hi) or range(lo, hi) meaning lo <= {name} "
                              f"< hi, got {r!r}")
        if not isinstance(name, str) or any(isinstance(v, bool) or not isinstance(v, int) for v in (lo, hi)):
            raise AffineError(f"{where}: {name!r} needs integer bounds, got {r!r}")
        if lo >= hi:
            raise AffineError(f"{where}: the range of {name!r}, {lo} <= {name} < {hi}, is empty")
        out[name] = (int(lo), int(hi))
    return out


def range_context(ranges: Mapping[str, tuple[int, int]]) -> isl.Set:
    """``[p, ...] -> { : lo <= p < hi and ... }``: the declared ranges ``{name: (lo, hi)}``."""
    cons = " and ".join(f"{lo} <= {p} < {hi}" for p, (lo, hi) in ranges.items()) or "true"
    return iset(f"[{', '.join(ranges)}] -> {{ : {cons} }}")


def expand(name: str, loops: tuple[str, ...], text: str, accesses: list[Access], order: tuple,
           ranges: Mapping[str, tuple[int, int]], taken: set[str]):
    """A statement whose domain text ``text`` (``{ S[loops] : ... }``, possibly naming runtime parameters)
    and ``accesses`` may read the runtime parameters of ``ranges``, made concrete: returns ``(loops, domain,
    guard, accesses, order)`` — a loop ``<p>_at`` added innermost (named apart from ``taken``, to which it
    is added) for each parameter a subscript reads, the subscripts reading it instead, the domain the union
    over the ranges and the guard the instances that run (``""`` when every instance runs at every value).
    Preserves the statement's meaning at every value in the ranges."""
    in_subs = sorted({n for a in accesses for ix in a.index for n in ix.names if n in ranges})
    in_dom = [p for p in ranges if _mentions(text, p)]
    used = sorted(set(in_subs) | set(in_dom))
    if not used:
        return loops, text, "", accesses, order
    box = range_context({p: ranges[p] for p in used})
    g = iset(f"[{', '.join(used)}] -> {text}").intersect_params(box)
    new_loops = list(loops)
    renames = {}
    for p in in_subs:
        v = _fresh(f"{p}_at", taken | set(new_loops))
        taken.add(v)
        renames[p] = v
        new_loops.append(v)
        order = (*order, v, 0)
    if renames:
        n0 = len(loops)
        g = g.add_dims(isl.dim_type.set, len(renames))
        for k, v in enumerate(renames.values()):
            g = g.set_dim_name(isl.dim_type.set, n0 + k, v)
        g = g.set_tuple_name(name)
        eqs = " and ".join(f"{v} = {p}" for p, v in renames.items())
        g = g.intersect(iset(f"[{', '.join(used)}] -> {{ {name}[{', '.join(new_loops)}] : {eqs} }}"))
        accesses = [Access(a.ref, a.array, tuple(_renamed(ix, renames) for ix in a.index)) for a in accesses]
    g = g.coalesce()
    dom = g.project_out(isl.dim_type.param, 0, g.dim(isl.dim_type.param)).coalesce()
    every = dom.align_params(g.get_space()).intersect_params(box)    # every instance at every value
    guard = "" if every.is_subset(g) else str(g)
    return tuple(new_loops), str(dom), guard, accesses, order


def guarded(stmt, dom: isl.Set) -> isl.Set:
    """``dom`` (a set in ``stmt``'s space, or one renamed from it: same loops, any tuple name and
    parameters) met with ``stmt``'s guard, its parameters renamed :func:`kernel_param`; ``dom`` itself
    when the statement has no guard."""
    g = stmt.guard_set
    if g is None:
        return dom
    for i in range(g.dim(isl.dim_type.param)):
        g = g.set_dim_name(isl.dim_type.param, i, kernel_param(g.get_dim_name(isl.dim_type.param, i)))
    g = g.set_tuple_name(dom.get_tuple_name())
    return dom.intersect(g).coalesce()


def check_values(runtime: tuple[tuple[str, int, int], ...], values: Mapping) -> None:
    """Raises :class:`InputError` unless every runtime parameter has an integer value in its declared
    range in ``values``."""
    for name, lo, hi in runtime:
        if name not in values:
            raise InputError(f"runtime parameter {name!r} is missing ({lo} <= {name} < {hi})")
        v = values[name]
        if getattr(v, "shape", None) == () and hasattr(v, "item"):      # a 0-d numpy array
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise InputError(f"runtime parameter {name!r} must be an integer, got {v!r}")
        v = int(v)
        if not lo <= v < hi:
            raise InputError(f"runtime parameter {name!r} = {v} is outside its declared range "
                             f"{lo} <= {name} < {hi} (the program was compiled for that range)")


def _mentions(text: str, name: str) -> bool:
    """Whether the constraints of set text ``text`` name ``name``."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text.split(":", 1)[-1]) is not None


def _renamed(ix: Aff, renames: Mapping[str, str]) -> Aff:
    return Aff.of({renames.get(n, n): c for n, c in ix.coeffs}, ix.const)


def _fresh(base: str, avoid: set[str]) -> str:
    name, k = base, 0
    while name in avoid:
        k += 1
        name = f"{base}_{k}"
    return name
