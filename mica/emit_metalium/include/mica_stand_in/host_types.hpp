// MICA, not tt-metal: STAND-INs for types of libraries the tt-metal host headers use (UMD, tt_stl) that MICA
// never names itself. Each is only as complete as the declarations in tt-metalium/ need.
#pragma once
#include <cstddef>
#include <cstdint>

// STAND-IN: UMD's tt_xy_pair (umd/device/types/xy_pair.hpp, not read); core_coord.hpp makes it CoreCoord.
struct tt_xy_pair {
    std::size_t x = 0;
    std::size_t y = 0;
    tt_xy_pair() = default;
    tt_xy_pair(std::size_t x_, std::size_t y_) : x(x_), y(y_) {}
};

namespace tt::umd {
// STAND-IN: UMD's CoreType (umd/device/types/core_coordinates.hpp, not read); only the default argument of
// CreateSemaphore names it.
enum class CoreType { WORKER };
}  // namespace tt::umd
using CoreType = tt::umd::CoreType;

namespace tt::tt_metal {
using DeviceAddr = std::uint64_t;  // STAND-IN: tt-metal's DeviceAddr (hal_types.hpp, not read), a uint64_t
// STAND-IN: tt-metal's IDevice (device.hpp, not read), the abstract device MeshDevice derives from; only
// CreateGlobalSemaphore's parameter names it.
class IDevice {};
}  // namespace tt::tt_metal
