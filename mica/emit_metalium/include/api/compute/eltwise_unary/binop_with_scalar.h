// Declarations read from tenstorrent/tt-metal (see ../../../README.md): the subset MICA emits.
// y = binop(x, scalar) on a Dst tile; param1 is the fp32 scalar's bit pattern.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/compute_build.h"

namespace ckernel {

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void add_unary_tile(uint32_t idst, uint32_t param1);

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void sub_unary_tile(uint32_t idst, uint32_t param1);

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void mul_unary_tile(uint32_t idst, uint32_t param1);

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void div_unary_tile(uint32_t idst, uint32_t param1);

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void rsub_unary_tile(uint32_t idst, uint32_t param1);

// tt_metal/hw/inc/api/compute/eltwise_unary/binop_with_scalar.h @ 050f24fa811f4f26798a78feaac8a319912f5f10
MICA_API ALWI void binop_with_scalar_tile_init();

}  // namespace ckernel
