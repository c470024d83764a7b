#pragma once
// What a scenario header includes, and all it needs from the engine: what a step returns, the two lists
// a scenario writes once (its state's fields and its physics parameters), Rng, the lane_* sines and
// cosines, and <array>, <cmath> and <cstdint>. Everything else about a scenario is its own.
#include <array>
#include <cmath>
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

// A scenario's state, from one list FIELDS(X) of X(name) entries: `struct State` with one float per
// entry, and `kStateNames` with their names, in the same order (`surge step` reads s_<name> and writes
// next_<name>). One list, so the names cannot drift from the fields:
//   #define SURGE_CARTPOLE_STATE(X) X(x) X(x_dot) X(theta) X(theta_dot)
//   SURGE_SCENARIO_STATE(SURGE_CARTPOLE_STATE)
#define SURGE_SCENARIO_STATE(FIELDS)                    \
  struct State {                                        \
    FIELDS(SURGE_DETAIL_STATE_FIELD)                    \
  };                                                    \
  static constexpr auto kStateNames = std::to_array<const char*>({FIELDS(SURGE_DETAIL_STATE_NAME)})
#define SURGE_DETAIL_STATE_FIELD(name) float name;
#define SURGE_DETAIL_STATE_NAME(name) #name,

// A scenario's physics parameters, from one list FIELDS(X) of X(name, default, smallest sensible value)
// entries: `ParamType` (float, or double where the reference data demands it), `struct Params` with one
// ParamType per entry, and `kParams` with each entry's name, default and smallest value, in the same order:
//   #define SURGE_PENDULUM_PARAMS(X) X(gravity, 10.0, 0.0) X(mass, 1.0, 1e-6) ...
//   SURGE_SCENARIO_PARAMS(float, SURGE_PENDULUM_PARAMS)
// Defaults and smallest values are written as double literals; kParams holds them rounded to ParamType.
#define SURGE_SCENARIO_PARAMS(TYPE, FIELDS)             \
  using ParamType = TYPE;                               \
  struct Params {                                       \
    FIELDS(SURGE_DETAIL_PARAM_FIELD)                    \
  };                                                    \
  static constexpr auto kParams = std::to_array<::surge::ParamInfo>({FIELDS(SURGE_DETAIL_PARAM_INFO)})
#define SURGE_DETAIL_PARAM_FIELD(name, default_value, min_value) ParamType name;
#define SURGE_DETAIL_PARAM_INFO(name, default_value, min_value)                                                 \
  ::surge::ParamInfo{#name, static_cast<double>(static_cast<ParamType>(default_value)),                       \
                     static_cast<double>(static_cast<ParamType>(min_value))},
