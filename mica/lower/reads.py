"""How each read of a statement reaches the cores that run it, and the check of its write.

For every read :func:`plan_reads` asks :mod:`mica.comm.sets` for the communication plan — ``need``
``{ M[t, x, y] -> A[a...] }`` against the home's ownership ``{ core[x, y] -> A[a...] }``: local, or a row /
column multicast into a receive buffer (:func:`multicast_exchange`). A read that reaches into the
neighbours' blocks is a halo (:mod:`mica.comm.halo`, exchanged by :mod:`mica.lower.halo`); a read of a
read-only 2D array in the other orientation goes through a *mirror* (:func:`mirror_plan`); under a
skewed step, panels come from ring buffers (:mod:`mica.lower.rings`); in a sweep step, what an earlier
statement of the step produced further away is multicast from its owner, the panel at the step packed
first (:func:`step_owner_plan`, :func:`step_panel`).
"""

from __future__ import annotations

from dataclasses import replace

from ..affine.expr import Read
from ..affine.isl_names import imap, iset
from ..affine.program import Statement
from ..errors import CommError, ScheduleError
from ..comm.halo import check_covered, ghosted_box, halo_widths, held_map, merge_widths
from ..comm.routes import assign_colours, multicast_routes
from ..comm.sets import CommPlan, box_map, classify, is_local, need_map, ownership_map
from ..tiling.homes import home_box, swap_home
from ..meshir.ir import BoxDim, Exchange, HostLoad, Multicast, Rect, RegionTensor
from .builder import _Builder
from .dram import stream_buffer
from .refusals import remember
from .relayout import transpose
from .rings import ring_buffer
from .routed import stage_routed_write, stage_shifted_write


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
        _add_move(moves, plan, name)
    try:
        routed = check_writes(b, stmt)
    except ScheduleError as exc:
        remember(b, stmt, None, exc)
        raise
    if routed is not None:
        buffers[stmt.write.ref] = routed
    return buffers, moves, halos


def _add_move(moves: list[tuple[CommPlan, str]], plan: CommPlan, dst: str) -> None:
    """Appends the multicast ``(plan, dst)`` to ``moves`` unless one of them already sends the same box (same
    pattern, root and source buffer) into ``dst`` — two reads of one panel (cholesky's ``A[i][k]*A[i][k]``)
    then share one message — keeping the longer of their hop counts."""
    for k, (p, d) in enumerate(moves):
        if d == dst and (p.kind, p.root, p.recv_box, p.buffer, p.in_step) == (
                plan.kind, plan.root, plan.recv_box, plan.buffer, plan.in_step):
            if plan.max_hops > p.max_hops:
                moves[k] = (replace(p, max_hops=plan.max_hops), d)
            return
    moves.append((plan, dst))


def plan_read(b: _Builder, stmt: Statement, acc, halos: dict[str, tuple[tuple[int, int], ...]]) -> CommPlan | None:
    """The plan that brings what ``stmt`` reads through ``acc`` — need ``{ M[t, x, y] -> A[a...] }`` — from
    the home ``{ core[x, y] -> A[a...] }``: local or a multicast (of the home or of a mirror), or None for a
    halo read in place from the home's ghost zones. A halo merges its widths into ``b.ghosts`` and, when
    the array does not come from the host (written here or ``resident``), into ``halos``. Raises the
    multicast's :class:`CommError` when a read-only array can be read neither way. A produced array no halo
    serves is, in a sweep step, multicast from the core that produced it (:func:`step_owner_plan`)."""
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
        # Not a neighbour's: in a sweep step, a multicast from the core that produced it (or the halo's error).
        plan = step_owner_plan(b, acc, arr, need, own, box, what)
        if plan is None:
            raise
        return plan
    b.ghosts[acc.array] = merge_widths(b.ghosts.get(acc.array, widths), widths)
    if acc.array in b.written or acc.array in b.resident:
        # Not from the host: an array this operator writes, or one an earlier operator left
        # on the mesh, gets its ghost zones from the neighbours just before the read.
        halos[acc.array] = merge_widths(halos.get(acc.array, widths), widths)
    return None


def step_owner_plan(b: _Builder, acc, arr, need, own, box, what: str) -> CommPlan | None:
    """The multicast that brings a produced array's element to every core that reads it in a sweep step —
    need ``{ M[t, x, y] -> A[a...] }`` from the home ``{ core[x, y] -> A[a...] }`` — from the core that owns
    it — a fixed core, or one moving with the step, ``floor(t / d)`` (trisolv's ``x[j]`` at step ``j``, just
    divided by the earlier statement of the step on its owner); None when the step is not a plain sweep or the
    read is not such a row / column multicast. The exchange runs at every step just before the reading
    statement (:func:`mica.lower.build.emit_statements`, ``in_step``): legality has proved that what it reads
    was produced by an earlier statement start (:mod:`mica.tiling.legality`). Only the panel at the step
    travels when the root's home holds more (:func:`step_panel`, which adds its send buffer and pack kernel
    to ``b``); a root that follows the step block by block always sends the panel."""
    step = b.step
    if step is None or not step.sweep or step.wavefront:
        return None
    try:
        plan = classify(arr, acc.ref, need, own, box, what, blocks=True)
    except CommError:
        return None
    if plan.kind == "local":
        return None
    plan = replace(plan, in_step=True)        # sent at every step, never before the loop: it is produced there
    if all(d.per == 1 for d in plan.recv_box):
        return step_panel(b, acc, arr, need, own, plan) or plan
    # The root's block follows the step only block by block: only the panel at the step is sent.
    return step_panel(b, acc, arr, need, own, plan)


def step_panel(b: _Builder, acc, arr, need, own, plan: CommPlan) -> CommPlan | None:
    """``plan`` sending only the panel its step needs rather than the root's whole home box: along every
    array dimension whose needed index is the step itself (trisolv's ``x[j]``, LU's pivot column ``A[i][k]``
    at step ``k``) the panel holds element ``t`` alone. The panel is packed from the home into a send buffer
    on every core whose home holds it (the root), just before the multicast (``plan.pack``). None when no
    dimension is the step, or when the root's home does not hold the whole panel. Adds the send buffer and
    the pack kernel to ``b``; need is ``{ M[t, x, y] -> A[a...] }``, own ``{ core[x, y] -> A[a...] }``."""
    dims = [f"a{d}" for d in range(arr.rank)]
    sliced = []
    for d, bd in enumerate(plan.recv_box):
        at_step = imap(f"{{ M[t, x, y] -> {arr.name}[{', '.join(dims)}] : a{d} = t }}")
        sliced.append(BoxDim("t", 1, arr.shape[d]) if need.is_subset(at_step) else bd)
    sliced = tuple(sliced)
    if sliced == plan.recv_box:
        return None
    root = str(plan.root).replace(" ", "")
    rmap = imap(f"{{ M[t, x, y] -> core[{root}, y] }}" if plan.kind == "row" else f"{{ M[t, x, y] -> core[x, {root}] }}")
    receivers = need.domain()
    panel = box_map(arr, sliced).intersect_domain(receivers)
    if not panel.is_subset(rmap.intersect_domain(receivers).apply_range(own)) or not need.is_subset(panel):
        return None
    for t in b.tensors.values():        # another read of the same panel: its buffer and pack kernel serve
        if t.array == arr.name and t.role == "panel" and t.box == sliced:
            return replace(plan, recv_box=sliced, source=t.name, pack=f"k_pack_{t.name}")
    n = sum(1 for t in b.tensors.values() if t.array == arr.name and t.role == "panel")
    send = b.add_tensor(f"{arr.name}_panel{n}", arr.name, sliced, "panel", str(box_map(arr, sliced)))
    home = b.tensors[arr.name]
    hbox, _ = b.home_box(arr.name)
    on_step = " and ".join(f"a{d} = __t" for d, bd in enumerate(sliced) if bd.coord == "t" and bd.tile == 1)
    within = iset(f"[__t] -> {{ {arr.name}[{', '.join(dims)}] : {on_step} }}")
    k = b.box_kernel(f"k_pack_{send.name}", send, b.home_region(arr.name), Read("r0"), (home,), domain=hbox,
                     within=within)
    return replace(plan, recv_box=sliced, source=send.name, pack=k.name)


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
        final = imap(f"{{ M[t, x, y] -> core[{xs}, {ys}] : {region} }}")
    else:
        final = imap("{ M[t, x, y] -> core[x, y] }")
    held = final.apply_range(own)
    if not writes.is_subset(held):
        routed = stage_routed_write(b, stmt, writes) or stage_shifted_write(b, stmt, writes)
        if routed is not None:
            return routed
        raise ScheduleError(
            f"statement {stmt.name}: cores would write elements of {arr.name} that another core owns "
            f"(the writes would be lost)", detail=str(writes.subtract(held)), cause="ownership")
    _check_copies(b, stmt, arr, box, pins, own, writes.apply_domain(final))
    along = [d.coord for d in t.box if d.coord in b.reduced_axes]
    if t.role == "partial" and along:
        # Every core of a reduced axis holds a partial of the same elements: a home laid out along that
        # axis, as an earlier operator may leave it, has no room for them.
        raise ScheduleError(f"statement {stmt.name}: the partial results of {arr.name} need the same elements "
                            f"on every core of mesh axis {along[0]}, but its home is laid out along that axis")
    return None


def _check_copies(b: _Builder, stmt: Statement, arr, box, pins: dict, own, wrote) -> None:
    """A home replicated along a mesh axis (no dimension laid out along it, no pin: every core of the line
    holds a copy, as a scalar every core of a 2D plan reads) is written by every core holding a written
    element, so no copy goes stale; raises :class:`ScheduleError` otherwise. ``own``: ``{ core[x, y] -> A[a] }``;
    ``wrote``: ``{ core[x, y] -> A[a] }``, the final values each core writes (a reduction's combined result only
    where its chain ends, not the partials every core holds)."""
    r = b.home_region(arr.name)
    spans = {"x": r.x1 - r.x0 > 1, "y": r.y1 - r.y0 > 1}
    if not any(spans[a] and a not in pins and all(d.coord != a for d in box) for a in ("x", "y")):
        return
    stale = own.intersect_range(wrote.range()).subtract(wrote)
    if not stale.is_empty():
        raise ScheduleError(f"statement {stmt.name}: {arr.name} has a copy on every core of the plan, but not "
                            f"every core writes its copy (the others would keep stale values)",
                            detail=str(stale), cause="ownership")


def panel_unchanged(b: _Builder, plan: CommPlan, between: list[Statement]) -> bool:
    """Whether no statement of ``between`` (those a sweep step runs after ``plan``'s multicast delivered its
    panel and before a later statement reads the same panel) writes an element of that panel at the same
    step: then the receive buffer still holds what a second multicast would bring (LU's pivot row and column,
    read by both halves of the update). The panel at step ``t`` is ``{ [t] -> A[a] }``, the union over the
    receiving cores of the receive box (:func:`~mica.comm.sets.box_map`, a superset); a statement writes
    ``{ [t] -> A[w] }``, its write at the instances whose step loop is ``t``. A statement outside the step
    loop, or a step that is not a plain sweep (one iteration per step), counts as writing everything."""
    step = b.step
    if step is None or not step.sweep or step.wavefront or step.tile != 1 or not step.loop:
        return False
    arr = b.prog.array(plan.array)
    panel = imap("{ [t] -> M[t, x, y] }").apply_range(box_map(arr, plan.recv_box))
    for s in between:
        if s.write.array != plan.array:
            continue
        if step.loop not in s.loops:
            return False
        at = imap(f"{{ {s.name}[{', '.join(s.loops)}] -> [t] : t = {step.loop} }}")
        writes = at.reverse().apply_range(s.access_map(s.write))
        if not writes.intersect(panel).is_empty():
            return False
    return True

