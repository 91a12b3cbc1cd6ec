// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/kernel_build.h"
#include "internal/risc_attribs.h"

// tt_metal/hw/inc/internal/dataflow/dataflow_api_addrgen.h @ 15905a6fe57c089fb46a6771b80916b601daa592
MICA_API uint64_t get_noc_multicast_addr(
    uint32_t noc_x_start,
    uint32_t noc_y_start,
    uint32_t noc_x_end,
    uint32_t noc_y_end,
    uint32_t addr,
    uint8_t noc = noc_index);

// tt_metal/hw/inc/internal/dataflow/dataflow_api_addrgen.h @ 15905a6fe57c089fb46a6771b80916b601daa592
MICA_API uint64_t get_noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc = noc_index);

// tt_metal/hw/inc/internal/dataflow/dataflow_api_addrgen.h @ 15905a6fe57c089fb46a6771b80916b601daa592
// (an address generator for interleaved buffers of tiles: noc_async_read_page / noc_async_write_page take it)
template <bool DRAM, uint32_t tile_hw = 1024>
struct MICA_API InterleavedAddrGenFast {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;
    uint32_t page_size;
    DataFormat data_format;
    MICA_API std::uint64_t get_noc_addr(const uint32_t id, const uint32_t offset = 0, uint8_t noc = noc_index) const;
};
