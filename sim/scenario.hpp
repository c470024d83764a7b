#pragma once
// What a scenario's step returns; everything else about a scenario is its own.
#include <cstdint>

#include "sim/hd.hpp"
#include "sim/lane_math.hpp"
#include "sim/philox.hpp"
#include "sim/engine.hpp"

namespace surge {

struct StepResult {
  float reward;
  // 0 or 1. A byte rather than a bool: GCC keeps a struct whose bool a forced inline (nvcc's
  // __forceinline__) stored in memory, which stops the CPU rollout's loop over lanes from vectorising.
  std::uint8_t terminated;
};

}  // namespace surge
