// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include "mica_stand_in/api_trace.h"
#include <tt-metalium/base_types.hpp>
#include <tt-metalium/data_types.hpp>

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/kernel_types.hpp @ 00694d6bd0721c414dabee7f31fa0b7ee366adff
using KernelHandle MICA_API = std::uint32_t;

// tt_metal/api/tt-metalium/kernel_types.hpp @ 00694d6bd0721c414dabee7f31fa0b7ee366adff
enum class MICA_API KernelBuildOptLevel : uint8_t { O1, O2, O3, O0, Os, Ofast, Oz };

// tt_metal/api/tt-metalium/kernel_types.hpp @ 00694d6bd0721c414dabee7f31fa0b7ee366adff
struct MICA_API DataMovementConfig {
    DataMovementProcessor processor = DataMovementProcessor::RISCV_0;
    NOC noc = NOC::RISCV_0_default;
    NOC_MODE noc_mode = NOC_MODE::DM_DEDICATED_NOC;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    std::unordered_map<std::string, uint32_t> named_compile_args;
    KernelBuildOptLevel opt_level = KernelBuildOptLevel::O2;
};

// tt_metal/api/tt-metalium/kernel_types.hpp @ 00694d6bd0721c414dabee7f31fa0b7ee366adff
struct MICA_API ComputeConfig {
    MathFidelity math_fidelity = MathFidelity::HiFi4;
    bool fp32_dest_acc_en = false;
    bool dst_full_sync_en = false;
    std::vector<UnpackToDestMode> unpack_to_dest_mode;
    bool bfp8_pack_precise = false;
    bool math_approx_mode = false;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    std::unordered_map<std::string, uint32_t> named_compile_args;
    KernelBuildOptLevel opt_level = KernelBuildOptLevel::O3;
};

// STAND-IN: EthernetConfig (kernel_types.hpp) is only an alternative of CreateKernel's config variant here.
struct EthernetConfig {};

}  // namespace tt::tt_metal
