// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include "mica_stand_in/api_trace.h"
#include <tt-metalium/mesh_coord.hpp>
#include <tt-metalium/program.hpp>

namespace tt::tt_metal::distributed {

// tt_metal/api/tt-metalium/mesh_workload.hpp @ 015d61a458c8c446c6a3422eadbb5603c0415fa5
class MICA_API MeshWorkload {
public:
    MeshWorkload();
    MICA_API void add_program(const MeshCoordinateRange& device_range, Program&& program);
};

}  // namespace tt::tt_metal::distributed
