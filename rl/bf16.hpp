#pragma once
// bf16 rounding for both backends: fp32 to bf16 (round to nearest, ties to even; a NaN stays a quiet
// NaN), as the raw 16 bits. Without a branch, so that loops of it vectorise on the CPU.
#include <cstdint>
#include <cstring>

#include "sim/hd.hpp"

namespace surge::rl {

SURGE_HD_INLINE std::uint32_t rounded_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  // Adding 0x7fff, plus 1 when the kept part is odd, carries into it exactly when it should round up.
  const std::uint32_t nearest = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return (bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u : nearest;
}

}  // namespace surge::rl
