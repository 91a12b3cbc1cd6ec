// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include "mica_stand_in/api_trace.h"

namespace tt::tt_metal {

// tt_metal/api/tt-metalium/program.hpp @ 00e257450c719c676536edce539b7179d2085eb9 (move-only)
class MICA_API Program {
public:
    Program();
    ~Program() noexcept;
    Program(const Program& other) = delete;
    Program& operator=(const Program& other) = delete;
    Program(Program&& other) noexcept;
    Program& operator=(Program&& other) noexcept;
};

}  // namespace tt::tt_metal
