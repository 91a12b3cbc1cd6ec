"""Writes routed to the owner (issue 17, item 3): a statement whose instances write elements of a 2D array that
the mirror core owns — ``cov[j][i] = cov[i][j]``, the symmetric half of a matrix — keeps its plan instead of
being rejected.

The statement writes into a *staging* buffer laid out like the array's home with the two mesh axes swapped
(the block a core writes is the block its mirror core owns). Once the operator's work is done the staging
blocks are transposed across the mesh (:func:`mica.lower.relayout.transpose`, one-hop shifts only) into a
*landing* buffer in the home's layout, and a copy kernel moves into the home exactly the elements the
statement wrote — nothing else of the home changes.

Delivering at the end of the operator is correct when no instance that follows a routed write in the
original order touches an element it wrote (:func:`_nothing_follows`): earlier reads and writes of those
elements see and leave the home as the sequential program does, and the delivered value is the last one the
sequential program writes. Each element is staged on exactly one core (the staging box partitions the
array), so two instances writing one element run on one core, in an order legality has checked.
"""

from __future__ import annotations

from dataclasses import replace

import islpy as isl

from ..affine.isl_names import imap, iset
from ..affine.program import Statement
from ..comm.sets import ownership_map
from ..errors import ScheduleError
from ..affine.expr import Aff, Read
from ..comm.routes import TOWARDS, shift_routes
from ..meshir.ir import Compute, Exchange, KAccess, Kernel, KernelClass, Rect, Region, RegionTensor, Shift
from ..tiling.homes import home_box, swap_home
from .builder import _Builder
from .relayout import transpose


def stage_routed_write(b: _Builder, stmt: Statement, writes: isl.Map) -> str | None:
    """The staging buffer ``stmt`` writes into when its writes ``{ M[t, x, y] -> A[a...] }`` land on the cores
    that own the transposed blocks of a 2D home, after adding the staging, landing and lane buffers and the
    delivery (transposition, then the copy of the written elements into the home) to ``b.deliveries``.
    None when the writes cannot be routed so: the statement is guarded (:mod:`mica.affine.runtime`), combines partial results or reads the element it
    writes, the home is not a 2D block layout over both axes with a square block grid from the origin, some
    core writes outside its mirror's block, or a later instance touches a routed element."""
    arr = b.prog.array(stmt.write.array)
    home = b.sched.home(arr.name)
    swapped = swap_home(home)
    if stmt.guard:          # the delivery copies every element the domain writes: a guarded write may not run
        return None
    if swapped is None or home.pin or stmt.name in b.reds or stmt.name in b.combined or b.step is not None \
            and b.step.wavefront:
        return None
    if any(a.array == arr.name and a.index == stmt.write.index for a in stmt.reads):
        return None
    sbox = home_box(arr.shape, swapped)
    try:
        region = b.box_region(arr.name, sbox, {})
    except ScheduleError:
        return None
    staged = ownership_map(arr, sbox, region, {})
    if not writes.is_subset(imap("{ M[t, x, y] -> core[x, y] }").apply_range(staged)):
        return None
    if not _nothing_follows(b, stmt):
        return None
    name = f"{arr.name}_routed"
    while name in b.tensors or any(a.name == name for a in b.prog.arrays):
        name += "_"
    stage = RegionTensor(name, arr.name, arr.dtype, arr.elem_bytes, b.region, sbox, "recv", str(staged))
    landed = RegionTensor(f"{name}_landed", arr.name, arr.dtype, arr.elem_bytes, b.region,
                          home_box(arr.shape, home), "recv", b.tensors[arr.name].ownership)
    try:
        lanes, kernels, ops = transpose(stage, landed, f"{name}_", b.region, b.target)
    except ScheduleError:
        return None
    for t in (stage, landed, *lanes):
        b.tensors[t.name] = t
    b.kernels.extend(kernels)
    deliver = _deliver_kernel(f"k_{stmt.name}_deliver", b.tensors[arr.name], landed, stmt, b)
    b.kernels.append(deliver)
    b.deliveries.extend([*ops, Compute(deliver.name, b.region.rect)])
    return name


def stage_shifted_write(b: _Builder, stmt: Statement, writes: isl.Map) -> str | None:
    """The staging buffer ``stmt`` writes into when every element it writes ``{ M[t, x, y] -> A[a...] }`` is
    owned by the core a constant distance ``d`` away along one mesh axis (a KV cache's new row, written by the
    cores that hold the new token's vector and owned ``d`` rows down their columns), after adding the staging and
    landing buffers and the delivery to ``b.deliveries``: at the end of the operator, one shift of ``d`` hops
    carries each writing core's staged block to its owner, where a copy kernel moves exactly the written
    elements into the home.

    The staging box is the home's box moved by ``d`` along the axis (:attr:`BoxDim.origin`): a writing core
    stages the block its owner holds. None (changing nothing) when the statement is guarded, combines partial
    results, reads the element it writes or runs in a step loop; when the owners are not one translation of
    the writing cores along one axis, the writing cores are not a rectangle, or a shift longer than one hop
    would leave more than one of them on a line; or when a later instance touches a routed element."""
    arr = b.prog.array(stmt.write.array)
    if stmt.guard or stmt.name in b.reds or b.reduced_array is not None or b.step is not None:
        return None
    if any(a.array == arr.name and a.index == stmt.write.index for a in stmt.reads):
        return None
    box, pins = b.home_box(arr.name)
    home_region = b.home_region(arr.name)
    own = ownership_map(arr, box, home_region, pins)
    lands = writes.apply_range(own.reverse())                        # { M[t, x, y] -> core[x', y'] }
    if not lands.is_single_valued():
        return None
    moves = lands.project_out(isl.dim_type.in_, 0, 1).set_tuple_name(isl.dim_type.in_, "c") \
        .set_tuple_name(isl.dim_type.out, "c").deltas()
    if not moves.is_singleton():
        return None
    point = moves.sample_point()
    dx, dy = (int(point.get_coordinate_val(isl.dim_type.set, i).to_python()) for i in range(2))
    if (dx == 0) == (dy == 0):
        return None
    axis, d = ("x", dx) if dx else ("y", dy)
    writers = lands.domain().project_out(isl.dim_type.set, 0, 1).set_tuple_name("M")  # the cores that write
    lo = [writers.dim_min_val(i).to_python() for i in range(2)]
    hi = [writers.dim_max_val(i).to_python() + 1 for i in range(2)]
    rect = iset(f"{{ M[x, y] : {lo[0]} <= x < {hi[0]} and {lo[1]} <= y < {hi[1]} }}")
    if not rect.is_subset(writers):
        return None
    k = 0 if axis == "x" else 1
    if abs(d) > 1 and hi[k] - lo[k] > 1:
        return None
    if not _nothing_follows(b, stmt):
        return None
    sbox = tuple(replace(dim, origin=dim.origin - d) if dim.coord == axis else dim for dim in box)
    name = f"{arr.name}_routed"
    while name in b.tensors or any(a.name == name for a in b.prog.arrays):
        name += "_"
    # A writing core stages (and owns while staged) the block of the core d away.
    stage = RegionTensor(name, arr.name, arr.dtype, arr.elem_bytes, b.region, sbox, "recv",
                         str(imap(f"{{ core[x, y] -> core[x + {dx}, y + {dy}] }}").apply_range(own)))
    landed = RegionTensor(f"{name}_landed", arr.name, arr.dtype, arr.elem_bytes, b.region, box, "recv",
                          b.tensors[arr.name].ownership)
    senders = Rect.of(lo[0], hi[0], lo[1], hi[1])
    receivers = Rect.of(lo[0] + dx, hi[0] + dx, lo[1] + dy, hi[1] + dy)
    direction = TOWARDS[(axis, d > 0)]
    shift = Shift(f"{arr.name} writes to their owners", arr.name, stage.name, landed.name, direction, senders,
                  receivers, 0, shift_routes(direction, senders, receivers, 0, abs(d)), abs(d),
                  f"{{ [core_src[{axis}'] -> core_dst[{axis}' + {d}]] }} along {axis}", abs(d))
    for t in (stage, landed):
        b.tensors[t.name] = t
    deliver = _deliver_kernel(f"k_{stmt.name}_deliver", b.tensors[arr.name], landed, stmt, b,
                              Region(f"k_{stmt.name}_deliver_0", receivers.x0[0].const, receivers.x1[0].const,
                                     receivers.y0[0].const, receivers.y1[0].const))
    b.kernels.append(deliver)
    b.deliveries.extend([Exchange(f"{name}_deliver", (shift,)), Compute(deliver.name, receivers)])
    return name


def _nothing_follows(b: _Builder, stmt: Statement) -> bool:
    """No instance after a write of ``stmt`` in the original order reads or writes the element it wrote (other
    than a later instance of ``stmt`` writing it again)."""
    order = b.prog.schedule_map()
    before = order.lex_lt_union_map(order)                # { S[..] -> T[..] : S runs before T }
    w = isl.UnionMap.from_map(stmt.access_map(stmt.write))
    for s in b.prog.statements:
        for acc in s.accesses:
            if acc.array != stmt.write.array or (s is stmt and acc is stmt.write):
                continue
            touch = w.apply_range(isl.UnionMap.from_map(s.access_map(acc)).reverse())
            if not touch.intersect(before).is_empty():
                return False
    return True


def _deliver_kernel(name: str, home: RegionTensor, landed: RegionTensor, stmt: Statement, b: _Builder,
                    where: Region | None = None) -> Kernel:
    """``home[a...] = landed[a...]`` for the elements of the core's home block that ``stmt`` writes, on the
    cores of ``where`` (default: the work region)."""
    loops = tuple(f"a{i}" for i in range(len(landed.box)))
    cons = " and ".join(d.isl(a, "__") for d, a in zip(landed.box, loops))
    box = iset(f"[__x, __y, __t] -> {{ {name}[{', '.join(loops)}] : {cons} }}")
    written = stmt.access_map(stmt.write).range().set_tuple_name(name).align_params(box.get_space())
    index = tuple(Aff.var(a) for a in loops)
    r = where or b.region
    return Kernel(name, "", loops, str(box.intersect(written).coalesce()), loops, KAccess("w", home.name, index),
                  (KAccess("r0", landed.name, index),), Read("r0"),
                  (KernelClass(f"{name}_0", Region(f"{name}_0", r.x0, r.x1, r.y0, r.y1)),))
