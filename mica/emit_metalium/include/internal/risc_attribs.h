// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once

// tt_metal/hw/inc/internal/risc_attribs.h @ 4b4c337e8ddbfebbe0fd4befa0a274f1ef407a19
// (there: __attribute__((rvtt_l1_ptr)), an attribute of the RISC-V compiler; empty for the host g++)
#define tt_l1_ptr

// tt_metal/hw/inc/internal/risc_attribs.h @ 4b4c337e8ddbfebbe0fd4befa0a274f1ef407a19
// (there: inline __attribute__((always_inline)); empty here, where the functions are declarations without
// bodies and `inline` would only make g++ warn that they are never defined)
#define FORCE_INLINE
