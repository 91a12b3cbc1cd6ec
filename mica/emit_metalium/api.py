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

#: MICA dtype -> (tt::DataFormat, C++ element type in L1, bytes per element). Tenstorrent has no f64 format.
#: bf16 tiles are Float16_b (bfloat16, the matrix FPU's native input format), held in L1 and in the kernels'
#: scalar loops as ``uint16_t`` bit patterns (the upper half of an f32; :mod:`mica.codeprint.half`).
#: i32 tiles are Int32 (4096 B): integer arrays are computed by the generic path's scalar loops only (C++
#: integer arithmetic on the RISC-V), never by the FPU or SFPU tile routines.
DATA_FORMATS = MappingProxyType({
    "f32": ("tt::DataFormat::Float32", "float", 4),
    "bf16": ("tt::DataFormat::Float16_b", "uint16_t", 2),
    # f16 tiles are Float16 (IEEE half), held as uint16_t bits in the scalar loops (mica_f16_to_f32 / back)
    "f16": ("tt::DataFormat::Float16", "uint16_t", 2),
    "i32": ("tt::DataFormat::Int32", "int32_t", 4),
    # the narrower integers, held widened in Int32 tiles (a store wraps the value as C's conversion does, and
    # host.cpp stages the arrays' values as int32)
    "i16": ("tt::DataFormat::Int32", "int32_t", 4),
    "i8": ("tt::DataFormat::Int32", "int32_t", 4),
    "u8": ("tt::DataFormat::Int32", "int32_t", 4),
})

#: The 16-bit tile formats (tt-metal's tt::DataFormat: Float16_b is bfloat16, Float16 IEEE half); both are
#: generated (:data:`DATA_FORMATS`).
HALF_FORMATS = MappingProxyType({"bf16": "tt::DataFormat::Float16_b", "f16": "tt::DataFormat::Float16"})

#: The host program's comparison of device and reference, relative to the largest reference value of an output.
#: f32: the matrix FPU takes inputs of at most 19 bits (hardware notes: TT-GEMM, TT-ISA MatrixUnit), so 2e-2.
#: bf16: operands are exact in the FPU and sums accumulate in an fp32 Dst (``fp32_dest_acc_en``), but every
#: pack to a Float16_b tile rounds to 8 significant bits (each step's partial tile), while the sequential
#: reference rounds after every update (:mod:`mica.codeprint.half`); the two round at different points, so their
#: difference grows with the number of rounded updates: 4e-2 of the largest value (the functional model, which
#: rounds as the packer does, stays well inside it on the tests' programs).
#: f16: as f32 (the FPU's inputs are narrower than f16's 11 bits only past them), and every pack rounds to
#: f16's 11 bits where the reference rounds after every update.
CHECK_TOLERANCE = MappingProxyType({"f32": 2e-2, "bf16": 4e-2, "f16": 2e-2})

MAX_CBS = 32                  #: circular-buffer ids 0..31
NUM_SEMAPHORES = 8            #: semaphores per core (host_api.hpp: "up to eight 4B semaphores")
MAX_RUNTIME_ARGS = 341        #: get_arg_val indices 0..340 (kernel_types.hpp: max_runtime_args)
#: L1 the firmware, kernel binaries and dispatch keep for themselves; a program's CBs must fit the rest.
#: (An estimate: tt-metal's allocator starts user L1 above ~100 KiB on Wormhole and Blackhole.)
L1_RESERVED_BYTES = 100 * 1024

#: Tensix grids the back end can place a mesh on (logical worker cores, width x height).
DEVICE_GRIDS = MappingProxyType({"wormhole": (8, 8), "blackhole": (11, 10)})


def tile_bytes(dtype: str) -> int:
    """Bytes of one 32x32 tile of ``dtype`` (4096 for Float32 and Int32, 2048 for Float16_b)."""
    return TILE * TILE * DATA_FORMATS[dtype][2]


def float_c(value: float) -> str:
    """``value`` as a C++ float expression (a fill value, an SFPU routine's parameter): a literal, or GCC's
    ``__builtin_inff()`` / ``__builtin_nanf("")`` for the values that have no literal (``-INFINITY`` opens a
    running max)."""
    if value != value:
        return '__builtin_nanf("")'
    if value in (float("inf"), float("-inf")):
        return "__builtin_inff()" if value > 0 else "-__builtin_inff()"
    return f"{float(value)!r}f"
