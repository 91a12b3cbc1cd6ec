// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"
#include "api/compute/common.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void mul_tiles_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE());

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void add_tiles_init(
    uint32_t icb0, uint32_t icb1, bool acc_to_dest = false, uint32_t call_line = __builtin_LINE());

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void sub_tiles_init(
    uint32_t icb0, uint32_t icb1, bool acc_to_dest = false, uint32_t call_line = __builtin_LINE());

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void mul_tiles(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst);

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void add_tiles(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst);

// tt_metal/hw/inc/api/compute/eltwise_binary.h @ 00b0fa3f57bf8c13af0f124a70a02b0bdbde8b90
MICA_API ALWI void sub_tiles(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst);

}  // namespace ckernel
