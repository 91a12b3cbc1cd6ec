// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"
#include "api/compute/src_order.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/compute_kernel_hw_startup.h @ 11091eb4bf174289daf1153a87980fddb732f3ef (parameters)
// tt_metal/hw/inc/api/compute/matmul.h @ 01c8afed5a09a5fdd7c3ddbe0167f81b9607feb3 (template argument: "performed via compute_kernel_hw_startup<SrcOrder::Reverse>(in0, in1, out)")
// (once, at the start of kernel_main, before any op init; the stored compute_kernel_hw_startup.h that has
// the template could be read here only without its commit, so the two sources above are cited instead)
template <SrcOrder src_order = SrcOrder::Regular>
MICA_API ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb);

}  // namespace ckernel
