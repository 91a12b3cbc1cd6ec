"""Which of the program shapes of issue 17 a random program has, judged by MICA's own analyses of it
(mica.affine.deps, mica.affine.privatise), not by the generator's bookkeeping."""

import re

import islpy as isl

from mica.affine.deps import dependences, reductions
from mica.affine.from_c import from_c
from mica.affine.isplit import split_programs
from mica.affine.privatise import temporaries
from mica.affine.repeat import repeat_candidates

SHAPES = ("max/min reduction", "arg pair", "softmax pair", "iterator value", "temporary", "remote write", "uniform dependence",
          "small-int data", "int32 arrays", "contraction", "phase loop")


def _loop_names(s):
    return {v for ix in s.write.index for v in ix.names}


def _uniform(prog, red) -> bool:
    """Some statement (not a reduction) depends on itself (flow) at constant nonzero distances only."""
    maps = []
    dependences(prog).flow.foreach_map(maps.append)
    plain = {s.name for s in prog.statements if s.name not in red}
    for m in maps:
        n = m.get_tuple_name(isl.dim_type.in_)
        if n not in plain or m.get_tuple_name(isl.dim_type.out) != n:
            continue
        d = m.deltas()
        if d.is_empty():
            continue
        points = []
        for b in d.get_basic_sets():
            lo = [isl.Set.from_basic_set(b).dim_min_val(p) for p in range(b.dim(isl.dim_type.set))]
            hi = [isl.Set.from_basic_set(b).dim_max_val(p) for p in range(b.dim(isl.dim_type.set))]
            if not all(a.is_int() and a.eq(z) for a, z in zip(lo, hi)):
                break
            points.append(tuple(a.to_python() for a in lo))
        else:
            if points and all(any(points_i) for points_i in points):
                return True
    return False


def _contracts(s, reduced: set) -> bool:
    """``s`` sums products of two arrays over a loop of ``reduced`` that indexes both (a matrix product, or
    a batched one with a 3D operand)."""
    indexed = [{v for ix in a.index for v in ix.names} for a in s.reads if a.array != s.write.array]
    return any(sum(1 for names in indexed if lp in names) >= 2 for lp in reduced)


def shapes_of(case) -> set[str]:
    prog = from_c(case.source, params=case.params)
    red = reductions(prog)
    found = set()
    stmts = {s.name: s for s in prog.statements}
    for r in red.values():
        s = stmts[r.stmt]
        if r.op in ("max", "min") and set(s.loops) - _loop_names(s):
            found.add("max/min reduction")
        if r.op in ("argmax", "argmin"):
            found.add("arg pair")
        if r.op == "softmax":
            found.add("softmax pair")
        if r.op == "+" and _contracts(s, set(s.loops) - _loop_names(s)):
            found.add("contraction")
    if re.search(r"\((double|float|int)\)", case.source):
        found.add("iterator value")
    if temporaries(prog):
        found.add("temporary")
    nests: dict = {}
    for s in prog.statements:
        nests.setdefault(s.order[0], []).append(s)
    for group in nests.values():
        writes = {}
        for s in group:
            if s.loops:
                writes.setdefault(s.write.array, set()).add(tuple(str(ix) for ix in s.write.index))
        if any(len(w) > 1 for w in writes.values()):
            found.add("remote write")
    if _uniform(prog, red):
        found.add("uniform dependence")
    if split_programs(prog):
        found.add("pivot")              # a loop reading the row its own step rewrites: cut by mica.affine.isplit
    if repeat_candidates(prog):
        found.add("phase loop")        # a time loop around several nests (mica.affine.repeat)
    if getattr(case, "data", "uniform") == "small-int":
        found.add("small-int data")
    if case.dtype == "i32":
        found.add("int32 arrays")
    return found
