// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

// tt_metal/hw/inc/api/compile_time_args.h @ 0091bf06e17f4bb860f168884c6e0f50505dcd1d
// (there: returns kernel_compile_time_args[Idx], the array the build makes of the kernel's compile_args;
// STAND-IN body returning 0)
template <uint32_t Idx>
MICA_API constexpr uint32_t get_ct_arg() {
    return 0;
}

// tt_metal/hw/inc/api/compile_time_args.h @ 0091bf06e17f4bb860f168884c6e0f50505dcd1d
#define get_compile_time_arg_val(arg_idx) get_ct_arg<arg_idx>()
