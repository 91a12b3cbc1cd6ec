// Declarations read from tenstorrent/tt-metal (see ../README.md): the subset MICA emits.
#pragma once
#include <cstdint>
#include <type_traits>
#include "mica_stand_in/api_trace.h"

// tt_metal/api/tt-metalium/bfloat16.hpp @ 02406b25738c0231a1c38e259f8b876defff2a57
// (the host's bfloat16: one uint16_t; the converting constructor, constrained there with the C++20
// `requires std::is_arithmetic_v<T>`, takes the same constraint as enable_if here for the C++17 check; it
// rounds to nearest even. The widening conversion to float. `constexpr` is dropped, as these are
// declarations without bodies (and C++17 allows no constexpr default constructor leaving the member
// uninitialised); the arithmetic operators MICA never uses are left out.)
class MICA_API bfloat16 {
private:
    uint16_t uint16_data;
public:
    bfloat16() = default;
    template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
    MICA_API bfloat16(T v) noexcept;
    MICA_API operator float() const;
};
