"""The tt-metal API the back end targets and the figures of it the back end relies on.

Every generated file states :data:`TT_METAL_VERSION` in its header comment. The API is that of tt-metal
``main`` in July 2026, after PR #50570 removed the ``mm_init`` family: host programs open a unit
``MeshDevice``, stage data through ``MeshBuffer`` objects (``EnqueueWriteMeshBuffer`` / ``EnqueueReadMeshBuffer``)
and run the ``Program`` as a ``MeshWorkload`` (``EnqueueMeshWorkload``, ``Finish``); kernels include
``api/dataflow/dataflow_api.h`` and ``api/compute/*.h`` and compute kernels start with
``compute_kernel_hw_startup`` and use ``matmul_init`` / ``matmul_tiles`` (five arguments). ``include/`` holds
the declarations of exactly the subset emitted, each read from the tt-metal header and commit its comment
names, for the ``g++ -fsyntax-only`` check and the API-name test (tt-metal itself is not installable here).
"""

from __future__ import annotations

from types import MappingProxyType

TT_METAL_VERSION = "tt-metal main of July 2026 (matmul.h @ 01c8afed, after PR #50570)"

#: 32x32 tiles of four 16x16 faces (face order: top-left, top-right, bottom-left, bottom-right; each face
#: row-major): element (i, j) of a tile is at (i // 16 * 2 + j // 16) * 256 + (i % 16) * 16 + j % 16.
TILE = 32
FACE = 16

#: MICA dtype -> (tt::DataFormat, C++ element type, bytes per element). Tenstorrent has no f64 format.
DATA_FORMATS = MappingProxyType({
    "f32": ("tt::DataFormat::Float32", "float", 4),
})

#: The 16-bit tile formats a bf16 / f16 tensor would take (tt-metal's tt::DataFormat: Float16_b is bfloat16,
#: the matrix FPU's native input format; Float16 is IEEE half). Not generated yet: :func:`.plan.build_plan`
#: refuses such tensors naming what is missing.
HALF_FORMATS = MappingProxyType({"bf16": "tt::DataFormat::Float16_b", "f16": "tt::DataFormat::Float16"})

MAX_CBS = 32                  #: circular-buffer ids 0..31
NUM_SEMAPHORES = 8            #: semaphores per core (host_api.hpp: "up to eight 4B semaphores")
MAX_RUNTIME_ARGS = 341        #: get_arg_val indices 0..340 (kernel_types.hpp: max_runtime_args)
#: L1 the firmware, kernel binaries and dispatch keep for themselves; a program's CBs must fit the rest.
#: (An estimate: tt-metal's allocator starts user L1 above ~100 KiB on Wormhole and Blackhole.)
L1_RESERVED_BYTES = 100 * 1024

#: Tensix grids the back end can place a mesh on (logical worker cores, width x height).
DEVICE_GRIDS = MappingProxyType({"wormhole": (8, 8), "blackhole": (11, 10)})


def tile_bytes(dtype: str) -> int:
    return TILE * TILE * DATA_FORMATS[dtype][2]
