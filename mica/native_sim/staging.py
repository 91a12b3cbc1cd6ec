"""Host-side staging of buffers whose per-core contents are not a plain block of the array.

A ring buffer of a skewed step holds, on core (x, y), block ``kb(x, y, 0)`` of the stepped dimension,
padded to full tiles. :func:`staged_load` builds, with numpy, the array of every core's tile
(``[height, width, tile...]``) and the op-code box that copies tile ``[y, x]`` to core (x, y).
"""

from __future__ import annotations

from math import ceil

import numpy as np

from ..errors import SimError
from ..meshir.ir import Region, RegionTensor, Skew
from . import opcode as oc


def needs_staging(t: RegionTensor) -> bool:
    return any(d.padded or d.coord == "kb" for d in t.box)


def staged_load(array: np.ndarray, t: RegionTensor, region: Region, skew: Skew | None):
    """(tiles, box, rect) loading every core of ``region`` with its padded tile of ``array``."""
    if array.ndim + 2 > oc.MAX_RANK:
        raise SimError(f"cannot stage {t.name}: rank {array.ndim} arrays need rank {array.ndim + 2} boxes")
    tiles = [d.tile if (d.padded or d.coord) else min(d.tile, d.extent) for d in t.box]
    nblocks = [ceil(d.extent / tile) if d.coord else 1 for d, tile in zip(t.box, tiles)]
    shape = [nb * tile for nb, tile in zip(nblocks, tiles)]
    if list(array.shape) == shape:                   # no padding: gather straight from the input
        padded = np.ascontiguousarray(array)
    else:
        padded = np.zeros(shape, dtype=array.dtype)
        padded[tuple(slice(0, n) for n in array.shape)] = array
    inter = [v for nb, tile in zip(nblocks, tiles) for v in (nb, tile)]
    rank = array.ndim
    blocks = padded.reshape(inter).transpose([2 * d for d in range(rank)] + [2 * d + 1 for d in range(rank)])
    ys, xs = np.meshgrid(np.arange(region.y0, region.y1), np.arange(region.x0, region.x1), indexing="ij")
    index, valid = [], np.ones(ys.shape, dtype=bool)
    for d, nb in zip(t.box, nblocks):
        if d.coord == "x":
            b = xs
        elif d.coord == "y":
            b = ys
        elif d.coord == "kb":
            b = skew.block(xs, ys, 0)
        else:
            b = np.zeros_like(xs)
        valid &= b < nb
        index.append(np.where(b < nb, b, 0))
    staged = np.ascontiguousarray(blocks[tuple(index)])
    if not valid.all():
        staged[~valid] = 0
    box = oc.Box(t.offset, t.elem_bytes,
                 (oc.BoxDim(oc.AXIS_Y, 1, region.y1), oc.BoxDim(oc.AXIS_X, 1, region.x1),
                  *(oc.BoxDim.whole(tile) for tile in tiles)))
    if region.x0 == 0 and region.y0 == 0:            # the region starts at core (0, 0): no shifted copy
        return staged, box, oc.Rect(region.x0, region.x1, region.y0, region.y1)
    full = np.zeros((region.y1, region.x1, *tiles), dtype=array.dtype)
    full[region.y0:, region.x0:] = staged
    rect = oc.Rect(region.x0, region.x1, region.y0, region.y1)
    return full, box, rect
