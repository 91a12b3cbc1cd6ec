// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/base_types.hpp @ 0d617affc0f8d407fa089870c2508e8e98b04f10
enum class MICA_API MathFidelity : uint8_t {
    LoFi MICA_API = 0,
    HiFi2 MICA_API = 2,
    HiFi3 MICA_API = 3,
    HiFi4 MICA_API = 4,
    Invalid MICA_API = 0xff,
};

// tt_metal/api/tt-metalium/base_types.hpp @ 0d617affc0f8d407fa089870c2508e8e98b04f10
enum class MICA_API UnpackToDestMode : uint8_t { UnpackToDestFp32 MICA_API, Default MICA_API };

}  // namespace tt::tt_metal
