// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <memory>
#include <optional>
#include <variant>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/host_types.hpp"
#include <tt-metalium/buffer_types.hpp>
#include <tt-metalium/mesh_device.hpp>

namespace tt::tt_metal::distributed {

// tt_metal/api/tt-metalium/mesh_buffer.hpp @ 005d5bd664de3b4c389b7b81238f64c2a79a1435
// (sharding_args, bottom_up and sub_device_id, which MICA leaves at their defaults, are left out)
struct MICA_API DeviceLocalBufferConfig {
    DeviceAddr page_size = 0;
    BufferType buffer_type = BufferType::DRAM;
};

// tt_metal/api/tt-metalium/mesh_buffer.hpp @ 005d5bd664de3b4c389b7b81238f64c2a79a1435
struct MICA_API ReplicatedBufferConfig {
    DeviceAddr size = 0;
};

// tt_metal/api/tt-metalium/mesh_buffer.hpp @ 005d5bd664de3b4c389b7b81238f64c2a79a1435
// (ShardedBufferConfig, the other alternative, is left out)
using MeshBufferConfig MICA_API = std::variant<ReplicatedBufferConfig>;

// tt_metal/api/tt-metalium/mesh_buffer.hpp @ 005d5bd664de3b4c389b7b81238f64c2a79a1435
class MICA_API MeshBuffer {
public:
    MICA_API static std::shared_ptr<MeshBuffer> create(
        const MeshBufferConfig& mesh_buffer_config,
        const DeviceLocalBufferConfig& device_local_config,
        MeshDevice* mesh_device,
        std::optional<DeviceAddr> address = std::nullopt);
    MICA_API DeviceAddr address() const;
};

}  // namespace tt::tt_metal::distributed
