// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>
#include "mica_stand_in/api_trace.h"
#include "mica_stand_in/host_types.hpp"

// tt_metal/api/tt-metalium/core_coord.hpp @ 034a7465871c529befd525a6520fe55a963ec3d9
// (UMD's tt_xy_pair: members x and y, constructor (x, y); simplified in mica_stand_in/host_types.hpp)
using CoreCoord MICA_API = tt_xy_pair;

// tt_metal/api/tt-metalium/core_coord.hpp @ 034a7465871c529befd525a6520fe55a963ec3d9
class MICA_API CoreRange {
public:
    CoreCoord start_coord;
    CoreCoord end_coord;
    CoreRange(const CoreCoord& point);
    CoreRange(const CoreCoord& start_coord, const CoreCoord& end_coord);
};

// tt_metal/api/tt-metalium/core_coord.hpp @ 034a7465871c529befd525a6520fe55a963ec3d9
class MICA_API CoreRangeSet {
public:
    CoreRangeSet(const CoreRange& core_range);
    CoreRangeSet() = default;
    CoreRangeSet(std::vector<CoreRange>&& core_ranges);
    const std::vector<CoreRange>& ranges() const;
};

// tt_metal/api/tt-metalium/core_coord.hpp @ 034a7465871c529befd525a6520fe55a963ec3d9
MICA_API std::vector<CoreCoord> corerange_to_cores(
    const CoreRangeSet& crs, std::optional<uint32_t> max_cores = std::nullopt, bool row_wise = false);

// tt_metal/api/tt-metalium/core_coord.hpp @ 034a7465871c529befd525a6520fe55a963ec3d9
namespace tt::tt_metal {
using ::CoreCoord;
using ::CoreRange;
using ::CoreRangeSet;
}  // namespace tt::tt_metal
