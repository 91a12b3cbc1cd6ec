// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
// host_api.hpp of this era has no EnqueueWriteBuffer / EnqueueReadBuffer / EnqueueProgram / Finish(cq):
// host programs write buffers and run programs through the distributed (mesh) API, see distributed.hpp.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <variant>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/host_types.hpp"
#include <hostdevcommon/kernel_structs.h>
#include <tt-metalium/base_types.hpp>
#include <tt-metalium/buffer_types.hpp>
#include <tt-metalium/circular_buffer_config.hpp>
#include <tt-metalium/core_coord.hpp>
#include <tt-metalium/global_semaphore.hpp>
#include <tt-metalium/kernel_types.hpp>
#include <tt-metalium/program.hpp>
#include <tt-metalium/tt_backend_api_types.hpp>

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
MICA_API Program CreateProgram();

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
MICA_API KernelHandle CreateKernel(
    Program& program,
    const std::string& file_name,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    const std::variant<DataMovementConfig, ComputeConfig, EthernetConfig>& config);

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
MICA_API CBHandle CreateCircularBuffer(
    Program& program,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    const CircularBufferConfig& config);

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
MICA_API uint32_t CreateSemaphore(
    Program& program,
    const std::variant<CoreRange, CoreRangeSet>& core_spec,
    uint32_t initial_value,
    CoreType core_type = CoreType::WORKER);

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
// ("Initializes a global semaphore on all cores within the specified CoreRangeSet"; L1 buffer types only)
MICA_API GlobalSemaphore CreateGlobalSemaphore(
    IDevice* device, const CoreRangeSet& cores, uint32_t initial_value, BufferType buffer_type = BufferType::L1);

// tt_metal/api/tt-metalium/host_api.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
MICA_API void SetRuntimeArgs(
    const Program& program,
    KernelHandle kernel,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    std::initializer_list<uint32_t> runtime_args);

}  // namespace tt::tt_metal
