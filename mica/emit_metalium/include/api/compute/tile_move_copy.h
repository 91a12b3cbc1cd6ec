// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/tile_move_copy.h @ 020fa046d62f17f520bf718422671efb8b72ac46
MICA_API ALWI void copy_tile_to_dst_init_short(
    uint32_t cbid,
    uint32_t transpose = 0,
    uint32_t transpose_within_16x16_face = false,
    uint32_t call_line = __builtin_LINE());

// tt_metal/hw/inc/api/compute/tile_move_copy.h @ 020fa046d62f17f520bf718422671efb8b72ac46
MICA_API ALWI void copy_tile(uint32_t in_cb_id, uint32_t in_tile_index, uint32_t dst_tile_index);

}  // namespace ckernel
