"""Host-side staging of buffers whose per-core contents are not a plain block of the array.

A ring buffer of a skewed step holds, on core (x, y), block ``kb(x, y, 0)`` of the stepped dimension,
padded to full tiles; a home with ghost zones holds a window around the core's block (its neighbours'
edges too). :func:`load_staged` has the emulator copy every core's buffer straight from the array
(``mica_host_gather``: the global index each buffer starts at, per core; zeros outside the array);
:func:`staged_load` builds the same contents with numpy, as the array of every core's buffer
(``[height, width, alloc...]``) and the op-code box that copies entry ``[y, x]`` to core (x, y);
:func:`staged_store` reads every core's buffer back the same way and keeps, of each, the block the core
owns (``[tile*c, tile*c + tile)`` along each distributed dimension).
"""

from __future__ import annotations

import numpy as np

from ..errors import SimError
from ..meshir.ir import Region, RegionTensor, Skew
from . import opcode as oc


def needs_staging(t: RegionTensor) -> bool:
    return any(d.padded or d.window or d.coord == "kb" for d in t.box)


def _grid(region: Region):
    return np.meshgrid(np.arange(region.y0, region.y1), np.arange(region.x0, region.x1), indexing="ij")


def _coord(d, xs, ys, skew: Skew | None):
    """The block index ``d`` gives each core (its coordinate minus the dimension's origin)."""
    if d.coord == "x":
        return xs - d.origin
    if d.coord == "y":
        return ys - d.origin
    if d.coord == "kb":
        return skew.block(xs, ys, 0)
    return np.zeros_like(xs)


def _counts(t: RegionTensor) -> list[int]:
    out = []
    for d in t.box:
        if d.coord in ("x", "y", "kb") and not (d.padded or d.window):
            raise SimError(f"cannot stage {t.name}: dimension {d} is neither padded nor a window")
        out.append(d.alloc if d.coord else d.tile)          # a whole dimension: tile <= extent
    return out


def _staged_box(t: RegionTensor, region: Region, counts: list[int]) -> oc.Box:
    """Core (x, y)'s whole buffer as entry ``[y, x]`` of the host array (the buffer is contiguous, so its
    elements are copied as one flat run whatever its rank)."""
    return oc.Box(t.offset, t.elem_bytes,
                  (oc.BoxDim(oc.AXIS_Y, 1, region.y1), oc.BoxDim(oc.AXIS_X, 1, region.x1),
                   oc.BoxDim.whole(int(np.prod(counts, dtype=np.int64)))))


def _indices(t: RegionTensor, xs, ys, skew, counts, starts_of):
    """Per dimension, the global index of every element of every core's buffer, broadcast to
    ``[ny, nx, n_0, n_1, ...]``, and the mask of those inside the array."""
    rank = len(t.box)
    index, valid = [], np.ones(xs.shape + tuple(counts), dtype=bool)
    for k, (d, n) in enumerate(zip(t.box, counts)):
        start = starts_of(d, _coord(d, xs, ys, skew))
        shape = xs.shape + tuple(n if j == k else 1 for j in range(rank))
        g = (start[..., None] + np.arange(n)).reshape(shape)
        valid = valid & (g >= 0) & (g < d.extent)
        index.append(g)
    return index, valid


def _block_gather(array: np.ndarray, t: RegionTensor, xs, ys, skew, counts) -> np.ndarray:
    """Every core's block (padded tiles, no overlap): the array cut into whole tiles once, then one tile
    copied per core — much faster than an element-wise gather on large meshes."""
    nblocks = [-(-d.extent // n) if d.coord else 1 for d, n in zip(t.box, counts)]
    shape = [nb * n for nb, n in zip(nblocks, counts)]
    if list(array.shape) == shape:
        padded = np.ascontiguousarray(array)
    else:
        padded = np.zeros(shape, dtype=array.dtype)
        padded[tuple(slice(0, n) for n in array.shape)] = array
    rank = array.ndim
    inter = [v for nb, n in zip(nblocks, counts) for v in (nb, n)]
    blocks = padded.reshape(inter).transpose([2 * d for d in range(rank)] + [2 * d + 1 for d in range(rank)])
    index, valid = [], np.ones(xs.shape, dtype=bool)
    for d, nb in zip(t.box, nblocks):
        b = _coord(d, xs, ys, skew)
        valid &= b < nb
        index.append(np.where(b < nb, b, 0))
    staged = np.ascontiguousarray(blocks[tuple(index)])
    if not valid.all():
        staged[~valid] = 0
    return staged


def staged_origins(t: RegionTensor, region: Region, skew: Skew | None) -> np.ndarray:
    """``[cores, rank]``: for every core of ``region`` (row-major), the global index its buffer starts at
    along each dimension -- ``tile*c + offset`` for a window, ``alloc*c`` for a padded block (c the core's
    coordinate, ``kb`` for a skewed step), 0 without a coordinate."""
    counts = _counts(t)
    ys, xs = _grid(region)
    windows = any(d.window for d in t.box)
    cols = []
    for d, n in zip(t.box, counts):
        c = _coord(d, xs, ys, skew)
        cols.append((d.tile * c + d.offset if windows else n * c) if d.coord else np.zeros_like(c))
    return np.stack([np.asarray(v, dtype=np.int64).ravel() for v in cols], axis=1)


def load_staged(mesh, array: np.ndarray, t: RegionTensor, region: Region, skew: Skew | None) -> None:
    """Loads every core of ``region`` with its buffer of ``array`` (as :func:`staged_load` builds it),
    copied by the emulator straight from the array: no host-side copy of every buffer."""
    mesh.host_gather(np.ascontiguousarray(array), _counts(t), t.offset,
                     oc.Rect(region.x0, region.x1, region.y0, region.y1), staged_origins(t, region, skew))


def staged_load(array: np.ndarray, t: RegionTensor, region: Region, skew: Skew | None):
    """(entries, box, rect) loading every core of ``region`` with its buffer of ``array``: elements of
    the buffer outside the array are zero."""
    counts = _counts(t)
    box = _staged_box(t, region, counts)
    ys, xs = _grid(region)
    if any(d.window for d in t.box):
        # Windows overlap their neighbours': gather element by element.
        index, valid = _indices(t, xs, ys, skew, counts,
                                lambda d, c: d.tile * c + d.offset if d.coord else np.zeros_like(c))
        clipped = tuple(np.clip(g, 0, d.extent - 1) for g, d in zip(index, t.box))
        staged = np.where(valid, array[clipped], np.zeros((), dtype=array.dtype)).astype(array.dtype)
    else:
        staged = _block_gather(array, t, xs, ys, skew, counts)
    if region.x0 == 0 and region.y0 == 0:            # the region starts at core (0, 0): no shifted copy
        return staged.reshape(region.y1, region.x1, -1), box, oc.Rect(region.x0, region.x1, region.y0, region.y1)
    full = np.zeros((region.y1, region.x1, *counts), dtype=array.dtype)
    full[region.y0:, region.x0:] = staged
    return full.reshape(region.y1, region.x1, -1), box, oc.Rect(region.x0, region.x1, region.y0, region.y1)


def staged_store(mesh, t: RegionTensor, region: Region, shape, dtype) -> np.ndarray:
    """The array gathered from the block each core of ``region`` owns in buffer ``t`` (windows and
    padded dimensions: the core's own block inside them)."""
    counts = _counts(t)
    box = _staged_box(t, region, counts)
    flat = mesh.host_store(box, oc.Rect(region.x0, region.x1, region.y0, region.y1),
                           (region.y1, region.x1, int(np.prod(counts, dtype=np.int64))), dtype)
    full = flat.reshape(region.y1, region.x1, *counts)[region.y0:, region.x0:]
    ys, xs = _grid(region)
    # The owned block inside each buffer: local [-offset, -offset + tile) along windows.
    own = tuple(slice(-d.offset, -d.offset + d.tile) if d.coord else slice(None) for d in t.box)
    block = full[(slice(None), slice(None), *own)]
    owned = [d.tile if d.coord else n for d, n in zip(t.box, counts)]
    index, valid = _indices(t, xs, ys, None, owned,
                            lambda d, c: d.tile * c if d.coord else np.zeros_like(c))
    out = np.zeros(tuple(shape), dtype=dtype)
    out[tuple(g[valid] for g in np.broadcast_arrays(*index))] = block[valid]
    return out
