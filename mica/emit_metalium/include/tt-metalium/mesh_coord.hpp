// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal::distributed {

// tt_metal/api/tt-metalium/mesh_coord.hpp @ 01053dfcf8061fdf7a8b25ec5fd544fea949a87a
// (a ShapeBase of any rank; here the 2-D constructor only)
class MICA_API MeshShape {
public:
    MeshShape(uint32_t x, uint32_t y);
};

// tt_metal/api/tt-metalium/mesh_coord.hpp @ 01053dfcf8061fdf7a8b25ec5fd544fea949a87a
class MICA_API MeshCoordinate {
public:
    MeshCoordinate(uint32_t x, uint32_t y);
};

// tt_metal/api/tt-metalium/mesh_coord.hpp @ 01053dfcf8061fdf7a8b25ec5fd544fea949a87a
class MICA_API MeshCoordinateRange {
public:
    MeshCoordinateRange(const MeshCoordinate& start, const MeshCoordinate& end);
    explicit MeshCoordinateRange(const MeshShape& shape);
};

}  // namespace tt::tt_metal::distributed
