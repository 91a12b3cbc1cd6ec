// Declarations read from tenstorrent/tt-metal (see ../../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/eltwise_unary/fill.h @ 129d23481571ebac2361d2f4cda4d08fd2695741
MICA_API ALWI void fill_tile(uint32_t idst, float param0);

// tt_metal/hw/inc/api/compute/eltwise_unary/fill.h @ 129d23481571ebac2361d2f4cda4d08fd2695741
MICA_API ALWI void fill_tile_init();

}  // namespace ckernel
