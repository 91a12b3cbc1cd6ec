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
from ..comm.routes import shift_routes
from ..errors import ScheduleError
from ..targets import Target
from ..tiling.cost import estimate
from ..tiling.schedule import Home
from ..tiling.homes import home_box
from ..meshir.ir import (BoxDim, Compute, Exchange, KAccess, Kernel, KernelClass, Lin, Loop, MeshProgram, Rect,
                 Region, RegionTensor, Shift)

T = Lin(0, (("t", 1),))


def transpose_blocks(src: RegionTensor, dst: RegionTensor) -> int:
    """The side ``n`` of the block grid when ``dst``'s box is ``src``'s with the mesh axes swapped;
    raises :class:`ScheduleError` saying why the two layouts are not a block transposition."""
    what = (f"changing the layout of {src.array} from {[str(d) for d in src.box]} to "
            f"{[str(d) for d in dst.box]} on the mesh")
    if len(src.box) != 2 or len(dst.box) != 2:
        raise ScheduleError(f"{what}: only 2D arrays are re-laid out on the mesh")
    for s, d in zip(src.box, dst.box):
        if s.window or d.window or s.padded or d.padded:
            raise ScheduleError(f"{what}: homes with ghost zones or padding are not re-laid out")
    if {src.box[0].coord, src.box[1].coord} != {"x", "y"} or \
            (dst.box[0].coord, dst.box[1].coord) != (src.box[1].coord, src.box[0].coord):
        raise ScheduleError(f"{what}: only a transposition of blocks (both dimensions distributed, the mesh "
                            f"axes swapped) is supported")
    if any(s.tile != d.tile for s, d in zip(src.box, dst.box)):
        raise ScheduleError(f"{what}: the tiles differ; blocks must keep their shape")
    n0, n1 = (ceil(d.extent / d.tile) for d in src.box)
    if n0 != n1:
        raise ScheduleError(f"{what}: its blocks form a {n0}x{n1} grid; a transposition needs a square one")
    return n0


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


def _copy_kernel(name: str, dst: RegionTensor, src: RegionTensor, box, clip: bool, guard: str,
                 region: Region) -> Kernel:
    """``dst[a0, a1] = src[a0, a1]`` over ``box``'s block at each core where ``guard`` holds."""
    loops = ("a0", "a1")
    dom = f"[__x, __y, __t] -> {{ {name}[a0, a1] : {_box_cons(box, clip)} and {guard} }}"
    index = (Aff.var("a0"), Aff.var("a1"))
    return Kernel(name, "", loops, dom, loops, KAccess("w", dst.name, index),
                  (KAccess("r0", src.name, index),), Read("r0"),
                  (KernelClass(f"{name}_0", replace(region, name=f"{name}_0")),))


def _lane_shifts(name: str, array: str, lane: str, direction: str, lo: tuple, hi: tuple,
                 n: int, colours: tuple[int, int]) -> list[Shift]:
    """One-hop shifts of ``lane`` towards ``direction`` from the cores ``[lo, hi)`` of every line (bounds
    as :class:`Lin` tuples along the moving axis), on two colours by parity of the sender."""
    step = 1 if direction in ("E", "S") else -1
    out = []
    for parity, colour in zip((0, 1), colours):
        rlo, rhi = tuple(v.shifted(step) for v in lo), tuple(v.shifted(step) for v in hi)
        if direction in ("E", "W"):
            senders = Rect(lo, hi, (Lin(0),), (Lin(n),), 2, Lin(parity), 1, Lin(0))
            receivers = Rect(rlo, rhi, (Lin(0),), (Lin(n),), 2, Lin(parity + step), 1, Lin(0))
        else:
            senders = Rect((Lin(0),), (Lin(n),), lo, hi, 1, Lin(0), 2, Lin(parity))
            receivers = Rect((Lin(0),), (Lin(n),), rlo, rhi, 1, Lin(0), 2, Lin(parity + step))
        out.append(Shift(f"{name} {direction}{parity}", array, lane, lane, direction, senders, receivers,
                         colour, shift_routes(direction, senders, receivers, colour)))
    return out


def transpose(src: RegionTensor, dst: RegionTensor, prefix: str, region: Region, target: Target
              ) -> tuple[list[RegionTensor], list[Kernel], list]:
    """The buffers, kernels and ops that fill ``dst`` (``src``'s array in the transposed layout) from
    ``src`` on the cores of ``region`` (whose corner is the origin; it must hold the ``n x n`` blocks).

    Preserves every element of the array; ``src`` is left as it was. Names start with ``prefix``."""
    n = transpose_blocks(src, dst)
    if n > min(region.x1, region.y1) or region.x0 or region.y0:
        raise ScheduleError(f"changing the layout of {src.array}: its {n}x{n} blocks do not fit the cores "
                            f"{region}")
    if target.colours < 4:
        raise ScheduleError(f"changing the layout of {src.array} on the mesh needs 4 colours at once; "
                            f"{target.name}'s routers hold {target.colours}", cause="colours")
    square = Region(f"{prefix}square", 0, n, 0, n)

    def lane(tag: str, like: RegionTensor) -> RegionTensor:
        box = tuple(BoxDim(d.coord, d.tile, d.extent, padded=True) for d in like.box)
        return RegionTensor(f"{prefix}lane_{tag}", src.array, src.dtype, src.elem_bytes, square, box, "recv",
                            f"{{ core[x, y] -> {src.array}[a0, a1] : x = y }}")
    lanes = {tag: lane(tag, src if tag in "EW" else dst) for tag in "EWNS"}
    name = f"{prefix}transpose"
    kernels = [
        _copy_kernel(f"{name}_diag", dst, src, dst.box, True, "__x = __y", square),
        _copy_kernel(f"{name}_load_E", lanes["E"], src, src.box, True, "__x < __y", square),
        _copy_kernel(f"{name}_load_W", lanes["W"], src, src.box, True, "__x > __y", square),
    ]
    first = [Compute(k.name, square.rect) for k in kernels]

    def step_kernels(tag: str, base: int, turns: bool) -> list[Kernel]:
        s = f"__t + {base}" if base else "__t"
        out = []
        if turns:       # the block that reached the diagonal turns north (from E) or south (from W)
            out.append(_copy_kernel(f"{name}_{tag}_turn_N", lanes["N"], lanes["E"], dst.box, False,
                                    f"__x = __y and __x >= {s} + 1", square))
            out.append(_copy_kernel(f"{name}_{tag}_turn_S", lanes["S"], lanes["W"], dst.box, False,
                                    f"__x = __y and __x + {s} + 1 <= {n - 1}", square))
        out.append(_copy_kernel(f"{name}_{tag}_deliver_N", dst, lanes["N"], dst.box, True,
                                f"__y < __x and 2*__x - 2*__y - 1 = {s}", square))
        out.append(_copy_kernel(f"{name}_{tag}_deliver_S", dst, lanes["S"], dst.box, True,
                                f"__x < __y and 2*__y - 2*__x - 1 = {s}", square))
        return out

    ops: list = list(first)
    if n > 1:
        zero, top = (Lin(0),), (Lin(n),)
        horizontal = Exchange(f"{name}_rows", tuple(
            _lane_shifts(f"{src.array} east lane", src.array, lanes["E"].name, "E", (T,), (Lin(n - 1),), n, (0, 1))
            + _lane_shifts(f"{src.array} west lane", src.array, lanes["W"].name, "W", (Lin(1),),
                           (Lin(n, (("t", -1),)),), n, (2, 3))))
        vertical = tuple(
            _lane_shifts(f"{src.array} north lane", src.array, lanes["N"].name, "N", (Lin(1),), top, n, (0, 1))
            + _lane_shifts(f"{src.array} south lane", src.array, lanes["S"].name, "S", zero,
                           (Lin(n - 1),), n, (2, 3)))
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


def transpose_program(src: RegionTensor, dst: RegionTensor, mesh: tuple[int, int], target: Target
                      ) -> MeshProgram:
    """A mesh program that only transposes ``src`` into ``dst`` (arena laid out from offset 0), for
    costing a layout change on its own with :func:`mica.tiling.cost.estimate`."""
    n = transpose_blocks(src, dst)
    region = Region("work", 0, n, 0, n)
    lanes, kernels, ops = transpose(src, dst, "", region, target)
    laid, offset = [], 0
    for t in (src, dst, *lanes):
        laid.append(replace(t, offset=offset, region=region))
        offset += t.alloc_bytes
    return MeshProgram(f"relayout_{src.array}", target.name, mesh, region, tuple(laid), tuple(kernels),
                       tuple(ops), offset, (), 4)


def home_tensor(prog, home: Home, name: str | None = None) -> RegionTensor:
    """The home buffer ``home`` gives its array of ``prog`` (a plain block box, no ghost zones)."""
    arr = prog.array(home.array)
    return RegionTensor(name or home.array, home.array, arr.dtype, arr.elem_bytes, Region("work", 0, 1, 0, 1),
                        home_box(arr.shape, home), "home", "")


def relayout_cycles(prog, home_from: Home, home_to: Home, mesh: tuple[int, int], target: Target) -> float:
    """Modelled cycles of changing ``prog``'s array from ``home_from`` to ``home_to`` on the mesh
    (:func:`transpose`); infinite when the two layouts are not a block transposition."""
    src = home_tensor(prog, home_from)
    dst = home_tensor(prog, home_to, f"{home_to.array}_t")
    try:
        return estimate(transpose_program(src, dst, mesh, target), target).total_cycles
    except ScheduleError:
        return float("inf")
