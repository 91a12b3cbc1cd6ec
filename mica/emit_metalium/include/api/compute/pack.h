// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/pack.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
template <bool out_of_order_output = false>
MICA_API ALWI void pack_tile(uint32_t ifrom_dst, uint32_t icb, std::uint32_t output_tile_index = 0);

}  // namespace ckernel
