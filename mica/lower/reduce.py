"""Reductions spread across cores: partial results combined towards coordinate 0.

When the main statement is a reduction whose write does not index a spatial loop (``_Builder.reduced_axes``),
every core of those axes accumulates a partial result in the array's home (role ``partial``). The partials
start at the reduction's identity everywhere but the root (:func:`fill_partials`) and are combined after
the statements by chains of one-hop shifts towards coordinate 0 (:func:`reduction_chains`), in groups
first for a ``tree`` reduction, level by level for a ``levels`` one (:func:`_level_stages`). A (value, index) pair,
and an online softmax's (running max, rescaled sum), combines both halves together (:func:`reduction_chains`).
"""

from __future__ import annotations

import islpy as isl
import numpy as np

from ..affine.deps import combine
from ..affine.expr import Bin, Call, Cmp, Const, Read, Select
from ..affine.isl_names import iset
from ..comm.routes import assign_colours, shift_routes
from ..meshir.ir import Compute, Exchange, Lin, Loop, Region, Shift
from ..targets import INT_DTYPES
from ..tiling.search import reduction_levels
from .builder import _Builder, line_rect, line_region

INT_NP = {"i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8}

#: The identity of each combining operator: partials start at it on every core but the root.
IDENTITY = {"+": 0.0, "*": 1.0, "max": float("-inf"), "min": float("inf")}


def identity(op: str, dtype: str) -> float | int:
    """The identity of ``op`` for partials of ``dtype``: :data:`IDENTITY`, or for an integer dtype an integer
    (the dtype's least / greatest value for max / min: an infinity does not convert to an integer)."""
    if dtype not in INT_DTYPES:
        return IDENTITY[op]
    if op in ("max", "min"):
        info = np.iinfo(INT_NP[dtype])
        return int(info.min if op == "max" else info.max)
    return int(IDENTITY[op])


#: What the index half of a (value, index) pair holds before its core sees a value (never read back for
#: non-NaN data: see :func:`reduction_chains`); an integer index array holds it as an integer.
NO_INDEX = 0.0


#: How an online softmax's rescaled sum ``w`` (the held partial, running max ``r0``) takes in an arriving
#: partial (running max ``r1``, sum ``r2``): ``w exp(r0 - r1) + r2`` when the arriving max is larger, ``w + r2``
#: when they are equal (two empty partials, both at -inf, stay 0 rather than ``0 * exp(NaN)``), else
#: ``w + r2 exp(r1 - r0)``.
SOFTMAX_SUM = Select(Cmp(">", Read("r1"), Read("r0")),
                     Bin("+", Bin("*", Read("w"), Call("exp", (Bin("-", Read("r0"), Read("r1")),))), Read("r2")),
                     Select(Cmp("==", Read("r1"), Read("r0")), Bin("+", Read("w"), Read("r2")),
                            Bin("+", Read("w"), Bin("*", Read("r2"), Call("exp", (Bin("-", Read("r1"), Read("r0")),))))))


def fill_partials(b: _Builder) -> list:
    """The computes that set the partial results to the reduction's identity on every core but the roots
    (``x >= 1`` on a reduced x axis, then ``y >= 1`` on a reduced y axis); adds their kernels
    ``k_fill<i>_<array>`` to ``b``. The index half of a pair starts at :data:`NO_INDEX`. Empty without a
    cross-core reduction."""
    if b.reduced_array is None:
        return []
    red = b.reds.get(b.main.name)
    rects = []
    if "x" in b.reduced_axes:
        rects.append(Region("nonroot_x", 1, b.region.x1, b.region.y0, b.region.y1))
    if "y" in b.reduced_axes:
        x1 = 1 if "x" in b.reduced_axes else b.region.x1
        rects.append(Region("nonroot_y", 0, x1, 1, b.region.y1))
    out = []
    for k, array in enumerate(b.reduced_arrays[:2]):
        part = b.tensors[array]
        ident = identity(red.op, part.dtype) if k == 0 else int(NO_INDEX) if part.dtype in INT_DTYPES else NO_INDEX
        for i, rg in enumerate(rects):
            if rg.cores:
                k = b.box_kernel(f"k_fill{i}_{part.name}", part, rg, Const(ident))
                out.append(Compute(k.name, rg.rect))
    return out


def reduction_chains(b: _Builder) -> list:
    """The ops that combine the partial results towards coordinate 0 on each reduced axis: a chain of
    one-hop shifts ``{ [core_src[x'] -> core_dst[x' - d]] }``, or (tree) chains inside groups of
    ``sched.group`` cores in parallel, then a chain over the group roots; each stage a loop over ``s`` of
    one exchange and the accumulating compute. Adds the receive buffer ``<array>_in`` and the kernels
    ``k_acc<axis>_<array>`` to ``b``. Empty without a cross-core reduction.

    A (value, index) pair moves both partials (one colour each) and combines them as the sequential
    statements would, the partial that arrives standing for the later iterations: the receiver always
    holds the lower block (chains and trees run towards 0), so ``idx = in_v < v ? in_idx : idx;
    v = in_v < v ? in_v : v`` (``<=`` for a tie rule that keeps the last index; ``>``/``>=`` for arg-max)
    gives what the sequential loop gives for non-NaN data. A NaN value never wins a comparison; a core
    whose values were all NaN keeps its identity and :data:`NO_INDEX`, which a ``<=`` pair could take on a
    tie of infinities (the sequential loop keeps the earlier index there)."""
    if b.reduced_array is None:
        return []
    red = b.reds.get(b.main.name)
    parts = [b.tensors[a] for a in b.reduced_arrays]
    inbufs = [b.add_tensor(f"{p.name}_in", p.array, p.box, "recv", p.ownership) for p in parts]
    # Partials are combined only where the reduction writes: other elements of the box (an array longer than
    # the loop) keep the root's value, and a pair's value array may not even have them.
    combined = [s for s in (b.main, b.partner) if s is not None]
    written = [s.access_map(s.write).range() for s in combined]
    if len(written) == 2 and written[0].dim(isl.dim_type.set) == written[1].dim(isl.dim_type.set):
        # The index half compares values: only where both halves write (the same indices of the two arrays).
        both = written[0].set_tuple_name("E").intersect(written[1].set_tuple_name("E"))
        written = [written[0], both.set_tuple_name(parts[1].array)]
    # Where the reduction writes the whole array, the box alone bounds the combine.
    written = [None if w.is_equal(iset(b.prog.array(p.array).box_text())) else w for w, p in zip(written, parts)]
    body = []
    for axis in b.reduced_axes:
        n = b.region.x1 if axis == "x" else b.region.y1
        if n <= 1:
            continue
        across = (0, 1) if (axis == "y" and "x" in b.reduced_axes) else \
            ((b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1))
        line = line_region(f"line_{axis}", axis, 0, n, across)
        if len(parts) == 1:
            accs = [b.box_kernel(f"k_acc{axis}_{parts[0].name}", parts[0], line,
                                 combine(red.op, Read("w"), Read("r0")), (inbufs[0],), within=written[0])]
        elif b.reds[b.partner.name].op == "softmax":
            accs = [b.box_kernel(f"k_acc{axis}_{parts[1].name}", parts[1], line, SOFTMAX_SUM,
                                 (parts[0], inbufs[0], inbufs[1]), within=written[1]),
                    b.box_kernel(f"k_acc{axis}_{parts[0].name}", parts[0], line,
                                 combine("max", Read("w"), Read("r0")), (inbufs[0],), within=written[0])]
        else:
            cmp = {("min", True): "<", ("min", False): "<=", ("max", True): ">", ("max", False): ">="}[
                (red.op, red.strict)]
            wins = Cmp(cmp, Read("r1"), Read("r0"))          # the arriving value beats the held one
            accs = [b.box_kernel(f"k_acc{axis}_{parts[1].name}", parts[1], line,
                                 Select(wins, Read("r2"), Read("w")), (parts[0], inbufs[0], inbufs[1]),
                                 within=written[1]),
                    b.box_kernel(f"k_acc{axis}_{parts[0].name}", parts[0], line,
                                 Select(wins, Read("r1"), Read("w")), (parts[0], inbufs[0]), within=written[0])]
        colours = assign_colours(len(parts), b.target.colours, f"reduction of {', '.join(b.reduced_arrays)}")
        if b.sched.reduce == "levels":
            stages = _level_stages(axis, n, b.sched.group, across)
        else:
            stages = _reduction_stages(axis, n, min(b.sched.group, n) if b.sched.reduce == "tree" else 1, across)
        for stage in stages:
            senders, receivers, distance, count, what = stage
            direction = "W" if axis == "x" else "N"
            shifts = tuple(
                Shift(f"{part.array} partials {what}", part.array, part.name, inbuf.name,
                      direction, senders, receivers, colour,
                      shift_routes(direction, senders, receivers, colour, distance), distance,
                      f"{{ [core_src[{axis}'] -> core_dst[{axis}' - {distance}]] }} along {axis}",
                      distance)
                for part, inbuf, colour in zip(parts, inbufs, colours))
            body.append(Loop("s", count, (Exchange(f"reduce_{'_'.join(b.reduced_arrays)}_{axis}_{what}", shifts),
                                          *(Compute(acc.name, receivers) for acc in accs))))
    return body


def _reduction_stages(axis: str, n: int, g: int, across: tuple[int, int]):
    """(senders, receivers, distance, stages, label) of each phase of a reduction over ``n`` cores of
    ``axis`` towards 0, in groups of ``g`` (``g = 1``: a plain chain). Loop variable ``s`` is the stage."""
    out = []
    if g > 1:
        # Inside every group, position g-1-s sends to position g-2-s (all groups at once).
        out.append((line_rect(axis, across, 0, n, g, Lin(g - 1, (("s", -1),))),
                    line_rect(axis, across, 0, n - 1, g, Lin(g - 2, (("s", -1),))),
                    1, g - 1, f"in groups of {g}"))
    m = -(-n // max(g, 1))
    if m > 1:
        src = Lin(g * (m - 1), (("s", -g),))
        dst = Lin(g * (m - 2), (("s", -g),))
        out.append((line_rect(axis, across, (src,), (src.shifted(1),)),
                    line_rect(axis, across, (dst,), (dst.shifted(1),)), g, m - 1,
                    "along the chain" if g == 1 else "across group roots"))
    return out


def _level_stages(axis: str, n: int, g: int, across: tuple[int, int]):
    """(senders, receivers, distance, stages, label) of each level of a ``g``-ary tree over ``n`` cores of
    ``axis`` towards 0: level ``j`` combines the roots of level ``j - 1`` (every ``g**j``-th core) by chains
    inside groups of ``g`` of them, all groups at once: at stage ``s`` the root at group position
    ``c - 1 - s`` sends ``g**j`` hops to position ``c - 2 - s`` (``c`` the positions the level's groups
    have, ``g`` but at the last level). The receiver always holds the lower, contiguous block of the line
    and the sender the block right above it, as in a chain; ``ceil(log_g n)`` levels of at most ``g - 1``
    stages each, in which every core but the first sends once."""
    out = []
    for level, (span, stages) in enumerate(reduction_levels("levels", g, n)):
        c = stages + 1                        # positions of the level's groups (fewer at the last level)
        stride = span * g
        src = Lin(span * (c - 1), (("s", -span),))
        dst = Lin(span * (c - 2), (("s", -span),))
        if stride >= n:
            # The last level: one group, so one sender per stage (the chain over the last roots).
            senders = line_rect(axis, across, (src,), (src.shifted(1),))
            receivers = line_rect(axis, across, (dst,), (dst.shifted(1),))
        else:
            senders = line_rect(axis, across, 0, n, stride, src)
            receivers = line_rect(axis, across, 0, n - span, stride, dst)
        out.append((senders, receivers, span, stages, f"level {level} in groups of {g}"))
    return out
