// MICA, not tt-metal: STAND-INs of the compute-kernel build around the api/compute headers.
#pragma once
#include "mica_stand_in/kernel_build.h"
#include "internal/risc_attribs.h"

// STAND-IN: the compute API lives in namespace ckernel and the kernel build makes it visible to the kernel's
// kernel_main (tt-metal's own compute kernels call matmul_tiles, pack_tile, ... unqualified).
namespace ckernel {}
using namespace ckernel;
