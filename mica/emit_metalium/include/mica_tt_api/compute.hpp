// Compute kernel API subset (compute_kernel_api/*.h) of tt-metal v0.55.0: declarations written from the
// documentation by the MICA authors, for the syntax check only. The real headers define these in
// namespace ckernel and the kernel build brings them into scope; NAMESPACE and MAIN are defined per TRISC
// by the build (STAND-IN definitions below).
#pragma once
#include "mica_tt_api/kernel_common.hpp"

#ifndef NAMESPACE
#define NAMESPACE mica_syntax_check  // STAND-IN
#endif
#ifndef MAIN
#define MAIN compute_main()  // STAND-IN
#endif

namespace ckernel {
// Dst register ownership between the MATH and PACK threads.
void tile_regs_acquire();
void tile_regs_commit();
void tile_regs_wait();
void tile_regs_release();
void pack_tile(std::uint32_t ifrom_dst, std::uint32_t icb, std::uint32_t output_tile_index = 0);

// matmul.h
void mm_init(std::uint32_t in0_cb_id = 0, std::uint32_t in1_cb_id = 1, std::uint32_t out_cb_id = 16,
             const std::uint32_t transpose = 0);
void mm_init_short(std::uint32_t in0_cb_id = 0, std::uint32_t in1_cb_id = 1, const std::uint32_t transpose = 0);
void matmul_tiles(std::uint32_t in0_cb_id, std::uint32_t in1_cb_id, std::uint32_t in0_tile_index,
                  std::uint32_t in1_tile_index, std::uint32_t idst, const std::uint32_t transpose);

// tile_move_copy.h
void copy_tile_to_dst_init_short(std::uint32_t cbid = 0, std::uint32_t transpose = 0);
void copy_tile(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index);

// eltwise_binary.h
void binary_op_init_common(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t ocb = 16);
void add_tiles_init(std::uint32_t icb0 = 0, std::uint32_t icb1 = 1, bool acc_to_dest = false);
void sub_tiles_init(std::uint32_t icb0 = 0, std::uint32_t icb1 = 1, bool acc_to_dest = false);
void mul_tiles_init(std::uint32_t icb0 = 0, std::uint32_t icb1 = 1);
void add_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst);
void sub_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst);
void mul_tiles(std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst);

// eltwise_unary/eltwise_unary.h, eltwise_unary/fill.h
void init_sfpu(std::uint32_t icb, std::uint32_t ocb);
void fill_tile_init();
void fill_tile(std::uint32_t idst, float param);

// eltwise_unary/binop_with_scalar.h: Dst tile op scalar; param is the float's bit pattern
void binop_with_scalar_tile_init();
void add_unary_tile(std::uint32_t idst, std::uint32_t param1);
void sub_unary_tile(std::uint32_t idst, std::uint32_t param1);
void mul_unary_tile(std::uint32_t idst, std::uint32_t param1);
void div_unary_tile(std::uint32_t idst, std::uint32_t param1);
void rsub_unary_tile(std::uint32_t idst, std::uint32_t param1);
}  // namespace ckernel
using namespace ckernel;
