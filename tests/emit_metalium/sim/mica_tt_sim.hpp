// A functional model of the tt-metal API subset MICA emits (the API of mica/emit_metalium/include: tt-metal
// main of July 2026), for tests only: every core is a few host threads (reader, compute, writer) sharing a
// private "L1" mapped below 2 GiB (so 32-bit L1 addresses are real pointers), circular buffers are FIFOs
// with per-thread pointers and shared page counters, semaphores are atomic words in L1, NoC transfers are
// memcpys between cores' L1, multicasts copy to every core of the rectangle, DRAM mesh buffers are host
// vectors, and a mesh workload runs its program's kernels as those threads. Compute keeps Dst tiles
// row-major in fp32 (as with fp32_dest_acc_en) and reads/writes CB tiles in the four-16x16-face layout of
// the CB's data format: a Float16_b (bfloat16) tile is unpacked exactly (a bf16 value is an f32 value) and
// packed rounded to nearest even (the model's assumption for the packer's rounding); the init calls
// (compute_kernel_hw_startup, matmul_init, ...) configure nothing. The host's bfloat16 is two bytes, built
// from a float rounded to nearest even as tt-metal's bfloat16.hpp documents. Written by the MICA authors from the
// headers' documentation; it is not tt-metal and says nothing about timing, only about what the generated
// code computes and whether its handshakes complete.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#define tt_l1_ptr
#define ALWI inline

namespace tt {
enum class DataFormat : std::uint8_t { Float32 = 0, Float16 = 1, Float16_b = 5, Int32 = 8 };
enum CBIndex : std::uint8_t {
    c_0 = 0, c_1, c_2, c_3, c_4, c_5, c_6, c_7, c_8, c_9, c_10, c_11, c_12, c_13, c_14, c_15,
    c_16, c_17, c_18, c_19, c_20, c_21, c_22, c_23, c_24, c_25, c_26, c_27, c_28, c_29, c_30, c_31
};
}  // namespace tt
using tt::DataFormat;
namespace mica_sim {
constexpr std::uint32_t L1_BYTES = 1u << 20;
struct CB { std::uint32_t base = 0, size = 0, page = 0; tt::DataFormat fmt = tt::DataFormat::Float32;
            std::atomic<std::uint32_t> received{0}, acked{0}; };
struct Core { std::uint8_t* l1 = nullptr; CB cb[32]; };
struct Ctx {
    Core* core = nullptr;
    std::uint32_t rd[32] = {}, wr[32] = {};
    std::vector<std::uint32_t> rt;
    float dst[16][1024];
};
inline std::vector<Core*> cores;
inline int width = 0, height = 0;
inline thread_local Ctx* ctx = nullptr;
inline std::vector<std::vector<std::uint8_t>> dram;
inline std::map<std::string, void (*)()>& registry() { static std::map<std::string, void (*)()> r; return r; }

inline void spin() { sched_yield(); }
inline std::uint8_t* l1() { return ctx->core->l1; }
inline std::uint32_t addr(const std::uint8_t* p) { return (std::uint32_t)(std::uintptr_t)p; }
inline std::uint8_t* ptr(std::uint32_t a) { return (std::uint8_t*)(std::uintptr_t)a; }
inline Core* at(std::uint32_t x, std::uint32_t y) {
    if ((int)x >= width || (int)y >= height || !cores[y * width + x]) {
        std::fprintf(stderr, "NoC address (%u,%u) is no core of the program\n", x, y);
        std::abort();
    }
    return cores[y * width + x];
}
// element (i, j) of a 32x32 tile in the face layout
inline int face_index(int i, int j) { return ((i / 16) * 2 + j / 16) * 256 + (i % 16) * 16 + j % 16; }
inline void to_rm(const float* t, float* rm) { for (int i = 0; i < 32; ++i) for (int j = 0; j < 32; ++j) rm[i * 32 + j] = t[face_index(i, j)]; }
inline void from_rm(const float* rm, float* t) { for (int i = 0; i < 32; ++i) for (int j = 0; j < 32; ++j) t[face_index(i, j)] = rm[i * 32 + j]; }
inline float bf16_to_f32(std::uint16_t h) { std::uint32_t u = (std::uint32_t)h << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline std::uint16_t f32_to_bf16(float f) {   // round to nearest, ties to even; a NaN stays a quiet NaN
    std::uint32_t u; std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (std::uint16_t)((u >> 16) | 0x0040u);
    return (std::uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// tile i at the front of CB cb, as floats in the face layout (converted from the CB's data format)
inline const float* front_tile(std::uint32_t cb, std::uint32_t i) {
    static thread_local float t[4][1024];
    static thread_local int next = 0;
    const CB& c = ctx->core->cb[cb];
    const std::uint8_t* p = l1() + ctx->rd[cb] + i * c.page;
    if (c.fmt == tt::DataFormat::Float32) return (const float*)p;
    if (c.fmt != tt::DataFormat::Float16_b && c.fmt != tt::DataFormat::Float16) {
        std::fprintf(stderr, "CB %u: data format not modelled\n", cb); std::abort();
    }
    float* out = t[next++ % 4];
    if (c.fmt == tt::DataFormat::Float16) {     // IEEE half: unpacked exactly
        for (int k = 0; k < 1024; ++k) { _Float16 h; std::memcpy(&h, (const std::uint16_t*)p + k, 2); out[k] = (float)h; }
        return out;
    }
    for (int k = 0; k < 1024; ++k) out[k] = bf16_to_f32(((const std::uint16_t*)p)[k]);
    return out;
}
// CBs used as streams (the tests set this from plan.json: double buffers): a NoC write into one of their pages
// that is pushed and not yet popped -- a page the consumer may be reading -- aborts, naming core, CB and page.
inline std::uint32_t streamed_cbs = 0;
inline void check_noc_write(Core* c, std::uint32_t off, std::uint32_t size) {
    for (int k = 0; k < 32; ++k) {
        if (!(streamed_cbs >> k & 1u)) continue;
        CB& b = c->cb[k];
        if (!b.page || off + size <= b.base || off >= b.base + b.size) continue;
        const std::uint32_t n = b.size / b.page, acked = b.acked.load(), held = b.received.load() - acked;
        for (std::uint32_t j = 0; j < held; ++j) {
            const std::uint32_t p0 = b.base + ((acked + j) % n) * b.page;
            if (off < p0 + b.page && p0 < off + size) {
                int idx = 0;
                while (idx < (int)cores.size() && cores[idx] != c) ++idx;
                std::fprintf(stderr, "NoC write into page %u of CB %d on core (%d,%d), pushed and not yet popped\n",
                             (p0 - b.base) / b.page, k, idx % width, idx / width);
                std::abort();
            }
        }
    }
}
}  // namespace mica_sim

// ---- kernel arguments ----
template <typename T> T get_arg_val(int i) { return (T)mica_sim::ctx->rt.at(i); }
inline std::uint8_t noc_index = 0;

// ---- circular buffers ----
inline void cb_reserve_back(std::int32_t cb, std::int32_t n) {
    auto& c = mica_sim::ctx->core->cb[cb];
    while (c.size / c.page - (c.received.load() - c.acked.load()) < (std::uint32_t)n) mica_sim::spin();
}
inline void cb_push_back(std::int32_t cb, std::int32_t n) {
    auto& c = mica_sim::ctx->core->cb[cb];
    std::uint32_t& w = mica_sim::ctx->wr[cb];
    w += n * c.page;
    if (w >= c.base + c.size) w -= c.size;
    c.received.fetch_add(n);
}
inline void cb_wait_front(std::int32_t cb, std::int32_t n) {
    auto& c = mica_sim::ctx->core->cb[cb];
    while (c.received.load() - c.acked.load() < (std::uint32_t)n) mica_sim::spin();
}
inline void cb_pop_front(std::int32_t cb, std::int32_t n) {
    auto& c = mica_sim::ctx->core->cb[cb];
    std::uint32_t& r = mica_sim::ctx->rd[cb];
    r += n * c.page;
    if (r >= c.base + c.size) r -= c.size;
    c.acked.fetch_add(n);
}
inline std::uint32_t get_write_ptr(std::uint32_t cb) { return mica_sim::addr(mica_sim::l1() + mica_sim::ctx->wr[cb]); }
inline std::uint32_t get_read_ptr(std::uint32_t cb) { return mica_sim::addr(mica_sim::l1() + mica_sim::ctx->rd[cb]); }
inline DataFormat get_dataformat(std::int32_t cb) { return mica_sim::ctx->core->cb[cb].fmt; }

// ---- NoC: (x, y) in the top bits, the offset in the target's L1 below ----
inline std::uintptr_t get_semaphore(std::uint32_t id) { return mica_sim::addr(mica_sim::l1() + id * 16); }
inline std::uint64_t get_noc_addr(std::uint32_t x, std::uint32_t y, std::uint32_t a, std::uint8_t = 0) {
    return ((std::uint64_t)x << 56) | ((std::uint64_t)y << 48) | (std::uint64_t)(a - mica_sim::addr(mica_sim::l1()));
}
inline std::uint64_t get_noc_multicast_addr(std::uint32_t x0, std::uint32_t y0, std::uint32_t x1, std::uint32_t y1,
                                            std::uint32_t a, std::uint8_t = 0) {
    return ((std::uint64_t)x0 << 56) | ((std::uint64_t)y0 << 48) | ((std::uint64_t)x1 << 40) | ((std::uint64_t)y1 << 32)
           | (std::uint64_t)(a - mica_sim::addr(mica_sim::l1()));
}
inline std::uint8_t* noc_target(std::uint64_t n) {
    return mica_sim::at((std::uint32_t)(n >> 56), (std::uint32_t)(n >> 48) & 0xff)->l1 + (n & 0xffffffffffull);
}
inline void noc_async_read(std::uint64_t src, std::uint32_t dst, std::uint32_t size, std::uint8_t = 0) {
    std::memcpy(mica_sim::ptr(dst), noc_target(src), size);
}
inline void noc_async_write(std::uint32_t src, std::uint64_t dst, std::uint32_t size, std::uint8_t = 0) {
    mica_sim::check_noc_write(mica_sim::at((std::uint32_t)(dst >> 56), (std::uint32_t)(dst >> 48) & 0xff),
                              (std::uint32_t)(dst & 0xffffffffffull), size);
    std::memcpy(noc_target(dst), mica_sim::ptr(src), size);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void mica_sim_mcast(std::uint32_t src, std::uint64_t m, std::uint32_t size, std::uint32_t n, bool self) {
    std::uint32_t x0 = m >> 56, y0 = (m >> 48) & 0xff, x1 = (m >> 40) & 0xff, y1 = (m >> 32) & 0xff, off = m & 0xffffffffu;
    std::uint32_t count = 0;
    for (std::uint32_t y = y0; y <= y1; ++y)
        for (std::uint32_t x = x0; x <= x1; ++x) {
            mica_sim::Core* c = mica_sim::at(x, y);
            if (c == mica_sim::ctx->core && !self) continue;
            mica_sim::check_noc_write(c, off, size);
            std::memcpy(c->l1 + off, mica_sim::ptr(src), size);
            ++count;
        }
    if (count != n) { std::fprintf(stderr, "multicast to %u cores announced as %u\n", count, n); std::abort(); }
    std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void noc_async_write_multicast(std::uint32_t s, std::uint64_t m, std::uint32_t size, std::uint32_t n,
                                      bool = false, std::uint8_t = 0, std::uint8_t = 0) { mica_sim_mcast(s, m, size, n, false); }
inline void noc_async_write_multicast_loopback_src(std::uint32_t s, std::uint64_t m, std::uint32_t size, std::uint32_t n,
                                                   bool = false, std::uint8_t = 0) { mica_sim_mcast(s, m, size, n, true); }
inline void noc_semaphore_set_multicast(std::uint32_t s, std::uint64_t m, std::uint32_t n, bool = false,
                                        std::uint8_t = 0, std::uint8_t = 0) {
    std::uint32_t x0 = m >> 56, y0 = (m >> 48) & 0xff, x1 = (m >> 40) & 0xff, y1 = (m >> 32) & 0xff, off = m & 0xffffffffu;
    std::uint32_t v = __atomic_load_n((std::uint32_t*)mica_sim::ptr(s), __ATOMIC_SEQ_CST), count = 0;
    for (std::uint32_t y = y0; y <= y1; ++y)
        for (std::uint32_t x = x0; x <= x1; ++x) {
            mica_sim::Core* c = mica_sim::at(x, y);
            if (c == mica_sim::ctx->core) continue;
            __atomic_store_n((std::uint32_t*)(c->l1 + off), v, __ATOMIC_SEQ_CST);
            ++count;
        }
    if (count != n) { std::fprintf(stderr, "semaphore multicast to %u cores announced as %u\n", count, n); std::abort(); }
}
inline void noc_async_read_barrier(std::uint8_t = 0) {}
inline void noc_async_write_barrier(std::uint8_t = 0) {}
inline void noc_async_writes_flushed(std::uint8_t = 0) {}
inline void noc_async_atomic_barrier(std::uint8_t = 0) {}
inline void noc_semaphore_wait(volatile std::uint32_t* p, std::uint32_t v) {
    while (__atomic_load_n((std::uint32_t*)p, __ATOMIC_SEQ_CST) != v) mica_sim::spin();
}
inline void noc_semaphore_set(volatile std::uint32_t* p, std::uint32_t v) { __atomic_store_n((std::uint32_t*)p, v, __ATOMIC_SEQ_CST); }
inline void noc_semaphore_inc(std::uint64_t a, std::uint32_t d, std::uint8_t = 0, std::uint8_t = 0) {
    __atomic_fetch_add((std::uint32_t*)noc_target(a), d, __ATOMIC_SEQ_CST);
}

// Interleaved DRAM buffers: bank_base_address is the buffer's handle (its index in mica_sim::dram), page id
// at byte id * page_size (the model has one bank).
template <bool DRAM, std::uint32_t tile_hw = 1024>
struct InterleavedAddrGenFast { std::uint32_t bank_base_address; std::uint32_t page_size; DataFormat data_format; };
template <typename AddrGen> void noc_async_read_page(std::uint32_t id, const AddrGen& s, std::uint32_t l1a,
                                                     std::uint32_t offset = 0, std::uint8_t = 0) {
    std::memcpy(mica_sim::ptr(l1a), mica_sim::dram.at(s.bank_base_address).data() + (std::size_t)id * s.page_size + offset,
                s.page_size);
}
template <typename AddrGen> void noc_async_write_page(std::uint32_t id, const AddrGen& s, std::uint32_t l1a,
                                                      std::uint32_t size = 0, std::uint32_t offset = 0, std::uint8_t = 0) {
    std::memcpy(mica_sim::dram.at(s.bank_base_address).data() + (std::size_t)id * s.page_size + offset, mica_sim::ptr(l1a),
                size ? size : s.page_size);
}

// ---- compute: Dst tiles row-major ----
inline void tile_regs_acquire() {}
inline void tile_regs_commit() {}
inline void tile_regs_wait() {}
inline void tile_regs_release() {}
enum class SrcOrder : std::uint8_t { Regular = 0, Reverse = 1 };
template <SrcOrder = SrcOrder::Regular> void compute_kernel_hw_startup(std::uint32_t, std::uint32_t, std::uint32_t) {}
inline void matmul_init(std::uint32_t, std::uint32_t, std::uint32_t = 0, std::uint32_t = 0) {}
inline void copy_tile_to_dst_init_short(std::uint32_t, std::uint32_t = 0, std::uint32_t = 0, std::uint32_t = 0) {}
inline void add_tiles_init(std::uint32_t, std::uint32_t, bool = false, std::uint32_t = 0) {}
inline void sub_tiles_init(std::uint32_t, std::uint32_t, bool = false, std::uint32_t = 0) {}
inline void mul_tiles_init(std::uint32_t, std::uint32_t, std::uint32_t = 0) {}
inline void fill_tile_init() {}
inline void binop_with_scalar_tile_init() {}
inline void copy_tile(std::uint32_t cb, std::uint32_t i, std::uint32_t d) { mica_sim::to_rm(mica_sim::front_tile(cb, i), mica_sim::ctx->dst[d]); }
inline void matmul_tiles(std::uint32_t c0, std::uint32_t c1, std::uint32_t i0, std::uint32_t i1, std::uint32_t d) {
    static thread_local float a[1024], b[1024];
    mica_sim::to_rm(mica_sim::front_tile(c0, i0), a);
    mica_sim::to_rm(mica_sim::front_tile(c1, i1), b);
    float* o = mica_sim::ctx->dst[d];
    for (int i = 0; i < 32; ++i)
        for (int k = 0; k < 32; ++k)
            for (int j = 0; j < 32; ++j) o[i * 32 + j] += a[i * 32 + k] * b[k * 32 + j];
}
template <typename F> void mica_sim_binary(std::uint32_t c0, std::uint32_t c1, std::uint32_t i0, std::uint32_t i1, std::uint32_t d, F f) {
    static thread_local float a[1024], b[1024];
    mica_sim::to_rm(mica_sim::front_tile(c0, i0), a);
    mica_sim::to_rm(mica_sim::front_tile(c1, i1), b);
    for (int k = 0; k < 1024; ++k) mica_sim::ctx->dst[d][k] = f(a[k], b[k]);
}
inline void add_tiles(std::uint32_t c0, std::uint32_t c1, std::uint32_t i0, std::uint32_t i1, std::uint32_t d) { mica_sim_binary(c0, c1, i0, i1, d, [](float p, float q) { return p + q; }); }
inline void sub_tiles(std::uint32_t c0, std::uint32_t c1, std::uint32_t i0, std::uint32_t i1, std::uint32_t d) { mica_sim_binary(c0, c1, i0, i1, d, [](float p, float q) { return p - q; }); }
inline void mul_tiles(std::uint32_t c0, std::uint32_t c1, std::uint32_t i0, std::uint32_t i1, std::uint32_t d) { mica_sim_binary(c0, c1, i0, i1, d, [](float p, float q) { return p * q; }); }
inline void fill_tile(std::uint32_t d, float v) { for (float& e : mica_sim::ctx->dst[d]) e = v; }
inline float mica_sim_bits(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline void add_unary_tile(std::uint32_t d, std::uint32_t p) { for (float& e : mica_sim::ctx->dst[d]) e = e + mica_sim_bits(p); }
inline void sub_unary_tile(std::uint32_t d, std::uint32_t p) { for (float& e : mica_sim::ctx->dst[d]) e = e - mica_sim_bits(p); }
inline void mul_unary_tile(std::uint32_t d, std::uint32_t p) { for (float& e : mica_sim::ctx->dst[d]) e = e * mica_sim_bits(p); }
inline void div_unary_tile(std::uint32_t d, std::uint32_t p) { for (float& e : mica_sim::ctx->dst[d]) e = e / mica_sim_bits(p); }
inline void rsub_unary_tile(std::uint32_t d, std::uint32_t p) { for (float& e : mica_sim::ctx->dst[d]) e = mica_sim_bits(p) - e; }
inline void pack_tile(std::uint32_t d, std::uint32_t cb, std::uint32_t idx = 0) {
    const mica_sim::CB& c = mica_sim::ctx->core->cb[cb];
    std::uint8_t* p = mica_sim::l1() + mica_sim::ctx->wr[cb] + idx * c.page;
    if (c.fmt == tt::DataFormat::Float32) { mica_sim::from_rm(mica_sim::ctx->dst[d], (float*)p); return; }
    float t[1024];
    mica_sim::from_rm(mica_sim::ctx->dst[d], t);
    if (c.fmt == tt::DataFormat::Float16) {     // IEEE half: rounded to nearest even
        for (int k = 0; k < 1024; ++k) { _Float16 h = (_Float16)t[k]; std::memcpy((std::uint16_t*)p + k, &h, 2); }
        return;
    }
    for (int k = 0; k < 1024; ++k) ((std::uint16_t*)p)[k] = mica_sim::f32_to_bf16(t[k]);   // Float16_b
}

// ---- host ----
class bfloat16 {
    std::uint16_t uint16_data = 0;
public:
    bfloat16() = default;
    template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
    bfloat16(T v) noexcept : uint16_data(mica_sim::f32_to_bf16((float)v)) {}
    operator float() const { return mica_sim::bf16_to_f32(uint16_data); }
};
static_assert(sizeof(bfloat16) == 2, "bfloat16 is two bytes");
namespace tt::tt_metal {
enum class MathFidelity : std::uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4 };
}  // namespace tt::tt_metal
struct CoreCoord { std::size_t x = 0, y = 0; CoreCoord() {} CoreCoord(std::size_t x_, std::size_t y_) : x(x_), y(y_) {} };
struct CoreRange { CoreCoord start_coord, end_coord; CoreRange(const CoreCoord& a, const CoreCoord& b) : start_coord(a), end_coord(b) {} };
class CoreRangeSet {
public:
    std::vector<CoreRange> ranges_;
    CoreRangeSet(std::vector<CoreRange>&& r) : ranges_(std::move(r)) {}
    CoreRangeSet(const CoreRange& r) : ranges_{r} {}
    const std::vector<CoreRange>& ranges() const { return ranges_; }
};
inline std::vector<CoreCoord> corerange_to_cores(const CoreRangeSet& s, std::optional<std::uint32_t> = std::nullopt, bool = false) {
    std::vector<CoreCoord> out;
    for (const auto& r : s.ranges())
        for (std::size_t y = r.start_coord.y; y <= r.end_coord.y; ++y)
            for (std::size_t x = r.start_coord.x; x <= r.end_coord.x; ++x) out.emplace_back(x, y);
    return out;
}
namespace tt::tt_metal {
using ::CoreCoord;
using ::CoreRange;
using ::CoreRangeSet;
enum class BufferType { DRAM, L1 };
using CoreSpec = std::variant<CoreCoord, CoreRange, CoreRangeSet>;
inline CoreRangeSet as_set(const CoreSpec& s) {
    if (auto* c = std::get_if<CoreCoord>(&s)) return CoreRangeSet(CoreRange(*c, *c));
    if (auto* r = std::get_if<CoreRange>(&s)) return CoreRangeSet(*r);
    return std::get<CoreRangeSet>(s);
}
class CircularBufferConfig {
public:
    std::uint32_t total; std::uint8_t index = 0; std::uint32_t page = 0; tt::DataFormat fmt;
    CircularBufferConfig(std::uint32_t t, const std::map<std::uint8_t, tt::DataFormat>& f)
        : total(t), index(f.begin()->first), fmt(f.begin()->second) {}
    CircularBufferConfig& set_page_size(std::uint8_t, std::uint32_t p) { page = p; return *this; }
};
enum class DataMovementProcessor { RISCV_0 = 0, RISCV_1 = 1 };
enum NOC : std::uint8_t { RISCV_0_default = 0, RISCV_1_default = 1 };
struct DataMovementConfig { DataMovementProcessor processor = DataMovementProcessor::RISCV_0; NOC noc = NOC::RISCV_0_default;
                            std::vector<std::uint32_t> compile_args; std::map<std::string, std::string> defines; };
struct ComputeConfig { MathFidelity math_fidelity = MathFidelity::HiFi4; bool fp32_dest_acc_en = false; bool dst_full_sync_en = false;
                       bool math_approx_mode = false; std::vector<std::uint32_t> compile_args; std::map<std::string, std::string> defines; };
using KernelHandle = std::uint32_t;
struct KernelSpec { std::string path; CoreRangeSet cores; std::map<std::pair<std::size_t, std::size_t>, std::vector<std::uint32_t>> rt; };
class Program {
public:
    std::vector<std::pair<CoreRangeSet, CircularBufferConfig>> cbs;
    std::uint32_t sems = 0;
    mutable std::vector<KernelSpec> kernels;
};
inline Program CreateProgram() { return Program{}; }

// Global semaphores: the k-th is the word at L1 offset 16 * (16 + k) of every core of its set (above the
// program semaphores, below the CBs), set to its initial value when a program starts. Its address() is a
// token, 0xF0000000 + offset, that mica_sim_run relocates in every kernel's runtime args to the word of that
// core (the device gives one L1 address on every core; the model's cores are separate host allocations).
class IDevice {};
class GlobalSemaphore {
public:
    std::uint32_t offset = 0;
    std::uint64_t address() const { return 0xF0000000u + offset; }
};
struct GlobalSemSpec { std::uint32_t offset; std::uint32_t init; CoreRangeSet cores; };
inline std::vector<GlobalSemSpec>& global_sems() { static std::vector<GlobalSemSpec> g; return g; }
inline GlobalSemaphore CreateGlobalSemaphore(IDevice*, const CoreRangeSet& cores, std::uint32_t init,
                                             BufferType = BufferType::L1) {
    GlobalSemaphore g;
    g.offset = 16 * (16 + (std::uint32_t)global_sems().size());
    if (g.offset + 16 > 4096) { std::fprintf(stderr, "too many global semaphores for the model\n"); std::abort(); }
    global_sems().push_back({g.offset, init, cores});
    return g;
}
inline std::uintptr_t CreateCircularBuffer(Program& p, const CoreSpec& s, const CircularBufferConfig& c) { p.cbs.emplace_back(as_set(s), c); return p.cbs.size(); }
inline std::uint32_t CreateSemaphore(Program& p, const std::variant<CoreRange, CoreRangeSet>&, std::uint32_t) { return p.sems++; }
inline KernelHandle CreateKernel(Program& p, const std::string& f, const CoreSpec& s, const std::variant<DataMovementConfig, ComputeConfig>&) {
    if (!mica_sim::registry().count(f)) { std::fprintf(stderr, "no kernel %s\n", f.c_str()); std::abort(); }
    p.kernels.push_back(KernelSpec{f, as_set(s), {}});
    return (KernelHandle)(p.kernels.size() - 1);
}
inline void SetRuntimeArgs(const Program& p, KernelHandle k, const CoreSpec& c, std::initializer_list<std::uint32_t> a) {
    const CoreCoord core = std::get<CoreCoord>(c);
    p.kernels.at(k).rt[{core.x, core.y}] = std::vector<std::uint32_t>(a);
}

// Runs every kernel of `p` on the threads of its cores until all return.
inline void mica_sim_run(Program& p) {
    using namespace mica_sim;
    width = height = 16;
    cores.assign(width * height, nullptr);
    for (auto& [set, cfg] : p.cbs)                       // a core exists where the program puts something
        for (const auto& cc : corerange_to_cores(set)) {
            Core*& c = cores.at(cc.y * width + cc.x);
            if (c) continue;
            c = new Core;
            void* m = mmap(nullptr, L1_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
            if (m == MAP_FAILED) { std::perror("mmap"); std::abort(); }
            c->l1 = (std::uint8_t*)m;
        }
    std::uint32_t next = 4096;   // semaphores below, 16 B each; CBs in creation order, the same place everywhere
    for (auto& [set, cfg] : p.cbs) {
        for (const auto& cc : corerange_to_cores(set)) {
            CB& cb = at(cc.x, cc.y)->cb[cfg.index];
            cb.base = next; cb.size = cfg.total; cb.page = cfg.page; cb.fmt = cfg.fmt;
        }
        next += (cfg.total + 31) & ~31u;
    }
    if (next > L1_BYTES) { std::fprintf(stderr, "CBs exceed the model's L1\n"); std::abort(); }
    for (const auto& g : global_sems())
        for (const auto& cc : corerange_to_cores(g.cores))
            *(std::uint32_t*)(at(cc.x, cc.y)->l1 + g.offset) = g.init;
    std::vector<std::thread> threads;
    for (auto& k : p.kernels)
        for (const auto& cc : corerange_to_cores(k.cores)) {
            Core* core = at(cc.x, cc.y);
            std::vector<std::uint32_t> rt = k.rt[{cc.x, cc.y}];
            for (std::uint32_t& v : rt)          // a global semaphore's token -> its word on this core
                if ((v & 0xFFFFF000u) == 0xF0000000u) v = addr(core->l1 + (v & 0xFFFu));
            void (*fn)() = registry().at(k.path);
            threads.emplace_back([core, rt, fn] {
                auto* c = new Ctx;
                c->core = core;
                c->rt = rt;
                for (int i = 0; i < 32; ++i) c->rd[i] = c->wr[i] = core->cb[i].base;
                ctx = c;
                fn();
                delete c;
            });
        }
    for (auto& t : threads) t.join();
}

namespace distributed {
class MeshShape { public: std::uint32_t rows = 1, cols = 1; };
class MeshCoordinateRange { public: explicit MeshCoordinateRange(const MeshShape&) {} };
class MeshCommandQueue {};
class MeshDevice : public IDevice {
public:
    MeshCommandQueue q;
    MeshShape shape_;
    static std::shared_ptr<MeshDevice> create_unit_mesh(int) { return std::make_shared<MeshDevice>(); }
    MeshCommandQueue& mesh_command_queue(std::optional<std::uint8_t> = std::nullopt) { return q; }
    CoreCoord compute_with_storage_grid_size() const { return {16, 16}; }
    CoreCoord worker_core_from_logical_core(const CoreCoord& c) const { return c; }
    const MeshShape& shape() const { return shape_; }
    bool close() { return true; }
};
struct DeviceLocalBufferConfig { std::uint64_t page_size = 0; BufferType buffer_type = BufferType::DRAM; };
struct ReplicatedBufferConfig { std::uint64_t size = 0; };
class MeshBuffer {
public:
    std::uint32_t handle = 0;
    std::uint64_t address() const { return handle; }
    static std::shared_ptr<MeshBuffer> create(const ReplicatedBufferConfig& c, const DeviceLocalBufferConfig&, MeshDevice*) {
        auto b = std::make_shared<MeshBuffer>();
        b->handle = (std::uint32_t)mica_sim::dram.size();
        mica_sim::dram.emplace_back(c.size, 0);
        return b;
    }
};
class MeshWorkload {
public:
    std::vector<Program> programs;
    void add_program(const MeshCoordinateRange&, Program&& p) { programs.push_back(std::move(p)); }
};
template <typename T> void EnqueueWriteMeshBuffer(MeshCommandQueue&, std::shared_ptr<MeshBuffer>& b, const std::vector<T>& v,
                                                  bool = false) {
    auto& d = mica_sim::dram.at(b->handle);
    if (v.size() * sizeof(T) != d.size()) { std::fprintf(stderr, "write of %zu B into a %zu B buffer\n", v.size() * sizeof(T), d.size()); std::abort(); }
    std::memcpy(d.data(), v.data(), d.size());
}
template <typename T> void EnqueueReadMeshBuffer(MeshCommandQueue&, std::vector<T>& v, std::shared_ptr<MeshBuffer>& b, bool = true) {
    auto& d = mica_sim::dram.at(b->handle);
    v.resize(d.size() / sizeof(T));
    std::memcpy(v.data(), d.data(), d.size());
}
inline void EnqueueMeshWorkload(MeshCommandQueue&, MeshWorkload& w, bool) { for (auto& p : w.programs) mica_sim_run(p); }
inline void Finish(MeshCommandQueue&) {}
}  // namespace distributed
}  // namespace tt::tt_metal
