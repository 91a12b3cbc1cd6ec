// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/host_types.hpp"

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/global_semaphore.hpp @ 06bd3735f7df2921d8195d732c14eba433e4a32d
// (only the member MICA uses; the class wraps a sharded L1 buffer, one word per core at one address)
class MICA_API GlobalSemaphore {
public:
    MICA_API DeviceAddr address() const;
};

}  // namespace tt::tt_metal
