#pragma once
// What `surge bench env` allocates, and its memory plan, side by side so that the two agree.
#include <cstddef>
#include <cstdint>

#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"

namespace surge::cli {

// The buffers the benchmark writes besides the engine's own: T steps laid out as a rollout, and in
// step mode one step's actions.
struct EnvBenchBuffers {
  DeviceBuffer<float> obs;                      // [T][N][obs_dim]
  DeviceBuffer<float> reward;                   // [T][N]
  DeviceBuffer<std::uint8_t> terminated;        // [T][N]
  DeviceBuffer<std::uint8_t> truncated;         // [T][N]
  DeviceBuffer<std::int32_t> discrete_actions;  // [N] in step mode, discrete scenarios
  DeviceBuffer<float> continuous_actions;       // [N][action_dim] in step mode, continuous scenarios

  EnvBenchBuffers(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps, bool step_mode);
  static MemoryPlan plan(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps,
                         bool step_mode);
  std::size_t bytes() const;
};

// Bytes per buffer of the copy-bandwidth measurement that runs alongside (it holds two).
std::size_t bench_copy_bytes(const ScenarioSpec& spec, std::int64_t num_envs, std::int64_t steps);

// Everything the benchmark holds at its peak: the engine, the buffers above and the copy pair.
MemoryPlan bench_env_memory_plan(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps,
                                 bool step_mode);

}  // namespace surge::cli
