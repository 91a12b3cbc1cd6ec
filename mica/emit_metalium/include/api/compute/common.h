// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits. Compute
// kernels only (no NoC calls: a data-movement call in a compute kernel fails the check, as in the real build).
// A compute kernel's entry point is `void kernel_main()`, as in tt-metal's programming examples
// (tt_metal/programming_examples/matmul/matmul_multi_core/kernels/compute/mm.cpp @ 06bd3735f7df2921d8195d732c14eba433e4a32d).
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/cb_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compile_time_args.h"

// tt_metal/hw/inc/api/compute/common.h @ 03e5f0e0d34ad07237a10b9e49eb3411525cc03b
template <typename T>
MICA_API FORCE_INLINE T get_arg_val(int arg_idx);
