// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal::distributed {

// tt_metal/api/tt-metalium/mesh_command_queue.hpp @ 03bbd74934e8372809692408441ba52e33727e91
// (MICA only names the type; it enqueues through the free functions of distributed.hpp)
class MICA_API MeshCommandQueue;

}  // namespace tt::tt_metal::distributed
