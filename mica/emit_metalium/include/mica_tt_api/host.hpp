// Host API subset (tt_metal/host_api.hpp, device.hpp, work_split.hpp) of tt-metal v0.55.0: declarations
// written from the documentation by the MICA authors, for the g++ -fsyntax-only check of host.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tt {
enum class DataFormat : std::uint8_t { Float32 = 0, Float16 = 1, Bfp8 = 2, Bfp4 = 3, Float16_b = 5, Bfp8_b = 6,
                                       Bfp4_b = 7, Int32 = 8, UInt16 = 9, Int8 = 14, UInt32 = 24 };
enum CBIndex : std::uint8_t {
    c_0 = 0, c_1, c_2, c_3, c_4, c_5, c_6, c_7, c_8, c_9, c_10, c_11, c_12, c_13, c_14, c_15,
    c_16, c_17, c_18, c_19, c_20, c_21, c_22, c_23, c_24, c_25, c_26, c_27, c_28, c_29, c_30, c_31
};
}  // namespace tt

enum class MathFidelity : std::uint8_t { LoFi = 0, HiFi2 = 2, HiFi3 = 3, HiFi4 = 4 };

namespace tt::tt_metal {
struct CoreCoord {
    std::size_t x = 0;
    std::size_t y = 0;
    CoreCoord();
    CoreCoord(std::size_t x, std::size_t y);
};
struct CoreRange {
    CoreCoord start_coord;
    CoreCoord end_coord;
    CoreRange(const CoreCoord& start, const CoreCoord& end);
};
class CoreRangeSet {
public:
    explicit CoreRangeSet(const std::vector<CoreRange>& ranges);
    explicit CoreRangeSet(const CoreRange& range);
};
std::vector<CoreCoord> corerange_to_cores(const CoreRangeSet& crs, std::optional<std::uint32_t> max_cores = std::nullopt,
                                          bool row_wise = false);

class CommandQueue;
class IDevice {
public:
    CommandQueue& command_queue(std::size_t cq_id = 0);
    CoreCoord compute_with_storage_grid_size() const;
    CoreCoord worker_core_from_logical_core(const CoreCoord& logical_core) const;
};
IDevice* CreateDevice(int device_id, std::uint8_t num_hw_cqs = 1, std::size_t l1_small_size = 0,
                      std::size_t trace_region_size = 0);
bool CloseDevice(IDevice* device);

class Program {
public:
    Program();
};
Program CreateProgram();

enum class BufferType { DRAM, L1, SYSTEM_MEMORY, L1_SMALL, TRACE };
struct InterleavedBufferConfig {
    IDevice* device;
    std::uint64_t size;
    std::uint64_t page_size;
    BufferType buffer_type;
};
class Buffer {
public:
    std::uint32_t address() const;
};
std::shared_ptr<Buffer> CreateBuffer(const InterleavedBufferConfig& config);

class CircularBufferConfig {
public:
    CircularBufferConfig(std::uint32_t total_size, const std::map<std::uint8_t, tt::DataFormat>& data_format_spec);
    CircularBufferConfig& set_page_size(std::uint8_t buffer_index, std::uint32_t page_size);
};
using CBHandle = std::uintptr_t;
using CoreSpec = std::variant<CoreCoord, CoreRange, CoreRangeSet>;
CBHandle CreateCircularBuffer(Program& program, const CoreSpec& core_spec, const CircularBufferConfig& config);
std::uint32_t CreateSemaphore(Program& program, const std::variant<CoreRange, CoreRangeSet>& core_spec,
                              std::uint32_t initial_value);

enum class DataMovementProcessor { RISCV_0 = 0, RISCV_1 = 1 };
enum NOC : std::uint8_t { RISCV_0_default = 0, RISCV_1_default = 1, NOC_0 = 0, NOC_1 = 1 };
struct DataMovementConfig {
    DataMovementProcessor processor = DataMovementProcessor::RISCV_0;
    NOC noc = NOC::RISCV_0_default;
    std::vector<std::uint32_t> compile_args;
    std::map<std::string, std::string> defines;
};
struct ComputeConfig {
    MathFidelity math_fidelity = MathFidelity::HiFi4;
    bool fp32_dest_acc_en = false;
    bool dst_full_sync_en = false;
    bool math_approx_mode = false;
    std::vector<std::uint32_t> compile_args;
    std::map<std::string, std::string> defines;
};
using KernelHandle = std::uint32_t;
KernelHandle CreateKernel(Program& program, const std::string& file_name, const CoreSpec& core_spec,
                          const std::variant<DataMovementConfig, ComputeConfig>& config);
void SetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreCoord& core,
                    std::initializer_list<std::uint32_t> runtime_args);

using BufferRef = std::variant<std::reference_wrapper<Buffer>, std::shared_ptr<Buffer>>;
template <typename DType>
void EnqueueWriteBuffer(CommandQueue& cq, BufferRef buffer, std::vector<DType>& src, bool blocking);
template <typename DType>
void EnqueueReadBuffer(CommandQueue& cq, BufferRef buffer, std::vector<DType>& dst, bool blocking);
void EnqueueProgram(CommandQueue& cq, Program& program, bool blocking);
void Finish(CommandQueue& cq);
}  // namespace tt::tt_metal
