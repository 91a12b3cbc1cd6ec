// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/src_order.h @ e6531ce22d7d2c87816426248cf53ea63e513948
enum class MICA_API SrcOrder : uint8_t {
    Regular MICA_API = 0,  // icb0 -> SrcA, icb1 -> SrcB
    Reverse MICA_API = 1,  // icb0 -> SrcB, icb1 -> SrcA (matmul)
};

}  // namespace ckernel
