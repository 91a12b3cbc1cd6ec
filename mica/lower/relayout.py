"""On-fabric layout change: a 2D array's blocks transposed across the mesh (core (x, y) -> core (y, x)).

An operator may want an array an earlier operator produced with its two dimensions on the other mesh
axes (``D[i][j] = T[j][i] + T[i][j]``; a matmul whose consumer reads the result transposed). When the
producer's home holds ``n x n`` blocks (dimension 0 in tiles of ``a`` on one axis, dimension 1 in tiles of
``b`` on the other) and the consumer's home has the same tiles on the swapped axes, block ``(x, y)`` of
the first is exactly block ``(y, x)`` of the second: the change of layout is a transposition of blocks.

No single colour's static routes can carry every block to its mirror core (a router cannot tell blocks
apart by destination), and the cores on a diagonal are not a rectangle, so the transposition runs as a
**systolic conveyor** of one-hop shifts, every step the same for every core of a row or column:

* a block below the diagonal (``x < y``) rides an east-bound lane ``E`` along its row to the diagonal core
  ``(y, y)``, which turns it into a north-bound lane ``N``; it leaves that lane at row ``x``;
* a block above the diagonal (``x > y``) rides ``W`` west, then ``S`` south;
* diagonal blocks are copied in place.

Block ``(x, y)`` reaches the diagonal after ``|x - y|`` steps and its destination ``|x - y|`` steps later:
a block that is ``d`` hops from the diagonal is delivered at step ``2d - 1``, so the transposition takes
``2n - 2`` steps of one-hop shifts (the horizontal lanes only in the first ``n - 1``). The turns and
deliveries are copy kernels whose domains select the diagonal (``__x = __y``) and the delivering cores
(``2(__x - __y) - 1 = step``); the lanes are padded one-block buffers moved in place by shifts on two
colours per lane (by parity, so that no router both sends and receives on one colour). Per core the
transposition needs four one-block lanes next to the two homes.

The lanes' boxes say which block a core would hold if the data had not moved; kernels copy by global
index, so a lane is read through the box of the core that reads it: ``E``/``W`` in the producer's layout,
``N``/``S`` in the consumer's. On the diagonal the two coincide, which is what makes the turn a plain
copy; at a delivering core the vertical lane holds exactly the block the consumer's box names there.
"""

from __future__ import annotations

from dataclasses import replace
from math import ceil

from ..affine.expr import Aff, Read
from ..affine.isl_names import imap, iset
from ..comm.routes import multicast_routes, shift_routes
from ..errors import ScheduleError
from ..targets import Target
from ..tiling.cost import estimate
from ..tiling.schedule import OTHER_AXIS as OTHER, Home
from ..tiling.homes import home_box
from .regather import layout_change_program, regather, regather_program
from ..meshir.ir import (BoxDim, Compute, Exchange, KAccess, Kernel, KernelClass, Lin, Loop, MeshProgram,
                         Multicast, Rect, Region, RegionTensor, Shift)

T = Lin(0, (("t", 1),))


def transpose_blocks(src: RegionTensor, dst: RegionTensor) -> int:
    """The side ``n`` of the block grid when ``dst``'s box is ``src``'s with the mesh axes swapped (a 2D
    array's blocks, or a vector's: its one distributed dimension moved to the other axis); raises
    :class:`ScheduleError` saying why the two layouts are not a block transposition."""
    what = (f"changing the layout of {src.array} from {[str(d) for d in src.box]} to "
            f"{[str(d) for d in dst.box]} on the mesh")
    if len(src.box) != len(dst.box) or len(src.box) not in (1, 2):
        raise ScheduleError(f"{what}: only vectors and 2D arrays are re-laid out on the mesh")
    for s, d in zip(src.box, dst.box):
        if s.window or d.window or s.padded or d.padded:
            raise ScheduleError(f"{what}: homes with ghost zones or padding are not re-laid out")
    if len(src.box) == 1:
        if {src.box[0].coord, dst.box[0].coord} != {"x", "y"}:
            raise ScheduleError(f"{what}: a vector is re-laid out only from one mesh axis to the other")
    elif {src.box[0].coord, src.box[1].coord} != {"x", "y"} or \
            (dst.box[0].coord, dst.box[1].coord) != (src.box[1].coord, src.box[0].coord):
        raise ScheduleError(f"{what}: only a transposition of blocks (both dimensions distributed, the mesh "
                            f"axes swapped) is supported")
    if any(s.tile != d.tile for s, d in zip(src.box, dst.box)):
        raise ScheduleError(f"{what}: the tiles differ; blocks must keep their shape")
    counts = [ceil(d.extent / d.tile) for d in src.box]
    if len(set(counts)) != 1:
        raise ScheduleError(f"{what}: its blocks form a {counts[0]}x{counts[1]} grid; a transposition needs a "
                            f"square one")
    return counts[0]


def _lane(name: str, src: RegionTensor, square: Region, like: RegionTensor, padded: bool = True) -> RegionTensor:
    """A buffer ``name`` of ``src``'s array on the cores of ``square`` with ``like``'s box (each dimension padded to
    whole tiles unless ``padded`` is false): what a core of a transposition or a turn holds on the way."""
    box = tuple(BoxDim(d.coord, d.tile, d.extent, padded=True) for d in like.box) if padded else like.box
    idx = ", ".join(f"a{i}" for i in range(len(src.box)))
    return RegionTensor(name, src.array, src.dtype, src.elem_bytes, square, box, "recv",
                        f"{{ core[x, y] -> {src.array}[{idx}] : x = y }}")


def held_guard(t: RegionTensor) -> str:
    """For a vector's buffer (rank 1): ``"__y = 0"`` (``"__x = 0"``) when only the cores of row (column) 0
    hold its blocks, ``""`` when every row (column) holds a copy; ``""`` for a 2D buffer. Read from the
    buffer's ownership relation (a buffer without one is taken to lie on the line at 0). Raises
    :class:`ScheduleError` for a vector held on another line."""
    if len(t.box) != 1:
        return ""
    other = "y" if t.box[0].coord == "x" else "x"
    if not t.ownership:
        return f"__{other} = 0"
    cores = imap(t.ownership).domain()
    at_zero = iset(f"{{ core[x, y] : {other} = 0 }}")
    if cores.is_subset(at_zero):
        return f"__{other} = 0"
    if cores.intersect(at_zero).is_empty():
        raise ScheduleError(f"the blocks of {t.array} lie on a line of cores away from {other} = 0; only a "
                            f"vector on row or column 0, or held by every row or column, is re-laid out")
    return ""


def _box_cons(box: tuple[BoxDim, ...], clip: bool) -> str:
    """Constraints on ``a0, a1`` for the block the box names at core ``(__x, __y)`` (the whole padded
    tile when ``clip`` is false)."""
    out = []
    for i, d in enumerate(box):
        c = f"__{d.coord}"
        out.append(f"{d.tile}*{c} <= a{i} < {d.tile}*{c} + {d.tile}")
        if clip:
            out.append(f"a{i} < {d.extent}")
    return " and ".join(out)


def copy_kernel(name: str, dst: RegionTensor, src: RegionTensor, box, clip: bool, guard: str,
                 region: Region) -> Kernel:
    """``dst[a...] = src[a...]`` over ``box``'s block at each core where ``guard`` holds."""
    loops = tuple(f"a{i}" for i in range(len(box)))
    dom = f"[__x, __y, __t] -> {{ {name}[{', '.join(loops)}] : {_box_cons(box, clip)} and {guard} }}"
    index = tuple(Aff.var(a) for a in loops)
    return Kernel(name, "", loops, dom, loops, KAccess("w", dst.name, index),
                  (KAccess("r0", src.name, index),), Read("r0"),
                  (KernelClass(f"{name}_0", replace(region, name=f"{name}_0")),))


def _and(*conds: str) -> str:
    return " and ".join(c for c in conds if c) or "true"


def _lane_shifts(name: str, array: str, lane: str, direction: str, lo: tuple, hi: tuple,
                 n: int, colours: tuple[int, int], lines: int | None = None) -> list[Shift]:
    """One-hop shifts of ``lane`` towards ``direction`` from the cores ``[lo, hi)`` of every line (bounds
    as :class:`Lin` tuples along the moving axis) -- of the first ``lines`` lines only when given -- on two
    colours by parity of the sender."""
    across = (Lin(0),), (Lin(n if lines is None else lines),)
    step = 1 if direction in ("E", "S") else -1
    out = []
    for parity, colour in zip((0, 1), colours):
        rlo, rhi = tuple(v.shifted(step) for v in lo), tuple(v.shifted(step) for v in hi)
        if direction in ("E", "W"):
            senders = Rect(lo, hi, *across, 2, Lin(parity), 1, Lin(0))
            receivers = Rect(rlo, rhi, *across, 2, Lin(parity + step), 1, Lin(0))
        else:
            senders = Rect(*across, lo, hi, 1, Lin(0), 2, Lin(parity))
            receivers = Rect(*across, rlo, rhi, 1, Lin(0), 2, Lin(parity + step))
        out.append(Shift(f"{name} {direction}{parity}", array, lane, lane, direction, senders, receivers,
                         colour, shift_routes(direction, senders, receivers, colour)))
    return out


def transpose(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target
              ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The buffers, kernels and ops that fill ``dst`` (``src``'s array in the transposed layout) from
    ``src`` on the cores of ``region`` (whose corner is the origin; it must hold the ``n x n`` blocks).

    A vector (rank 1) is the same conveyor on the blocks it has: held by every row (column), core (x, y)'s
    block x goes to core (y, x) as a 2D array's would; held by row 0 only, its blocks ride west to core
    (0, 0) and south to column 0 (held by column 0: east to the diagonal, then north to row 0), and only the
    lanes that carry blocks are built and shifted. A vector held by one line goes to the one line of the
    other axis; one held by every line, to every line.

    Preserves every element of the array; ``src`` is left as it was. Names start with ``prefix``."""
    n = transpose_blocks(src, dst)
    if n > min(region.x1, region.y1) or region.x0 or region.y0:
        raise ScheduleError(f"changing the layout of {src.array}: its {n}x{n} blocks do not fit the cores "
                            f"{region}")
    if target.colours < 4:
        raise ScheduleError(f"changing the layout of {src.array} on the mesh needs 4 colours at once; "
                            f"{target.name}'s routers hold {target.colours}", cause="colours")
    sg, dg = held_guard(src), held_guard(dst)
    if bool(sg) != bool(dg):
        raise ScheduleError(f"changing the layout of {src.array}: a vector held by one line of cores goes to "
                            f"one line of the other axis, one held by every line to every line")
    if sg:
        return turn(src, dst, prefix, n)
    # The lanes that carry blocks: below the diagonal (x < y) E then N, above it W then S. A vector on row 0
    # has only blocks with x >= y (and moves along row 0 and column 0 only), one on column 0 only x <= y.
    used = {"E", "N"} if sg == "__x = 0" else {"W", "S"} if sg == "__y = 0" else {"E", "W", "N", "S"}
    lines = 1 if sg == "__y = 0" else None
    square = Region(f"{prefix}square", 0, n, 0, n)
    lanes = {tag: _lane(f"{prefix}lane_{tag}", src, square, src if tag in "EW" else dst)
             for tag in "EWNS" if tag in used}
    name = f"{prefix}transpose"
    kernels = [copy_kernel(f"{name}_diag", dst, src, dst.box, True, _and("__x = __y", sg, dg), square)]
    if "E" in used:
        kernels.append(copy_kernel(f"{name}_load_E", lanes["E"], src, src.box, True, _and("__x < __y", sg), square))
    if "W" in used:
        kernels.append(copy_kernel(f"{name}_load_W", lanes["W"], src, src.box, True, _and("__x > __y", sg), square))
    first = [Compute(k.name, square.rect) for k in kernels]

    def step_kernels(tag: str, base: int, turns: bool) -> list[Kernel]:
        s = f"__t + {base}" if base else "__t"
        out = []
        if turns and "N" in used:       # the block that reached the diagonal turns north (from E)
            out.append(copy_kernel(f"{name}_{tag}_turn_N", lanes["N"], lanes["E"], dst.box, False,
                                    f"__x = __y and __x >= {s} + 1", square))
        if turns and "S" in used:       # ... or south (from W)
            out.append(copy_kernel(f"{name}_{tag}_turn_S", lanes["S"], lanes["W"], dst.box, False,
                                    _and(f"__x = __y and __x + {s} + 1 <= {n - 1}", sg), square))
        if "N" in used:
            out.append(copy_kernel(f"{name}_{tag}_deliver_N", dst, lanes["N"], dst.box, True,
                                    _and(f"__y < __x and 2*__x - 2*__y - 1 = {s}", dg), square))
        if "S" in used:
            out.append(copy_kernel(f"{name}_{tag}_deliver_S", dst, lanes["S"], dst.box, True,
                                    _and(f"__x < __y and 2*__y - 2*__x - 1 = {s}", dg), square))
        return out

    ops: list = list(first)
    if n > 1:
        zero, top = (Lin(0),), (Lin(n),)
        rows, cols = [], []
        if "E" in used:
            rows += _lane_shifts(f"{src.array} east lane", src.array, lanes["E"].name, "E", (T,), (Lin(n - 1),), n,
                                 (0, 1))
        if "W" in used:
            rows += _lane_shifts(f"{src.array} west lane", src.array, lanes["W"].name, "W", (Lin(1),),
                                 (Lin(n, (("t", -1),)),), n, (2, 3), lines)
        if "N" in used:
            cols += _lane_shifts(f"{src.array} north lane", src.array, lanes["N"].name, "N", (Lin(1),), top, n,
                                 (0, 1))
        if "S" in used:
            cols += _lane_shifts(f"{src.array} south lane", src.array, lanes["S"].name, "S", zero,
                                 (Lin(n - 1),), n, (2, 3), lines)
        horizontal = Exchange(f"{name}_rows", tuple(rows))
        vertical = tuple(cols)
        a = step_kernels("a", 0, True)
        b = step_kernels("b", n - 1, False)
        kernels += a + b
        # Phase a (steps 0 .. n-2): lanes move along rows and columns; blocks turn at the diagonal.
        ops.append(Loop("t", n - 1, (horizontal, Exchange(f"{name}_cols_a", vertical, guard=T),
                                     *(Compute(k.name, square.rect) for k in a))))
        # Phase b (steps n-1 .. 2n-3): only the columns still carry blocks.
        ops.append(Loop("t", n - 1, (Exchange(f"{name}_cols_b", vertical),
                                     *(Compute(k.name, square.rect) for k in b))))
    return list(lanes.values()), kernels, ops


def turn(src: RegionTensor, dst: RegionTensor, prefix: str, n: int) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The buffers, kernels and ops that move a vector's ``n`` blocks from one line of cores to the other
    axis's line at 0 (row 0 to column 0, or column 0 to row 0): block ``i`` goes from core ``(i, 0)`` to core
    ``(0, i)`` (transposed for a vector on column 0).

    One multicast copies every block over its whole column (``bc``: core ``(x, y)`` holds block ``x``), so
    the diagonal core ``(i, i)`` holds block ``i``; it seeds ``pick`` there. Then a binary tree along every
    row brings each row's block to column 0: at level ``j`` (``S = 2**j``) the cores ``x = S (mod 2S)`` send
    their ``pick`` ``S`` hops west to ``x - S``, which takes it (``y >= x + S``: the block of row ``y`` lies in
    the sender's half) or keeps its own. After the levels, core ``(x, y)`` with ``x = 0 (mod 2S)`` holds
    ``pick`` = block ``y`` whenever ``x <= y < x + 2S``; column 0 copies it into ``dst``. ``n - 1`` hops of
    multicast and fewer than ``2n`` of tree in ``ceil(log2 n)`` stages, instead of the ``2n - 2`` one-hop steps
    of the conveyor. Every element is copied, never combined: bit for bit; ``src`` is left as it was. (Cores
    off the diagonal send whatever their ``pick`` holds; a core takes it only where it can be its row's block,
    and column 0 takes the valid one at the last level that reaches its row.)"""
    along = src.box[0].coord                        # the axis the vector lies along now
    across = OTHER[along]                           # the axis it is turned to
    square = Region(f"{prefix}square", 0, n, 0, n)

    # bc has the blocks' own shapes (a multicast delivers the sender's block as it is); the tree's lanes are
    # padded to whole tiles (every shift moves one tile).
    bc = _lane(f"{prefix}lane_bc", src, square, src, padded=False)
    pick, inc = _lane(f"{prefix}lane_pick", src, square, dst), _lane(f"{prefix}lane_in", src, square, dst)
    name = f"{prefix}turn"
    on_line = (Lin(0),), (Lin(1),)
    whole = (Lin(0),), (Lin(n),)
    # The multicast runs along the axis the blocks are turned to: every line across takes its block along.
    senders = Rect(*whole, *on_line) if along == "x" else Rect(*on_line, *whole)
    everyone = Rect(*whole, *whole)
    cast = Multicast(f"{src.array} over the square", src.array, src.name, bc.name, across, Lin(0), senders,
                     everyone, 0, multicast_routes(across, Lin(0), (0, n), (0, n), 0), n - 1,
                     relation=f"{{ [core_src[{across}' = 0] -> core_dst[{across}']] }} along {across}")
    kernels = [copy_kernel(f"{name}_seed", pick, bc, dst.box, True, "__x = __y", square)]
    ops: list = [Exchange(f"{name}_cast", (cast,)), Compute(kernels[0].name, square.rect)]
    direction = "W" if along == "x" else "N"
    span, level = 1, 0
    while span < n:
        lo, hi, step = (Lin(span),), (Lin(n),), 2 * span
        rlo, rhi = (Lin(0),), (Lin(n - span),)
        if along == "x":
            snd = Rect(lo, hi, *whole, step, Lin(span), 1, Lin(0))
            rcv = Rect(rlo, rhi, *whole, step, Lin(0), 1, Lin(0))
        else:
            snd = Rect(*whole, lo, hi, 1, Lin(0), step, Lin(span))
            rcv = Rect(*whole, rlo, rhi, 1, Lin(0), step, Lin(0))
        shift = Shift(f"{src.array} turn level {level}", src.array, pick.name, inc.name, direction, snd, rcv, 0,
                      shift_routes(direction, snd, rcv, 0, span), span,
                      f"{{ [core_src[{along}'] -> core_dst[{along}' - {span}]] }} along {along}", span)
        take = copy_kernel(f"{name}_take{level}", pick, inc, dst.box, False,
                           f"__{across} >= __{along} + {span}", square)
        kernels.append(take)
        ops += [Exchange(f"{name}_level{level}", (shift,)), Compute(take.name, rcv)]
        span, level = step, level + 1
    land = copy_kernel(f"{name}_land", dst, pick, dst.box, True, held_guard(dst), square)
    kernels.append(land)
    ops.append(Compute(land.name, square.rect))
    return [bc, pick, inc], kernels, ops


def via_blocks(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target) -> list[tuple]:
    """The three steps ``(from, to, (buffers, kernels, ops))``, run in order, that fill ``dst`` from ``src`` (two
    layouts of a 2D array) through two layouts of ``n x n`` blocks over both mesh axes: ``src`` scattered into the first
    (:func:`mica.lower.regather.regather`, line by line), its blocks transposed on the mesh into the second
    (:func:`transpose`), gathered into ``dst``. This changes which dimension a line of cores distributes
    (``[:N, x/b]`` to ``[x/b, :N]``: ADI's sweeps, one along columns, the next along rows) for arrays too large
    for a core to hold a line's share of (the direct change's buffers): every buffer here is a block or a
    line of blocks. The first block layout puts the dimension ``src`` distributes on the axis ``src`` has it
    on; ``n`` is the larger count of blocks ``src`` or ``dst`` has along a mesh axis. Preserves every element
    bit for bit; ``src`` is left as it was. Raises :class:`ScheduleError` (saying why) when the array is not
    2D, neither layout distributes a dimension, the blocks do not form a square grid of ``region``, or a
    stage does not fit."""
    what = (f"changing the layout of {src.array} from {[str(d) for d in src.box]} to {[str(d) for d in dst.box]} "
            f"through blocks over both mesh axes")
    if len(src.box) != 2 or len(dst.box) != 2:
        raise ScheduleError(f"{what}: only 2D arrays")
    spread = [(k, d) for t in (src, dst) for k, d in enumerate(t.box) if d.coord in ("x", "y")]
    if not spread:
        raise ScheduleError(f"{what}: neither layout distributes a dimension")
    n = max(ceil(d.extent / d.tile) for _, d in spread)
    extents = [d.extent for d in src.box]
    tiles = [ceil(e / n) for e in extents]
    if n < 2 or any(ceil(e / t) != n for e, t in zip(extents, tiles)) or n > min(region.x1, region.y1):
        raise ScheduleError(f"{what}: {extents[0]}x{extents[1]} elements make no square grid of {n}x{n} blocks on "
                            f"the cores {region}")
    k, d = spread[0]             # the first dimension src distributes (else dst's)
    axes = [d.coord, OTHER[d.coord]] if k == 0 else [OTHER[d.coord], d.coord]
    idx = "a0, a1"

    def blocks(name: str, coords) -> RegionTensor:
        box = tuple(BoxDim(c, t, e) for c, t, e in zip(coords, tiles, extents))
        cons = " and ".join(f"{t}*{c} <= a{i} < {t}*{c} + {t} and a{i} < {e}"
                            for i, (c, t, e) in enumerate(zip(coords, tiles, extents)))
        return RegionTensor(name, src.array, src.dtype, src.elem_bytes, region, box, "recv",
                            f"{{ core[x, y] -> {src.array}[{idx}] : {cons} }}")
    first = blocks(f"{prefix}blocks_a", axes)
    second = blocks(f"{prefix}blocks_b", [OTHER[a] for a in axes])
    return [(src, first, regather(src, first, f"{prefix}a_", region, target)),
            (first, second, transpose(first, second, f"{prefix}t_", region, target)),
            (second, dst, regather(second, dst, f"{prefix}b_", region, target))]


def flat(steps) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The steps of :func:`via_blocks` as one change: every buffer (the block layouts between them included),
    kernel and op, in order."""
    bufs, kernels, ops = [], [], []
    for _, dst, (lanes, kers, mops) in steps:
        bufs += ([dst] if dst is not steps[-1][1] else []) + list(lanes)
        kernels += kers
        ops += mops
    return bufs, kernels, ops


def transpose_program(src: RegionTensor, dst: RegionTensor, mesh: tuple[int, int], target: Target
                      ) -> MeshProgram:
    """A mesh program that only transposes ``src`` into ``dst`` (arena laid out from offset 0), for
    costing a layout change on its own with :func:`mica.tiling.cost.estimate`."""
    n = transpose_blocks(src, dst)
    region = Region("work", 0, n, 0, n)
    return layout_change_program(f"relayout_{src.array}", (src, dst), transpose(src, dst, "", region, target),
                                 mesh, region, target, 4)


def home_tensor(prog, home: Home, name: str | None = None) -> RegionTensor:
    """The home buffer ``home`` gives its array of ``prog`` (a plain block box, no ghost zones), with its
    ownership ``{ core[x, y] -> A[a...] }`` (pinned axes included)."""
    arr = prog.array(home.array)
    cons = [f"{t}{a} <= a{i} < {t}{a} + {t} and a{i} < {n}" if a else f"0 <= a{i} < {n}"
            for i, ((a, t), n) in enumerate(zip(home.dims, arr.shape))]
    cons += [f"{a} = {c}" for a, c in home.pin]
    idx = ", ".join(f"a{i}" for i in range(arr.rank))
    own = f"{{ core[x, y] -> {arr.name}[{idx}] : {' and '.join(cons) or 'true'} }}"
    return RegionTensor(name or home.array, home.array, arr.dtype, arr.elem_bytes, Region("work", 0, 1, 0, 1),
                        home_box(arr.shape, home), "home", own)


def relayout_cycles(prog, home_from: Home, home_to: Home, mesh: tuple[int, int], target: Target) -> float:
    """Modelled cycles of changing ``prog``'s array from ``home_from`` to ``home_to`` on the mesh
    (:func:`transpose`, or for other layouts :func:`mica.lower.regather.regather`, else through blocks over
    both axes, :func:`via_blocks`); infinite when none applies."""
    src = home_tensor(prog, home_from)
    dst = home_tensor(prog, home_to, f"{home_to.array}_t")
    try:
        return estimate(transpose_program(src, dst, mesh, target), target).total_cycles
    except ScheduleError:
        pass
    try:
        return estimate(regather_program(src, dst, mesh, target), target).total_cycles
    except ScheduleError:
        pass
    try:
        region = Region("work", 0, mesh[0], 0, mesh[1])
        return estimate(layout_change_program(f"relayout_{src.array}", (src, dst),
                                              flat(via_blocks(src, dst, "", region, target)), mesh, region, target,
                                              4),
                        target).total_cycles
    except ScheduleError:
        return float("inf")
