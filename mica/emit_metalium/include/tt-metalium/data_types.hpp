// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
// The newest data_types.hpp (@ 06bd3735f7df2921d8195d732c14eba433e4a32d) only includes kernel_types.hpp,
// where these enums now live under the same names and values; they are declared here, as read from the
// data_types.hpp that still held them, and kernel_types.hpp includes this file.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/data_types.hpp @ 8b8b7522a91743e3c19d2f38fce4f2464b2b098c
enum class MICA_API DataMovementProcessor {
    RISCV_0 MICA_API = 0,  // BRISC
    RISCV_1 MICA_API = 1,  // NCRISC
};

// tt_metal/api/tt-metalium/data_types.hpp @ 8b8b7522a91743e3c19d2f38fce4f2464b2b098c
enum MICA_API NOC : uint8_t {
    RISCV_0_default MICA_API = 0,
    RISCV_1_default MICA_API = 1,
    NOC_0 MICA_API = 0,
    NOC_1 MICA_API = 1,
};

// tt_metal/api/tt-metalium/data_types.hpp @ 8b8b7522a91743e3c19d2f38fce4f2464b2b098c
enum MICA_API NOC_MODE : uint8_t {
    DM_DEDICATED_NOC MICA_API = 0,
    DM_DYNAMIC_NOC MICA_API = 1,
};

}  // namespace tt::tt_metal
