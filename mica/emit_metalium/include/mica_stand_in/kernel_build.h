// MICA, not tt-metal: STAND-INs for what the tt-metal kernel build (firmware headers, LLK, generated
// descriptors) defines around the API headers, only as complete as the declarations in api/ need. None of
// these is a name MICA's generated kernels use directly, except where noted.
#pragma once
#include <cstddef>
#include <cstdint>

#define ALWI  // STAND-IN: inline __attribute__((always_inline)) in the real build; empty for declarations

// STAND-IN: the device-side DataFormat of LLK's tensix_types.h (not read); the values are those of the
// host's tt::DataFormat (tt_metal/api/tt-metalium/tt_backend_api_types.hpp), which it replicates.
enum class DataFormat : uint8_t { Float32 = 0, Float16 = 1, Bfp8 = 2, Bfp4 = 3, Tf32 = 4, Float16_b = 5,
                                  Bfp8_b = 6, Bfp4_b = 7, Int32 = 8, UInt16 = 9, Int8 = 14, UInt32 = 24,
                                  UInt8 = 30 };

// STAND-IN: the NoC a data-movement kernel was built for (the real value comes from the kernel's
// DataMovementConfig::noc); the default of every NoC call's `noc` argument.
extern uint8_t noc_index;

// STAND-INs: constants of the NoC headers (noc_parameters.h, not read) used as default arguments.
constexpr uint32_t NOC_MAX_BURST_SIZE = 8192;
constexpr uint32_t NOC_UNICAST_WRITE_VC = 1;
constexpr uint32_t NOC_MULTICAST_WRITE_VC = 4;

// STAND-IN: hal's ProgrammableCoreType (the template argument of get_semaphore).
enum class ProgrammableCoreType { TENSIX = 0, ACTIVE_ETH = 1, IDLE_ETH = 2 };
