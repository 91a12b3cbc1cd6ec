// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/buffer_types.hpp @ 04b3405067aa1e0a4f142aad0f7d3937337f0e12
enum class MICA_API BufferType {
    DRAM MICA_API,
    L1 MICA_API,
    SYSTEM_MEMORY MICA_API,
    L1_SMALL MICA_API,
    TRACE MICA_API,
};

}  // namespace tt::tt_metal
