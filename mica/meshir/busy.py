"""Which cores of a mesh program compute: the cores on which some kernel runs at least one instance.

A plan may allocate more cores than do work (a triangular domain leaves the tiles past its diagonal
empty, a partial tiling leaves the last row of cores without rows, a reduction's combining stages run on
cores that hold only partial sums); the count reported to users is the one computed here, never the
region's size. The analysis is exact and parametric (isl sets over core coordinates, counted by isl), so
its cost does not grow with the number of cores.
"""

from __future__ import annotations

import islpy as isl

from ..affine.isl_names import iset
from .ir import Compute, MeshProgram, Rect, walk_ops

_CORE = ("__x", "__y")


def computing_cores(mp: MeshProgram) -> int:
    """The number of cores of ``mp`` that run at least one kernel instance (over all steps and loops)."""
    cores = busy_cores(mp)
    return 0 if cores is None else int(cores.count_val().to_python())


def busy_cores(mp: MeshProgram) -> isl.Set | None:
    """``{ [__x, __y] }``: the cores of ``mp`` on which some Compute runs a non-empty part of its kernel
    (the union over every Compute of its rectangle, at every value of the loops around it, met with the cores
    for which the kernel's domain ``[__x, __y, ...] -> { K[loops] }`` has a point); None when nothing computes."""
    out: isl.Set | None = None
    for op, scope in walk_ops(mp.body):
        if not isinstance(op, Compute):
            continue
        where = _rect_set(op.rect, scope).intersect(_kernel_cores(mp, op.kernel))
        out = where if out is None else out.union(where)
    return None if out is None else out.coalesce()


def _kernel_cores(mp: MeshProgram, name: str) -> isl.Set:
    """``{ [__x, __y] }``: the cores for which some part of kernel ``name`` has an instance at some value
    of its other parameters (steps, enclosing loops)."""
    out: isl.Set | None = None
    for part in mp.kernel(name).statements:
        params = iset(part.domain).params()           # [__x, __y, ...] -> { : the domain is not empty }
        s = isl.Set.from_params(params)
        for k, name_ in enumerate(_CORE):
            pos = s.find_dim_by_name(isl.dim_type.param, name_)
            if pos < 0:                               # the domain does not depend on the core: all of them
                s = s.insert_dims(isl.dim_type.set, k, 1)
            else:
                s = s.move_dims(isl.dim_type.set, k, isl.dim_type.param, pos, 1)
        s = s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))
        s = s.set_dim_name(isl.dim_type.set, 0, "x").set_dim_name(isl.dim_type.set, 1, "y")
        out = s if out is None else out.union(s)
    return out


def _rect_set(r: Rect, scope) -> isl.Set:
    """``{ [x, y] }``: the cores of ``r`` at some value of the loop variables ``scope`` ((var, count) pairs)."""
    names = [v for v, _ in scope]
    cons = [f"0 <= {v} < {n}" for v, n in scope]
    cons += [f"x >= {b}" for b in r.x0] + [f"x < {b}" for b in r.x1]
    cons += [f"y >= {b}" for b in r.y0] + [f"y < {b}" for b in r.y1]
    if r.xs != 1:
        cons.append(f"(x - ({r.xp})) mod {r.xs} = 0")
    if r.ys != 1:
        cons.append(f"(y - ({r.yp})) mod {r.ys} = 0")
    inner = " and ".join(cons)
    body = f"exists ({', '.join(names)} : {inner})" if names else inner
    return iset(f"{{ [x, y] : {body} }}")
