// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/cb_api.h @ 0718c01416513351c569149d874c401e58015652
MICA_API ALWI void cb_wait_front(uint32_t cbid, uint32_t ntiles);

// tt_metal/hw/inc/api/compute/cb_api.h @ 0718c01416513351c569149d874c401e58015652
MICA_API ALWI void cb_pop_front(uint32_t cbid, uint32_t ntiles);

// tt_metal/hw/inc/api/compute/cb_api.h @ 0718c01416513351c569149d874c401e58015652
MICA_API ALWI void cb_reserve_back(uint32_t cbid, uint32_t ntiles);

// tt_metal/hw/inc/api/compute/cb_api.h @ 0718c01416513351c569149d874c401e58015652
MICA_API ALWI void cb_push_back(uint32_t cbid, uint32_t ntiles);

}  // namespace ckernel
