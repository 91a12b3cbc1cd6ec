"""The pinned tt-metal API version and the figures of it the back end relies on.

Every generated file states :data:`TT_METAL_VERSION` in its header comment. The API subset used (host:
``CreateDevice``/``EnqueueWriteBuffer``/``EnqueueProgram``/``Finish``/``CloseDevice``; kernels:
``dataflow_api.h``, ``compute_kernel_api``'s ``mm_init``/``matmul_tiles``/``add_tiles``/``fill_tile``) is the
one of that release; ``include/`` holds a declaration header of exactly that subset, written from the
documentation, for the ``g++ -fsyntax-only`` check (tt-metal itself is not installable here).
"""

from __future__ import annotations

from types import MappingProxyType

TT_METAL_VERSION = "tt-metal v0.55.0"

#: 32x32 tiles of four 16x16 faces (face order: top-left, top-right, bottom-left, bottom-right; each face
#: row-major): element (i, j) of a tile is at (i // 16 * 2 + j // 16) * 256 + (i % 16) * 16 + j % 16.
TILE = 32
FACE = 16

#: MICA dtype -> (tt::DataFormat, C++ element type, bytes per element). Tenstorrent has no f64 format.
DATA_FORMATS = MappingProxyType({
    "f32": ("tt::DataFormat::Float32", "float", 4),
})

MAX_CBS = 32                  #: circular-buffer ids 0..31
NUM_SEMAPHORES = 8            #: semaphores per core in the pinned release
MAX_RUNTIME_ARGS = 341        #: get_arg_val indices 0..340
#: L1 the firmware, kernel binaries and dispatch keep for themselves; a program's CBs must fit the rest.
#: (An estimate: tt-metal's allocator starts user L1 above ~100 KiB on Wormhole and Blackhole.)
L1_RESERVED_BYTES = 100 * 1024

#: Tensix grids the back end can place a mesh on (logical worker cores, width x height).
DEVICE_GRIDS = MappingProxyType({"wormhole": (8, 8), "blackhole": (11, 10)})


def tile_bytes(dtype: str) -> int:
    return TILE * TILE * DATA_FORMATS[dtype][2]
