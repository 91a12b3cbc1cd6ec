"""How each read of a statement reaches the cores that run it, and the check of its write.

For every read :func:`plan_reads` asks :mod:`mica.comm.sets` for the communication plan — ``need``
``{ M[t, x, y] -> A[a...] }`` against the home's ownership ``{ core[x, y] -> A[a...] }``: local, or a row /
column multicast into a receive buffer (:func:`multicast_exchange`). A read that reaches into the
neighbours' blocks is a halo (:mod:`mica.comm.halo`, exchanged by :mod:`mica.lower.halo`); a read of a
read-only 2D array in the other orientation goes through a *mirror* (:func:`mirror_plan`); under a
skewed step, panels come from ring buffers (:mod:`mica.lower.rings`).
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.isl_names import imap
from ..affine.program import Statement
from ..errors import CommError, ScheduleError
from ..comm.halo import check_covered, ghosted_box, halo_widths, held_map, merge_widths
from ..comm.routes import assign_colours, multicast_routes
from ..comm.sets import CommPlan, box_map, classify, is_local, need_map, ownership_map
from ..tiling.homes import home_box, swap_home
from ..meshir.ir import Exchange, HostLoad, Multicast, Rect, RegionTensor
from .builder import _Builder
from .dram import stream_buffer
from .refusals import remember
from .relayout import transpose
from .rings import ring_buffer
from .routed import stage_routed_write


def plan_reads(b: _Builder, stmt: Statement):
    """Buffers each access of ``stmt`` uses (ref -> buffer), the multicasts that fill receive buffers
    (``[(plan, receive buffer)]``), and the ghost widths of the produced arrays it reads from neighbours
    (array -> widths, exchanged just before it). A read of an array streamed from DRAM uses a receive buffer
    recorded in ``b.stream_reads`` (:mod:`mica.lower.dram`). Adds receive buffers, ring buffers and mirrors to ``b``,
    merges ghost widths into ``b.ghosts``, and checks the write (:func:`check_writes`)."""
    buffers = {stmt.write.ref: stmt.write.array}
    moves = []
    halos: dict[str, tuple[tuple[int, int], ...]] = {}
    red_s = b.reds.get(stmt.name)
    for acc in stmt.reads:
        if red_s is not None and acc.ref in red_s.read_refs:
            buffers[acc.ref] = acc.array            # the accumulator: the core's own partial
            continue
        if acc.array in b.ring_arrays:
            buffers[acc.ref] = ring_buffer(b, stmt, acc)
            continue
        if acc.array in b.streamed:
            buffers[acc.ref] = stream_buffer(b, stmt, acc)
            b.stream_reads.setdefault(stmt.name, []).append((acc.array, buffers[acc.ref]))
            continue
        try:
            plan = plan_read(b, stmt, acc, halos)
        except (CommError, ScheduleError) as exc:
            remember(b, stmt, acc, exc)
            raise
        if plan is None or plan.kind == "local":
            buffers[acc.ref] = acc.array if plan is None else plan.buffer
            continue
        name = recv_buffer(b, acc.array, plan)
        buffers[acc.ref] = name
        moves.append((plan, name))
    try:
        routed = check_writes(b, stmt)
    except ScheduleError as exc:
        remember(b, stmt, None, exc)
        raise
    if routed is not None:
        buffers[stmt.write.ref] = routed
    return buffers, moves, halos


def plan_read(b: _Builder, stmt: Statement, acc, halos: dict[str, tuple[tuple[int, int], ...]]) -> CommPlan | None:
    """The plan that brings what ``stmt`` reads through ``acc`` — need ``{ M[t, x, y] -> A[a...] }`` — from
    the home ``{ core[x, y] -> A[a...] }``: local or a multicast (of the home or of a mirror), or None for a
    halo read in place from the home's ghost zones. A halo merges its widths into ``b.ghosts`` and, when
    the array does not come from the host (written here or ``resident``), into ``halos``. Raises the
    multicast's :class:`CommError` when a read-only array can be read neither way."""
    box, pins = b.home_box(acc.array)
    region = b.home_region(acc.array)
    arr = b.prog.array(acc.array)
    own = ownership_map(arr, box, region, pins)
    need = need_map(stmt, acc, b.sched)
    what = f"statement {stmt.name}, read {acc.ref} of {acc.array}"
    plan = None
    if acc.array not in b.written:
        try:
            plan = classify(arr, acc.ref, need, own, box, what)
        except CommError as exc:
            plan_error = exc
            plan = mirror_plan(b, stmt, acc, need, what)
    elif is_local(need, own):
        plan = CommPlan("local", acc.array, acc.ref)
    if plan is not None:
        return plan
    # Neighbours' data: a halo. Ghost zones of read-only arrays are filled by the host load;
    # produced arrays are exchanged just before the statement.
    try:
        widths = halo_widths(arr, need, box, what)
        check_covered(arr, need, held_map(arr, ghosted_box(box, widths), pins, region), what)
    except CommError:
        if acc.array not in b.written:
            raise plan_error from None
        raise
    b.ghosts[acc.array] = merge_widths(b.ghosts.get(acc.array, widths), widths)
    if acc.array in b.written or acc.array in b.resident:
        # Not from the host: an array this operator writes, or one an earlier operator left
        # on the mesh, gets its ghost zones from the neighbours just before the read.
        halos[acc.array] = merge_widths(halos.get(acc.array, widths), widths)
    return None


def recv_buffer(b: _Builder, array: str, plan: CommPlan) -> str:
    """The receive buffer of a multicast of ``array``: ``<array>_recv`` (``_recv2``, ... for other boxes),
    added to ``b.tensors`` on first use with the box ``{ M[t, x, y] -> A[a...] }`` of ``plan.recv_box``."""
    name = f"{array}_recv"
    n = 1
    while name in b.tensors and b.tensors[name].box != plan.recv_box:
        n += 1
        name = f"{array}_recv{n}"
    if name not in b.tensors:
        b.add_tensor(name, array, plan.recv_box, "recv", str(box_map(b.prog.array(array), plan.recv_box)))
    return name


def mirror_plan(b: _Builder, stmt: Statement, acc, need, what: str) -> CommPlan | None:
    """The plan reading ``acc`` through its array's *mirror* — a second home with the two mesh axes
    swapped (same tiles), for a statement that reads an array in both orientations (``T + Tᵀ``,
    ``Tᵀ T``) — or None when there is none (not a 2D block home, written here, outside the cores with
    work, not local or a row/column multicast either, or a produced array whose blocks cannot be
    transposed on the mesh). ``need`` is ``{ M[t, x, y] -> A[a...] }``; the mirror holds
    ``{ core[x, y] -> A[a...] }`` of the swapped box. An input's mirror is loaded from the host in that layout
    (``b.mirror_loads``); an array an earlier operator left on the mesh (``resident``) is transposed into it
    block by block (:func:`mica.lower.relayout.transpose`, ``b.mirror_moves``) before the operator's first
    statement. The array is not written by this operator, so the mirror stays equal to the home."""
    arr = b.prog.array(acc.array)
    swapped = swap_home(b.sched.home(acc.array))
    if swapped is None or acc.array in b.written:
        return None
    mbox = home_box(arr.shape, swapped)
    try:
        region = b.box_region(acc.array, mbox, {})
        own = ownership_map(arr, mbox, region, {})
        plan = classify(arr, acc.ref, need, own, mbox, what)
    except (CommError, ScheduleError):
        return None
    if acc.array not in b.mirrors:
        name = f"{acc.array}_mirror"
        while name in b.tensors or any(a.name == name for a in b.prog.arrays):
            name += "_"
        t = RegionTensor(name, acc.array, arr.dtype, arr.elem_bytes, b.region, mbox, "mirror", str(own))
        if acc.array in b.resident:
            try:
                lanes, kers, ops = transpose(b.tensors[acc.array], t, f"{name}_", b.region, b.target)
            except ScheduleError:
                return None
            for lane in lanes:
                b.tensors[lane.name] = lane
            b.kernels.extend(kers)
            b.mirror_moves.extend(ops)
        else:
            b.mirror_loads.append(HostLoad(name, acc.array, region))
        b.tensors[name] = t
        b.mirrors[acc.array] = name
    return replace(plan, source=b.mirrors[acc.array])


def multicast_exchange(b: _Builder, name: str, moves: list[tuple[CommPlan, str]]) -> Exchange:
    """The exchange ``name`` of the multicasts ``moves`` (plan, receive buffer), each on its own colour: the
    root of each row (``plan.kind == "row"``) or column sends its box along the line, with the relation
    ``{ M[t, x, y] -> core[x', y'] }`` of the plan. Raises when there are more moves than colours."""
    colours = assign_colours(len(moves), b.target.colours, name)
    ops = []
    for (plan, dst), colour in zip(moves, colours):
        axis = "x" if plan.kind == "row" else "y"
        span = (b.region.x0, b.region.x1) if axis == "x" else (b.region.y0, b.region.y1)
        across = (b.region.y0, b.region.y1) if axis == "x" else (b.region.x0, b.region.x1)
        r = plan.root
        senders = (Rect.of((r,), (r.shifted(1),), across[0], across[1]) if axis == "x"
                   else Rect.of(across[0], across[1], (r,), (r.shifted(1),)))
        # The routes reach every core of the line, also cores that hold data but need none of this
        # panel (the region covers every home): the longest path is to the line's far end.
        steps = b.step.steps if (b.step is not None and r.terms) else 1
        roots = (r.evaluate({"t": 0}), r.evaluate({"t": steps - 1}))
        reach = max(max(roots) - span[0], span[1] - 1 - min(roots))
        ops.append(Multicast(f"{plan.buffer}->{dst}", plan.array, plan.buffer, dst, axis, r, senders,
                             b.region.rect, colour, multicast_routes(axis, r, span, across, colour),
                             max(plan.max_hops, reach), plan.relation))
    return Exchange(name, tuple(ops))


def check_writes(b: _Builder, stmt: Statement) -> str | None:
    """Every instance writes an element its own core owns — the home ``{ core -> A }`` (region and pins
    included) — so nothing written is lost; the partial sums of a reduction spread over cores are written
    where the chain that combines them ends at the element's owner. Writes into the blocks of the mirror
    cores are routed to them (:func:`mica.lower.routed.stage_routed_write`): returns the staging buffer the
    statement then writes, else None (changing nothing)."""
    arr = b.prog.array(stmt.write.array)
    t = b.tensors.get(stmt.write.array)
    if t is None:
        raise ScheduleError(f"statement {stmt.name} writes {arr.name}, which this plan keeps in ring buffers")
    writes = need_map(stmt, stmt.write, b.sched)
    box, pins = b.home_box(arr.name)
    own = ownership_map(arr, box, b.home_region(arr.name), pins)
    red = b.reds.get(stmt.name)
    if red is not None and stmt.name in b.combined and arr.name in b.reduced_arrays:
        # Partial sums are combined along the reduced axes into the root (coordinate 0 there): the
        # element must belong to the core the chain ends at.
        xs = "0" if "x" in b.reduced_axes else "x"
        ys = "0" if "y" in b.reduced_axes else "y"
        region = f"{b.region.x0} <= x < {b.region.x1} and {b.region.y0} <= y < {b.region.y1}"
        held = imap(f"{{ M[t, x, y] -> core[{xs}, {ys}] : {region} }}").apply_range(own)
    else:
        held = imap("{ M[t, x, y] -> core[x, y] }").apply_range(own)
    if not writes.is_subset(held):
        routed = stage_routed_write(b, stmt, writes)
        if routed is not None:
            return routed
        raise ScheduleError(
            f"statement {stmt.name}: cores would write elements of {arr.name} that another core owns "
            f"(the writes would be lost)", detail=str(writes.subtract(held)), cause="ownership")
    along = [d.coord for d in t.box if d.coord in b.reduced_axes]
    if t.role == "partial" and along:
        # Every core of a reduced axis holds a partial of the same elements: a home laid out along that
        # axis, as an earlier operator may leave it, has no room for them.
        raise ScheduleError(f"statement {stmt.name}: the partial results of {arr.name} need the same elements "
                            f"on every core of mesh axis {along[0]}, but its home is laid out along that axis")
    return None
