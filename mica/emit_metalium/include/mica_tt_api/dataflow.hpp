// Data-movement kernel API subset (dataflow_api.h) of tt-metal v0.55.0: declarations written from the
// documentation by the MICA authors, for the syntax check only.
#pragma once
#include "mica_tt_api/kernel_common.hpp"

extern std::uint8_t noc_index;  // the NoC this kernel was configured for (NOC::RISCV_0_default ...)

std::uint32_t get_write_ptr(std::uint32_t operand);
std::uint32_t get_read_ptr(std::uint32_t operand);
DataFormat get_dataformat(const std::int32_t operand);
std::uint32_t get_tile_size(const std::int32_t operand);
std::uint32_t get_semaphore(std::uint32_t semaphore_id);

std::uint64_t get_noc_addr(std::uint32_t noc_x, std::uint32_t noc_y, std::uint32_t addr, std::uint8_t noc = noc_index);
std::uint64_t get_noc_multicast_addr(std::uint32_t noc_x_start, std::uint32_t noc_y_start, std::uint32_t noc_x_end,
                                     std::uint32_t noc_y_end, std::uint32_t addr, std::uint8_t noc = noc_index);

void noc_async_read(std::uint64_t src_noc_addr, std::uint32_t dst_local_l1_addr, std::uint32_t size,
                    std::uint8_t noc = noc_index);
void noc_async_write(std::uint32_t src_local_l1_addr, std::uint64_t dst_noc_addr, std::uint32_t size,
                     std::uint8_t noc = noc_index);
void noc_async_write_multicast(std::uint32_t src_local_l1_addr, std::uint64_t dst_noc_addr_multicast,
                               std::uint32_t size, std::uint32_t num_dests, bool linked = false,
                               bool multicast_path_reserve = true, std::uint8_t noc = noc_index);
void noc_async_write_multicast_loopback_src(std::uint32_t src_local_l1_addr, std::uint64_t dst_noc_addr_multicast,
                                            std::uint32_t size, std::uint32_t num_dests, bool linked = false,
                                            bool multicast_path_reserve = true, std::uint8_t noc = noc_index);
void noc_async_read_barrier(std::uint8_t noc = noc_index);
void noc_async_write_barrier(std::uint8_t noc = noc_index);
void noc_async_writes_flushed(std::uint8_t noc = noc_index);
void noc_async_atomic_barrier(std::uint8_t noc = noc_index);

void noc_semaphore_wait(volatile tt_l1_ptr std::uint32_t* sem_addr, std::uint32_t val);
void noc_semaphore_set(volatile tt_l1_ptr std::uint32_t* sem_addr, std::uint32_t val);
void noc_semaphore_inc(std::uint64_t addr, std::uint32_t incr, std::uint8_t noc_id = noc_index);
void noc_semaphore_set_multicast(std::uint32_t src_local_l1_addr, std::uint64_t dst_noc_addr_multicast,
                                 std::uint32_t num_dests, bool linked = false, bool multicast_path_reserve = true,
                                 std::uint8_t noc = noc_index);

// Interleaved (page-per-bank round-robin) DRAM or L1 buffer addressing, one tile per page.
template <bool DRAM>
struct InterleavedAddrGenFast {
    std::uint32_t bank_base_address;
    std::uint32_t page_size;
    DataFormat data_format;
};
template <bool DRAM>
void noc_async_read_tile(std::uint32_t id, const InterleavedAddrGenFast<DRAM>& s, std::uint32_t dst_local_l1_addr,
                         std::uint32_t offset = 0, std::uint8_t noc = noc_index);
template <bool DRAM>
void noc_async_write_tile(std::uint32_t id, const InterleavedAddrGenFast<DRAM>& s, std::uint32_t src_local_l1_addr,
                          std::uint8_t noc = noc_index);
