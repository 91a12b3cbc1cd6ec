"""The mutable state of one run of :func:`mica.lower.build.build_mesh_program`, and small helpers its steps share.

:class:`_Builder` is the only mutable object of the pass: it accumulates the buffers (``tensors``), the
kernels and the bookkeeping of the communication steps (rings, ghost zones, mirrors, prefetched
exchanges) while the steps of :mod:`mica.lower.build`, :mod:`mica.lower.reads`, :mod:`mica.lower.rings`,
:mod:`mica.lower.halo` and :mod:`mica.lower.reduce` run. The MeshIR records it collects are frozen; a step
that changes one (a second slot, ghost zones) replaces it in ``tensors`` under the same name, keeping its
place in the arena order.
"""

from __future__ import annotations

from math import ceil

import islpy as isl

from ..affine.deps import reductions
from ..affine.expr import Aff
from ..affine.isl_names import iset, umap
from ..affine.program import Program, Statement
from ..affine.runtime import guarded
from ..errors import ScheduleError
from ..targets import Target
from ..tiling.cost import expr_flops
from ..tiling.homes import home_box
from ..tiling.mapping import loop_extent, main_statement, work_blocks
from ..tiling.schedule import Schedule
from ..tiling.spacetime import owner_rows, placement_constraints
from ..comm.sets import ownership_map
from ..meshir.ir import (BoxDim, HostLoad, KAccess, Kernel, KernelClass, Rect, Region, RegionTensor,
                         Skew)


def _splits(tilings: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """Cut ``[lo, hi)`` where a block tiling (tile, extent) changes its block size."""
    cuts = {lo, hi}
    for tile, extent in tilings:
        for c in (extent // tile, ceil(extent / tile)):
            if lo < c < hi:
                cuts.add(c)
    pts = sorted(cuts)
    return [(a, b) for a, b in zip(pts, pts[1:]) if a < b]


def line_rect(axis: str, across: tuple[int, int], lo, hi, stride: int = 1, phase=0) -> Rect:
    """The cores ``lo <= c < hi`` of ``axis`` (every ``stride``-th from ``phase``) on the lines ``across`` of
    the other axis: ``{ core[x, y] : lo <= x < hi and across }`` for ``axis = "x"``, transposed for ``"y"``."""
    if axis == "x":
        return Rect.of(lo, hi, across[0], across[1], xs=stride, xp=phase)
    return Rect.of(across[0], across[1], lo, hi, ys=stride, yp=phase)


def line_region(name: str, axis: str, lo: int, hi: int, across: tuple[int, int]) -> Region:
    """The :class:`Region` ``name`` of cores ``lo <= c < hi`` of ``axis`` on the lines ``across``."""
    return Region(name, lo, hi, *across) if axis == "x" else Region(name, *across, lo, hi)


class _Builder:
    """Accumulates tensors, kernels and ops while the pass runs (the only mutable state of the pass).

    Set once here: the program, schedule and target, the main statement, the reductions, the region
    of cores with work, the skew of the step loop, the cross-core reduction (``reduced_axes``,
    ``reduced_array``), the arrays this operator writes (``written``) and those an earlier operator left on
    the mesh (``resident``), the statements inside the step loop (``in_step``) and whether the step loop is
    double-buffered (``double``). Filled by the steps: ``tensors`` (buffer name -> :class:`RegionTensor`, in
    arena order), ``kernels``, ``ring_arrays`` and ``rings`` (:mod:`mica.lower.rings`), ``ghosts``
    (:mod:`mica.lower.halo`), ``mirrors``, ``mirror_loads``, ``mirror_moves`` (:mod:`mica.lower.reads`) and
    ``prefetched`` (the names of the exchanges and DRAM loads marked prefetched), ``stream_reads`` (per
    statement, the (array, receive buffer) pairs it streams from DRAM, :mod:`mica.lower.dram`), ``deliveries`` (the ops that move routed
    writes to the cores owning them at the end of the operator, :mod:`mica.lower.routed`)."""

    def __init__(self, prog: Program, sched: Schedule, target: Target, resident: frozenset[str] = frozenset()):
        self.prog, self.sched, self.target = prog, sched, target
        self.main = main_statement(prog)
        self.reds = reductions(prog)
        self.tensors: dict[str, RegionTensor] = {}
        self.kernels: list[Kernel] = []
        blocks = work_blocks(prog, sched)
        w, h = sched.mesh
        self.skew = None
        if sched.step is not None and sched.step.skew != "none":
            self.skew = Skew(sched.step.skew, sched.step.steps)
        if blocks["x"] > w or blocks["y"] > h:
            raise ScheduleError(f"schedule needs {blocks['x']}x{blocks['y']} cores, mesh is {w}x{h}")
        self.region = Region("work", 0, blocks["x"], 0, blocks["y"])
        # Cross-core reductions: spatial loops of a reduction statement its write does not index.
        self.reduced_axes: list[str] = []
        red = self.reds.get(self.main.name)
        if red is not None:
            written = {v for ix in self.main.write.index for v in ix.names}
            for axis in ("x", "y"):
                sm = sched.loop_on(axis)
                if sm is not None and sm.loop not in written:
                    self.reduced_axes.append(axis)
        self.reduced_array = red.array if (red is not None and self.reduced_axes) else None
        # A (value, index) pair: the index statement runs with the main one, in one kernel, and its array
        # holds partials too (``reduced_arrays``: the main reduction's array first).
        self.partner = prog.statement(red.partner) if red is not None and red.partner else None
        self.combined = {self.main.name} | ({self.partner.name} if self.partner is not None else set())
        self.reduced_arrays: tuple[str, ...] = ()
        if self.reduced_array is not None:
            self.reduced_arrays = (self.reduced_array,) + \
                ((self.partner.write.array,) if self.partner is not None else ())
        self.resident = resident
        self.step = sched.step
        self.written = {s.write.array for s in prog.statements}
        self.in_step = [s for s in prog.statements if self.step is not None and self.step.encloses(s.loops)]
        self.double = self.step is not None and self.step.buffers == 2
        self.streamed = frozenset(sched.dram)                  # arrays streamed from device DRAM (lower.dram)
        self.stream_reads: dict[str, list[tuple[str, str]]] = {}   # statement -> its (array, buffer) streams
        # Filled by the steps of the pass.
        self.ring_arrays: set[str] = set()
        self.rings: dict[str, tuple[str, int, str]] = {}      # ring buffer -> (axis, max hops, derived relation)
        self.ghosts: dict[str, tuple[tuple[int, int], ...]] = {}    # array -> ghost widths of its home
        self.mirrors: dict[str, str] = {}                      # array -> its mirror buffer
        self.mirror_loads: list[HostLoad] = []                 # inputs' mirrors, loaded by the host
        self.mirror_moves: list = []                           # resident arrays' mirrors, transposed on the mesh
        self.prefetched: list[str] = []                        # exchanges marked as prefetched (double-buffered)
        self.deliveries: list = []                             # routed writes moved to their owners (lower.routed)

    # -- tensors -------------------------------------------------------------------------------------
    def home_box(self, array: str) -> tuple[tuple[BoxDim, ...], dict[str, int]]:
        """The box of ``array``'s home and its pinned mesh axes (axis -> coordinate)."""
        home = self.sched.home(array)
        return home_box(self.prog.array(array).shape, home), dict(home.pin)

    def home_region(self, array: str) -> Region:
        """The cores holding ``array``'s home (see :meth:`box_region`)."""
        box, pins = self.home_box(array)
        return self.box_region(array, box, pins)

    def box_region(self, array: str, box: tuple[BoxDim, ...], pins: dict[str, int]) -> Region:
        """The cores holding a block of ``array`` under ``box`` (pinned axes at ``pins``); raises
        :class:`ScheduleError` when they reach beyond the cores with work."""
        r = {"x": (self.region.x0, self.region.x1), "y": (self.region.y0, self.region.y1)}
        for d in box:
            if d.coord in ("x", "y"):
                r[d.coord] = (0, ceil(d.extent / d.tile))
        for axis, c in pins.items():
            r[axis] = (c, c + 1)
        reg = Region(f"home_{array}", r["x"][0], r["x"][1], r["y"][0], r["y"][1])
        if reg.x1 > self.region.x1 or reg.y1 > self.region.y1:
            raise ScheduleError(
                f"the home of {array} ({reg}) reaches beyond the cores with work ({self.region})")
        return reg

    def add_tensor(self, name: str, array: str, box, role: str, ownership: str) -> RegionTensor:
        """A buffer ``name`` of ``array`` on every core of the work region, appended to ``tensors``;
        ``ownership`` is its ``{ core[x, y] -> A[a...] }`` (or ``{ M[t, x, y] -> A[a...] }``) text."""
        arr = self.prog.array(array)
        t = RegionTensor(name, array, arr.dtype, arr.elem_bytes, self.region, tuple(box), role, ownership)
        self.tensors[name] = t
        return t

    def ensure_home(self, array: str) -> RegionTensor:
        """The home buffer of ``array``, added on first use with its ownership ``{ core[x, y] -> A[a...] }``
        (role ``partial`` for the array a cross-core reduction combines)."""
        if array in self.tensors:
            return self.tensors[array]
        box, pins = self.home_box(array)
        own = ownership_map(self.prog.array(array), box, self.home_region(array), pins)
        role = "partial" if array in self.reduced_arrays else "home"
        return self.add_tensor(array, array, box, role, str(own))

    # -- kernels -------------------------------------------------------------------------------------
    def compute_rect(self, stmt: Statement) -> Region:
        """The cores that run ``stmt``: the work region, narrowed to coordinate 0 on every mesh axis
        whose spatial loop ``stmt`` does not have (unless it runs on the owners of what it writes there,
        :func:`~mica.tiling.spacetime.owner_rows`)."""
        r = {"x": (self.region.x0, self.region.x1), "y": (self.region.y0, self.region.y1)}
        for sm in self.sched.space:
            if sm.loop not in stmt.loops and owner_rows(stmt, self.sched, sm.axis) is None:
                r[sm.axis] = (0, 1)
        return Region(f"run_{stmt.name}", r["x"][0], r["x"][1], r["y"][0], r["y"][1])

    def classes(self, kname: str, rect: Region, tilings: dict[str, list[tuple[int, int]]]) -> tuple[KernelClass, ...]:
        """The region classes of kernel ``kname`` on ``rect``: sub-rectangles on which every tiling of
        ``tilings`` (per mesh axis) has a constant block size, row by row."""
        out = []
        for ya, yb in _splits(tilings["y"], rect.y0, rect.y1):
            for xa, xb in _splits(tilings["x"], rect.x0, rect.x1):
                out.append(KernelClass(f"{kname}_{len(out)}", Region(f"{kname}_{len(out)}", xa, xb, ya, yb)))
        return tuple(out)

    def tilings_of(self, stmt_loops: tuple[str, ...], buffers: list[RegionTensor]) -> dict[str, list]:
        """The block tilings ``(tile, extent)`` per mesh axis of the spatial loops among ``stmt_loops`` and
        of the distributed dimensions of ``buffers``."""
        til: dict[str, list] = {"x": [], "y": []}
        for sm in self.sched.space:
            if sm.loop in stmt_loops:
                til[sm.axis].append((sm.tile, loop_extent(self.main, sm.loop) if sm.loop in self.main.loops
                                     else sm.tile))
        for b in buffers:
            for d in b.box:
                if d.coord in ("x", "y"):
                    til[d.coord].append((d.tile, d.extent))
        return til

    def statement_kernel(self, stmt: Statement, buffers: dict[str, str]) -> Kernel:
        """The kernel of ``stmt`` (appended to ``kernels``): its domain ``[__x, __y, __t(, __kb)] -> { S[loops] }``
        is the instances core ``(__x, __y)`` runs at step ``__t`` (and, for a guarded statement, at the values
        ``__rp_<p>`` of the runtime parameters: :func:`mica.affine.runtime.guarded`); ``buffers`` maps each access ref to the
        buffer it uses."""
        cons = " and ".join(placement_constraints(stmt, self.sched, kernel=True))
        params = "__x, __y, __t, __kb" if self.skew is not None else "__x, __y, __t"
        local = iset(f"[{params}] -> {{ {stmt.name}[{', '.join(stmt.loops)}] : {cons} }}")
        dom = guarded(stmt, stmt.domain_set.intersect(local))
        rect = self.compute_rect(stmt)
        bufs = [self.tensors[b] for b in buffers.values()]
        kname = f"k_{stmt.name}"
        k = Kernel(
            name=kname, statement=stmt.name, loops=stmt.loops, domain=str(dom),
            order=self.sched.order_of(stmt.name),
            write=KAccess(stmt.write.ref, buffers[stmt.write.ref], stmt.write.index),
            reads=tuple(KAccess(a.ref, buffers[a.ref], a.index) for a in stmt.reads),
            expr=stmt.expr, classes=self.classes(kname, rect, self.tilings_of(stmt.loops, bufs)),
            flops_per_instance=expr_flops(stmt.expr))
        self.kernels.append(k)
        return k

    def sequence_kernel(self, stmts: list[Statement], buffers: dict[str, str]) -> Kernel:
        """One kernel running the single-statement kernels of ``stmts`` (:meth:`statement_kernel`, not added
        to ``kernels`` themselves) interleaved in the program's original order, e.g. the two halves of a
        (value, index) pair; appended to ``kernels``."""
        parts = []
        for s in stmts:
            parts.append(self.statement_kernel(s, buffers))
            self.kernels.pop()
        udom = isl.UnionSet.from_set(iset(parts[0].domain))
        for p in parts[1:]:
            udom = udom.union(isl.UnionSet.from_set(iset(p.domain)))
        names = {s.name for s in stmts}
        order = [s for s in self.prog.statements if s.name in names]
        n = max(len(s.order) for s in order)
        sched = "; ".join(f"{s.name}[{', '.join(s.loops)}] -> [{', '.join(map(str, s.order))}"
                          f"{', 0' * (n - len(s.order))}]" for s in order)
        kname = "k_" + "_".join(s.name for s in stmts)
        classes = self.classes(kname, self.compute_rect(stmts[-1]),
                               self.tilings_of(stmts[-1].loops, [self.tensors[b] for b in buffers.values()]))
        k = Kernel(kname, "", (), str(udom), (), parts[-1].write, (), parts[-1].expr, classes, 0, tuple(parts),
                   str(umap("{ " + sched + " }")))
        self.kernels.append(k)
        return k

    def box_kernel(self, kname: str, target: RegionTensor, rect: Region, expr, reads: tuple[RegionTensor, ...] = (),
                   domain: tuple[BoxDim, ...] | None = None, within: isl.Set | None = None) -> Kernel:
        """A kernel over a buffer's box (or the box ``domain``): ``target[a] = expr`` (reads index the same
        array elements), only at the elements of ``within`` (``{ A[a...] }``) when it is given."""
        dbox = domain if domain is not None else target.box
        loops = tuple(f"a{i}" for i in range(len(dbox)))
        cons = " and ".join(d.isl(f"a{i}", prefix="__") for i, d in enumerate(dbox)) or "true"
        params = sorted({"__" + d.coord for d in dbox if d.coord} | {"__x", "__y"})
        dom = iset(f"[{', '.join(params)}] -> {{ {kname}[{', '.join(loops)}] : {cons} }}")
        if within is not None:
            dom = dom.intersect(within.set_tuple_name(kname).align_params(dom.get_space())).coalesce()
        index = tuple(Aff.var(lp) for lp in loops)

        def read_index(r: RegionTensor) -> tuple[Aff, ...]:
            # A read of another rank is of a one-element buffer (the value half of a (value, index) pair
            # held in a scalar, next to a one-element index array): its element 0.
            if len(r.box) == len(dbox):
                return index
            if any(d.extent != 1 for d in r.box) or any(d.extent != 1 for d in dbox):
                raise ScheduleError(f"kernel {kname} reads {r.name} with another rank than it writes")
            return tuple(Aff.of({}, 0) for _ in r.box)
        k = Kernel(kname, "", loops, str(dom), loops, KAccess("w", target.name, index),
                   tuple(KAccess(f"r{i}", r.name, read_index(r)) for i, r in enumerate(reads)), expr,
                   self.classes(kname, rect, self.tilings_of((), [target, *reads])),
                   flops_per_instance=expr_flops(expr))
        self.kernels.append(k)
        return k
