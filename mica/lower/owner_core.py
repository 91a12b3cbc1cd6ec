"""A plan with nothing to spread, run on the core that owns its data: an operator such as ``corr[m-1][m-1] =
1.0`` after an operator that left ``corr`` laid out over the mesh.

The one-core plan keeps every array whole on core (0, 0); when earlier operators fixed the arrays' layouts, the
operator instead runs, in its original order, on the one core that owns every element it touches, reading and
writing the homes in place (no data moves). Raises :class:`ScheduleError` when no single core owns everything
it touches, or when it touches an array that is not laid out (whose whole copy would have to live on every
core).
"""

from __future__ import annotations

from math import ceil

import islpy as isl

from ..affine.isl_names import iset
from ..affine.program import Program
from ..affine.runtime import guarded
from ..comm.sets import ownership_map
from ..errors import ScheduleError, SramError
from ..meshir.ir import (ARENA_ALIGN, Compute, HostLoad, HostStore, KAccess, Kernel, KernelClass, MeshProgram,
                         Region, RegionTensor)
from ..targets import Target
from ..tiling.cost import expr_flops
from ..tiling.homes import home_box
from ..tiling.schedule import Schedule


def original_order_kernel(prog: Program, at: Region) -> Kernel:
    """``k_program``: every statement of ``prog`` in one sequence kernel whose isl AST interleaves them exactly
    as the source does (the program's schedule), run on the one core ``at``; accesses index the arrays' homes
    by global index."""
    parts = tuple(
        Kernel(f"k_{s.name}", s.name, s.loops, str(guarded(s, s.domain_set)), (), KAccess(s.write.ref, s.write.array, s.write.index),
               tuple(KAccess(a.ref, a.array, a.index) for a in s.reads), s.expr, (), expr_flops(s.expr))
        for s in prog.statements)
    udom = isl.UnionSet.from_set(iset(parts[0].domain))
    for p in parts[1:]:
        udom = udom.union(isl.UnionSet.from_set(iset(p.domain)))
    return Kernel("k_program", "", (), str(udom), (), parts[-1].write, (), parts[-1].expr,
                  (KernelClass("k_program_0", at),), 0, parts, str(prog.schedule_map()))


def at_owner_core(prog: Program, sched: Schedule, target: Target) -> MeshProgram:
    """``prog`` in its original order on the core that owns every element it reads or writes under the homes
    of ``sched`` (which has no spatial loop and no step). Preserves the homes' layouts."""
    touched = sorted({a.array for s in prog.statements for a in s.accesses})
    boxes = {}
    for name in touched:
        home = sched.home(name)
        if not any(a for a, _ in home.dims) and not home.pin:
            raise ScheduleError(f"{prog.name} has nothing to spread and touches {name}, which is not laid out over "
                                f"the mesh, next to arrays another operator laid out: no one core holds them all")
        boxes[name] = (home_box(prog.array(name).shape, home), dict(home.pin))
    w = max([ceil(d.extent / d.tile) for b, _ in boxes.values() for d in b if d.coord == "x"]
            + [p["x"] + 1 for _, p in boxes.values() if "x" in p] + [1])
    h = max([ceil(d.extent / d.tile) for b, _ in boxes.values() for d in b if d.coord == "y"]
            + [p["y"] + 1 for _, p in boxes.values() if "y" in p] + [1])
    if w > sched.mesh[0] or h > sched.mesh[1]:
        raise ScheduleError(f"the homes of {', '.join(touched)} need {w}x{h} cores; the mesh is "
                            f"{sched.mesh[0]}x{sched.mesh[1]}")
    region = Region("work", 0, w, 0, h)
    owns = {n: ownership_map(prog.array(n), b, region, p) for n, (b, p) in boxes.items()}
    cores = None
    for s in prog.statements:
        for a in s.accesses:
            c = s.access_map(a).apply_range(owns[a.array].reverse()).range()
            cores = c if cores is None else cores.union(c)
    if cores is None or cores.count_val().to_python() != 1:
        raise ScheduleError(f"{prog.name} has nothing to spread, and the elements it touches of "
                            f"{', '.join(touched)} (laid out by another operator) are not all on one core")
    point = cores.sample_point()
    cx, cy = (point.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(2))
    tensors, offset = [], 0
    for arr in prog.arrays:
        if arr.name not in boxes:
            continue
        box, pins = boxes[arr.name]
        xs = (pins["x"], pins["x"] + 1) if "x" in pins else (0, w)
        ys = (pins["y"], pins["y"] + 1) if "y" in pins else (0, h)
        held = Region(f"home_{arr.name}", *xs, *ys)
        t = RegionTensor(arr.name, arr.name, arr.dtype, arr.elem_bytes, held, box, "home", str(owns[arr.name]), offset)
        tensors.append(t)
        offset += -(-t.max_bytes // ARENA_ALIGN) * ARENA_ALIGN
    if offset > target.sram_bytes:
        raise SramError(f"{prog.name} on core ({cx}, {cy}) needs {offset} bytes; target {target.name} has "
                        f"{target.sram_bytes} bytes of SRAM per core", needed=offset)
    at = Region("k_program_0", cx, cx + 1, cy, cy + 1)
    seq = original_order_kernel(prog, at)
    regions = {t.name: t.region for t in tensors}
    body = [HostLoad(n, n, regions[n]) for n in prog.inputs if n in regions]
    body.append(Compute(seq.name, at.rect))
    body += [HostStore(n, n, regions[n]) for n in prog.outputs if n in regions]
    return MeshProgram(prog.name, target.name, sched.mesh, region, tuple(tensors), (seq,), tuple(body), offset,
                       tuple(n for n, _ in prog.scalars), 0, None, prog.runtime, prog.on_mesh)
