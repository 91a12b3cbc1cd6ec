// Declarations read from tenstorrent/tt-metal (see ../../README.md): the subset MICA emits. Data-movement
// kernels only: a compute kernel that includes this fails the check, as it would fail the real build.
// (`inline` / FORCE_INLINE of the real definitions are dropped: these are declarations without bodies.)
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/kernel_build.h"
#include "internal/risc_attribs.h"
#include "internal/dataflow/dataflow_api_addrgen.h"
#include "api/compile_time_args.h"

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <typename T>
MICA_API FORCE_INLINE T get_arg_val(int arg_idx);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void cb_push_back(const int32_t operand, const int32_t num_pages);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void cb_pop_front(int32_t operand, int32_t num_pages);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
// (declared where the build generates the CB data-format descriptors, DATA_FORMATS_DEFINED)
MICA_API constexpr inline DataFormat get_dataformat(const std::int32_t operand) {
    return static_cast<DataFormat>(operand * 0);  // STAND-IN body (there: unpack_src_format[operand])
}

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE uint32_t get_write_ptr(uint32_t operand);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE uint32_t get_read_ptr(uint32_t operand);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void cb_reserve_back(int32_t operand, int32_t num_pages);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void cb_wait_front(int32_t operand, int32_t num_pages);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true>
MICA_API void noc_async_read(
    uint64_t src_noc_addr,
    uint32_t dst_local_l1_addr,
    uint32_t size,
    uint8_t noc = noc_index,
    uint32_t read_req_vc = NOC_UNICAST_WRITE_VC);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true, bool posted = false>
MICA_API void noc_async_write(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr,
    uint32_t size,
    uint8_t noc = noc_index,
    uint32_t vc = NOC_UNICAST_WRITE_VC);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
// (MICA's sends name every receiver, so num_dests excludes the sender; see the loopback variant)
template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1>
MICA_API void noc_async_write_multicast(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr_multicast,
    uint32_t size,
    uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index,
    uint8_t vc = NOC_MULTICAST_WRITE_VC);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <typename AddrGen, bool enable_noc_tracing = true>
MICA_API FORCE_INLINE void noc_async_read_page(
    const uint32_t id,
    const AddrGen& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <typename AddrGen, bool enable_noc_tracing = true, bool posted = false>
MICA_API FORCE_INLINE void noc_async_write_page(
    const uint32_t id,
    const AddrGen& addrgen,
    uint32_t src_local_l1_addr,
    uint32_t size = 0,
    uint32_t offset = 0,
    uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <ProgrammableCoreType type = ProgrammableCoreType::TENSIX>
MICA_API FORCE_INLINE uintptr_t get_semaphore(uint32_t semaphore_id);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API void noc_semaphore_set_multicast(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr_multicast,
    uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index,
    uint8_t vc = NOC_MULTICAST_WRITE_VC);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API void noc_async_write_multicast_loopback_src(
    std::uint32_t src_local_l1_addr,
    std::uint64_t dst_noc_addr_multicast,
    std::uint32_t size,
    std::uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API void noc_async_read_barrier(uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void noc_async_write_barrier(uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void noc_async_writes_flushed(uint8_t noc = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void noc_async_atomic_barrier(uint8_t noc_idx = noc_index);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void noc_semaphore_wait(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
MICA_API FORCE_INLINE void noc_semaphore_set(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val);

// tt_metal/hw/inc/api/dataflow/dataflow_api.h @ 003978d2a046f6ffbbb8180361e67cc4da32bd1e
template <bool posted = false>
MICA_API FORCE_INLINE void noc_semaphore_inc(
    uint64_t addr, uint32_t incr, uint8_t noc_id = noc_index, uint8_t vc = NOC_UNICAST_WRITE_VC);
