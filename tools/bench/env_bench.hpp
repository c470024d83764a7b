#pragma once
// The measurement behind `surge bench env` and `surge bench sweep --what env`: N environments of a
// scenario stepped T times with random actions drawn on the device, writing [T][N] rollout buffers,
// timed over repeats.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/device.hpp"
#include "sim/engine.hpp"
#include "sim/memory_plan.hpp"

namespace surge::cli {

struct EnvBenchConfig {
  std::string scenario;
  Device device = Device::cpu();
  std::int64_t num_envs = 0;
  std::int64_t steps = 0;                // T of each rollout
  int repeats = 1;                       // timed repeats; the median is reported
  std::int64_t rollouts_per_repeat = 1;  // rollouts run back to back within one timed repeat
  bool step_mode = false;                // one launch per step with actions in a buffer; else fused
  std::uint64_t seed = 1;
  PhysicsConfig physics;       // empty: the scenario's defaults
  bool show_progress = false;  // a line on stderr that each repeat rewrites
};

// A measurement of `num_envs` x `steps` over `repeats`, everything else at its default.
EnvBenchConfig env_bench_config(const std::string& scenario, Device device, std::int64_t num_envs, std::int64_t steps,
                                int repeats, std::uint64_t seed);

// How many batches of `num_envs` x `steps` env-steps run back to back so that a timed repeat holds at
// least `min_env_steps`: enough to be well above the clock's resolution.
std::int64_t batches_for(std::int64_t min_env_steps, std::int64_t num_envs, std::int64_t steps);

struct EnvBenchRun {
  std::vector<double> rates;      // env-steps/s of each timed repeat
  double rate = 0;                // their median
  EpisodeStats episodes;          // finished during the timed repeats
  std::size_t engine_bytes = 0;   // the engine's device memory
  std::size_t rollout_bytes = 0;  // the [T][N] rollout buffers
  std::string physics;            // the randomised physics, in words
};

// Builds the engine and buffers, warms up with one untimed rollout, then times the repeats. The
// caller checks first that env_bench_memory_plan() fits.
EnvBenchRun run_env_bench(const EnvBenchConfig& config);

// The engine and the buffers run_env_bench allocates.
MemoryPlan env_bench_memory_plan(const EnvBenchConfig& config);

double median(std::vector<double> values);

}  // namespace surge::cli
