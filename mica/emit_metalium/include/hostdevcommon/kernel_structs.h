// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace tt {

// tt_metal/hostdevcommon/api/hostdevcommon/kernel_structs.h @ 0000a50757aec2a9575d7eec60ffc4484ef97e9a
// (c_0 .. c_63; MICA uses c_0 .. c_31, the circular buffers of Wormhole and Blackhole)
enum MICA_API CBIndex : std::uint8_t {
    c_0 MICA_API = 0, c_1 MICA_API = 1, c_2 MICA_API = 2, c_3 MICA_API = 3, c_4 MICA_API = 4, c_5 MICA_API = 5,
    c_6 MICA_API = 6, c_7 MICA_API = 7, c_8 MICA_API = 8, c_9 MICA_API = 9, c_10 MICA_API = 10, c_11 MICA_API = 11,
    c_12 MICA_API = 12, c_13 MICA_API = 13, c_14 MICA_API = 14, c_15 MICA_API = 15, c_16 MICA_API = 16,
    c_17 MICA_API = 17, c_18 MICA_API = 18, c_19 MICA_API = 19, c_20 MICA_API = 20, c_21 MICA_API = 21,
    c_22 MICA_API = 22, c_23 MICA_API = 23, c_24 MICA_API = 24, c_25 MICA_API = 25, c_26 MICA_API = 26,
    c_27 MICA_API = 27, c_28 MICA_API = 28, c_29 MICA_API = 29, c_30 MICA_API = 30, c_31 MICA_API = 31,
    c_32 MICA_API = 32, c_33 MICA_API = 33, c_34 MICA_API = 34, c_35 MICA_API = 35, c_36 MICA_API = 36,
    c_37 MICA_API = 37, c_38 MICA_API = 38, c_39 MICA_API = 39, c_40 MICA_API = 40, c_41 MICA_API = 41,
    c_42 MICA_API = 42, c_43 MICA_API = 43, c_44 MICA_API = 44, c_45 MICA_API = 45, c_46 MICA_API = 46,
    c_47 MICA_API = 47, c_48 MICA_API = 48, c_49 MICA_API = 49, c_50 MICA_API = 50, c_51 MICA_API = 51,
    c_52 MICA_API = 52, c_53 MICA_API = 53, c_54 MICA_API = 54, c_55 MICA_API = 55, c_56 MICA_API = 56,
    c_57 MICA_API = 57, c_58 MICA_API = 58, c_59 MICA_API = 59, c_60 MICA_API = 60, c_61 MICA_API = 61,
    c_62 MICA_API = 62, c_63 MICA_API = 63,
};

}  // namespace tt
