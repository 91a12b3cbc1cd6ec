// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include <map>
#include "mica_stand_in/api_trace.h"
#include <tt-metalium/tt_backend_api_types.hpp>

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/circular_buffer_config.hpp @ 002dea7c3a6bc30af1617eaf3db34e483f1feb71
using CBHandle MICA_API = uintptr_t;

// tt_metal/api/tt-metalium/circular_buffer_config.hpp @ 002dea7c3a6bc30af1617eaf3db34e483f1feb71
class MICA_API CircularBufferConfig {
public:
    CircularBufferConfig(uint32_t total_size, const std::map<uint8_t, tt::DataFormat>& data_format_spec);
    MICA_API CircularBufferConfig& set_page_size(uint8_t buffer_index, uint32_t page_size);
};

}  // namespace tt::tt_metal
