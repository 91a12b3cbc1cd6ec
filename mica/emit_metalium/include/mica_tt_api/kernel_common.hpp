// Declarations of the tt-metal v0.55.0 kernel API subset MICA's generated kernels use, written by the
// MICA authors from the tt-metal documentation (dataflow_api.h, compute_kernel_api reference pages) for
// a g++ -fsyntax-only check of the generated source. Declarations only: nothing here runs. Stand-ins
// for build-system machinery are marked STAND-IN.
#pragma once
#include <cstdint>
#include <cstddef>

#define tt_l1_ptr  // STAND-IN: an address-space attribute in the real RISC-V build

namespace tt {
enum class DataFormat : std::uint8_t { Float32 = 0, Float16 = 1, Bfp8 = 2, Bfp4 = 3, Float16_b = 5, Bfp8_b = 6,
                                       Bfp4_b = 7, Int32 = 8, UInt16 = 9, Int8 = 14, UInt32 = 24 };
}  // namespace tt
using tt::DataFormat;

// Kernel arguments: runtime args (per core, indices 0..340, 4 bytes each) and compile-time args.
template <typename T> T get_arg_val(int arg_idx);
template <typename T> T get_common_arg_val(int arg_idx);
// STAND-IN: the real build expands get_compile_time_arg_val(i) to the i-th compile_args value.
constexpr std::uint32_t get_compile_time_arg_val(int arg_idx) { return static_cast<std::uint32_t>(arg_idx) * 0u; }

// Circular buffers, as seen by one RISC-V (producer: reserve/push; consumer: wait/pop).
void cb_reserve_back(std::int32_t operand, std::int32_t num_pages);
void cb_push_back(std::int32_t operand, std::int32_t num_pages);
void cb_wait_front(std::int32_t operand, std::int32_t num_pages);
void cb_pop_front(std::int32_t operand, std::int32_t num_pages);
