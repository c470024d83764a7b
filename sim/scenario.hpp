#pragma once
// What a scenario's step returns; everything else about a scenario is its own.
#include "sim/hd.hpp"
#include "sim/lane_math.hpp"
#include "sim/philox.hpp"
#include "sim/engine.hpp"

namespace surge {

struct StepResult {
  float reward;
  bool terminated;
};

}  // namespace surge
