// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace tt {

// tt_metal/api/tt-metalium/tt_backend_api_types.hpp @ 0cb8f4da79a217558a0e6f6e06dcdbb2d97005b4
enum class MICA_API DataFormat : uint8_t {
    Float32 MICA_API = 0,
    Float16 MICA_API = 1,
    Bfp8 MICA_API = 2,
    Bfp4 MICA_API = 3,
    Bfp2 MICA_API = 11,
    Float16_b MICA_API = 5,
    Bfp8_b MICA_API = 6,
    Bfp4_b MICA_API = 7,
    Bfp2_b MICA_API = 15,
    Lf8 MICA_API = 10,
    Fp8_e4m3 MICA_API = 26,
    MxFp4 MICA_API = 22,
    Int8 MICA_API = 14,
    Tf32 MICA_API = 4,
    UInt8 MICA_API = 30,
    UInt16 MICA_API = 9,
    Int16 MICA_API = 13,
    Int32 MICA_API = 8,
    UInt32 MICA_API = 24,
    RawUInt8 MICA_API = 240,
    RawUInt16 MICA_API = 241,
    RawUInt32 MICA_API = 242,
    Invalid MICA_API = 255
};

}  // namespace tt
