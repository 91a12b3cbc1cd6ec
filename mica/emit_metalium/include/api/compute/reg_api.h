// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/reg_api.h @ 0112bb1e04b1728d8c295b5fddf0913f0540fb0d
MICA_API ALWI void tile_regs_acquire();

// tt_metal/hw/inc/api/compute/reg_api.h @ 0112bb1e04b1728d8c295b5fddf0913f0540fb0d
MICA_API ALWI void tile_regs_wait();

// tt_metal/hw/inc/api/compute/reg_api.h @ 0112bb1e04b1728d8c295b5fddf0913f0540fb0d
MICA_API ALWI void tile_regs_commit();

// tt_metal/hw/inc/api/compute/reg_api.h @ 0112bb1e04b1728d8c295b5fddf0913f0540fb0d
MICA_API ALWI void tile_regs_release();

}  // namespace ckernel
