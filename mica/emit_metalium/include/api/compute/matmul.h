// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
// This matmul.h has no mm_init / mm_init_short (removed by PR #50570): compute_kernel_hw_startup once,
// then matmul_init before matmul_tiles.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"
#include "api/compute/common.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/matmul.h @ 01c8afed5a09a5fdd7c3ddbe0167f81b9607feb3
// (call_line is filled in by the default argument __builtin_LINE())
MICA_API ALWI void matmul_init(
    uint32_t in0_cb_id, uint32_t in1_cb_id, const uint32_t transpose = 0, uint32_t call_line = __builtin_LINE());

// tt_metal/hw/inc/api/compute/matmul.h @ 01c8afed5a09a5fdd7c3ddbe0167f81b9607feb3
MICA_API ALWI void matmul_tiles(
    uint32_t in0_cb_id, uint32_t in1_cb_id, uint32_t in0_tile_index, uint32_t in1_tile_index, uint32_t idst);

}  // namespace ckernel
