// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/host_types.hpp"
#include <tt-metalium/core_coord.hpp>
#include <tt-metalium/mesh_command_queue.hpp>
#include <tt-metalium/mesh_coord.hpp>

namespace tt::tt_metal {
struct DispatchCoreConfig {};  // STAND-IN: tt-metal's DispatchCoreConfig (dispatch_core_common.hpp, not read)
}  // namespace tt::tt_metal

namespace tt::tt_metal::distributed {

struct UInt32SpanStandIn {};  // STAND-IN for tt::stl::Span<const std::uint32_t>

// tt_metal/api/tt-metalium/mesh_device.hpp @ 001b6f94042c1ccd567a085cd75c1efbbf05d8c3
// (an IDevice; the defaults DEFAULT_L1_SMALL_SIZE, DEFAULT_TRACE_REGION_SIZE, DEFAULT_WORKER_L1_SIZE are
// simplified to 0 and the DispatchCoreConfig / Span parameter types to STAND-INs)
class MICA_API MeshDevice : public IDevice {
public:
    MICA_API static std::shared_ptr<MeshDevice> create_unit_mesh(
        int device_id,
        size_t l1_small_size = 0,
        size_t trace_region_size = 0,
        size_t num_command_queues = 1,
        const DispatchCoreConfig& dispatch_core_config = DispatchCoreConfig{},
        UInt32SpanStandIn l1_bank_remap = {},
        size_t worker_l1_size = 0);
    MICA_API MeshCommandQueue& mesh_command_queue(std::optional<uint8_t> cq_id = std::nullopt) const;
    MICA_API CoreCoord compute_with_storage_grid_size() const;
    MICA_API CoreCoord worker_core_from_logical_core(const CoreCoord& logical_core) const;
    MICA_API const MeshShape& shape() const;
    MICA_API bool close();
};

}  // namespace tt::tt_metal::distributed
