#pragma once
// What a scenario header includes, and all it needs from the engine: what a step returns, the two lists
// a scenario writes once (its state's fields and its physics parameters), Rng, the lane_* sines and
// cosines, and <array>, <cmath> and <cstdint>. Everything else about a scenario is its own.
#include <array>
#include <cmath>
#include <cstdint>

#include "sim/engine.hpp"
#include "sim/hd.hpp"
#include "sim/lane_math.hpp"
#include "sim/philox.hpp"

namespace surge {

struct StepResult {
  float reward;
  // 0 or 1. A byte rather than a bool: GCC keeps a struct whose bool a forced inline (nvcc's
  // __forceinline__) stored in memory, which stops the CPU rollout's loop over lanes from vectorising.
  std::uint8_t terminated;
};

}  // namespace surge

// A scenario's state, from one list of field names: `struct State` with one float per name, and
// `kStateNames` with the names, in the same order (`surge step` reads s_<name> and writes next_<name>).
// One list, so the names cannot drift from the fields:
//   SURGE_SCENARIO_STATE(x, x_dot, theta, theta_dot);
#define SURGE_SCENARIO_STATE(...)                                \
  struct State {                                                 \
    SURGE_DETAIL_FOR_EACH(SURGE_DETAIL_STATE_FIELD, __VA_ARGS__) \
  };                                                             \
  static constexpr auto kStateNames =                            \
      std::to_array<const char*>({SURGE_DETAIL_FOR_EACH(SURGE_DETAIL_STATE_NAME, __VA_ARGS__)})

// A scenario's physics parameters, from their type (float, or double where the reference data demands
// it) and one list of (name, default, smallest sensible value) entries: `ParamType`, `struct Params`
// with one ParamType per entry, and `kParams` with each entry's name, default and smallest value, in
// the same order. Defaults and smallest values are written as double literals; kParams holds them
// rounded to ParamType, as the parameters are:
//   SURGE_SCENARIO_PARAMS(float,
//                         (gravity, 10.0, 0.0),
//                         (mass, 1.0, 1e-6));
#define SURGE_SCENARIO_PARAMS(TYPE, ...)                         \
  using ParamType = TYPE;                                        \
  struct Params {                                                \
    SURGE_DETAIL_FOR_EACH(SURGE_DETAIL_PARAM_FIELD, __VA_ARGS__) \
  };                                                             \
  static constexpr auto kParams =                                \
      std::to_array<::surge::ParamInfo>({SURGE_DETAIL_FOR_EACH(SURGE_DETAIL_PARAM_INFO, __VA_ARGS__)})

#define SURGE_DETAIL_STATE_FIELD(name) float name;
#define SURGE_DETAIL_STATE_NAME(name) #name,
#define SURGE_DETAIL_PARAM_FIELD(entry) SURGE_DETAIL_PARAM_FIELD_OF entry
#define SURGE_DETAIL_PARAM_FIELD_OF(name, default_value, min_value) ParamType name;
#define SURGE_DETAIL_PARAM_INFO(entry) SURGE_DETAIL_PARAM_INFO_OF entry
#define SURGE_DETAIL_PARAM_INFO_OF(name, default_value, min_value)                      \
  ::surge::ParamInfo{#name, static_cast<double>(static_cast<ParamType>(default_value)), \
                     static_cast<double>(static_cast<ParamType>(min_value))},

// SURGE_DETAIL_FOR_EACH(M, a, b, c) is M(a) M(b) M(c): each step defers the next past one rescan, and
// SURGE_DETAIL_EXPAND rescans more than 64 times, more than the 32 parameters a scenario may have.
#define SURGE_DETAIL_FOR_EACH(macro, ...) \
  __VA_OPT__(SURGE_DETAIL_EXPAND(SURGE_DETAIL_FOR_EACH_STEP(macro, __VA_ARGS__)))
#define SURGE_DETAIL_FOR_EACH_STEP(macro, first, ...) \
  macro(first) __VA_OPT__(SURGE_DETAIL_FOR_EACH_AGAIN SURGE_DETAIL_PARENS(macro, __VA_ARGS__))
#define SURGE_DETAIL_FOR_EACH_AGAIN() SURGE_DETAIL_FOR_EACH_STEP
#define SURGE_DETAIL_PARENS ()
#define SURGE_DETAIL_EXPAND(...) \
  SURGE_DETAIL_EXPAND3(SURGE_DETAIL_EXPAND3(SURGE_DETAIL_EXPAND3(SURGE_DETAIL_EXPAND3(__VA_ARGS__))))
#define SURGE_DETAIL_EXPAND3(...) \
  SURGE_DETAIL_EXPAND2(SURGE_DETAIL_EXPAND2(SURGE_DETAIL_EXPAND2(SURGE_DETAIL_EXPAND2(__VA_ARGS__))))
#define SURGE_DETAIL_EXPAND2(...) \
  SURGE_DETAIL_EXPAND1(SURGE_DETAIL_EXPAND1(SURGE_DETAIL_EXPAND1(SURGE_DETAIL_EXPAND1(__VA_ARGS__))))
#define SURGE_DETAIL_EXPAND1(...) __VA_ARGS__
