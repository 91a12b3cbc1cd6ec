// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <memory>
#include <vector>
#include "mica_stand_in/api_trace.h"
#include <tt-metalium/mesh_buffer.hpp>
#include <tt-metalium/mesh_command_queue.hpp>
#include <tt-metalium/mesh_coord.hpp>
#include <tt-metalium/mesh_device.hpp>
#include <tt-metalium/mesh_workload.hpp>

namespace tt::tt_metal::distributed {

// tt_metal/api/tt-metalium/distributed.hpp @ 06a95f46b590631fb1cccce5c17f850d75fa2517
MICA_API void EnqueueMeshWorkload(MeshCommandQueue& mesh_cq, MeshWorkload& mesh_workload, bool blocking);

// tt_metal/api/tt-metalium/distributed.hpp @ 06a95f46b590631fb1cccce5c17f850d75fa2517
template <typename DType>
MICA_API void EnqueueWriteMeshBuffer(
    MeshCommandQueue& mesh_cq,
    std::shared_ptr<MeshBuffer>& mesh_buffer,
    const std::vector<DType>& src,
    bool blocking = false);

// tt_metal/api/tt-metalium/distributed.hpp @ 06a95f46b590631fb1cccce5c17f850d75fa2517
template <typename DType>
MICA_API void EnqueueReadMeshBuffer(
    MeshCommandQueue& mesh_cq,
    std::vector<DType>& dst,
    std::shared_ptr<MeshBuffer>& mesh_buffer,
    bool blocking = true);

// tt_metal/api/tt-metalium/distributed.hpp @ 06a95f46b590631fb1cccce5c17f850d75fa2517
// (sub_device_ids is a tt::stl::Span<const SubDeviceId>; MICA never passes it)
struct SubDeviceIdSpanStandIn {};  // STAND-IN for tt::stl::Span<const SubDeviceId>
MICA_API void Finish(MeshCommandQueue& mesh_cq, SubDeviceIdSpanStandIn sub_device_ids = {});

}  // namespace tt::tt_metal::distributed
