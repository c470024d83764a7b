#pragma once
// The measurement behind `surge bench sweep --what train`: whole PPO iterations (rollout, GAE,
// updates) of N environments, as `surge train` runs them (a CUDA graph on the GPU), timed over repeats.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "sim/device.hpp"
#include "sim/memory_plan.hpp"

namespace surge::cli {

struct TrainBenchConfig {
  std::string scenario;
  Device device = Device::cpu();
  rl::TrainConfig train;                   // num_envs and num_steps set; total_steps is filled in
  int repeats = 1;                         // timed repeats; the median is reported
  std::int64_t iterations_per_repeat = 1;  // iterations back to back within one timed repeat
};

struct TrainBenchRun {
  std::vector<double> rates;  // env-steps/s of each timed repeat, updates included
  double rate = 0;            // their median
  bool graph = false;         // iterations replayed a CUDA graph
};

// Builds the engine and trainer, runs two untimed iterations (the eager one and the graph's capture),
// then times the repeats, each ending when the device has finished. The caller checks first that
// train_bench_memory_plan() fits.
TrainBenchRun run_train_bench(const TrainBenchConfig& config);

// The engine's and the trainer's buffers.
MemoryPlan train_bench_memory_plan(const TrainBenchConfig& config);

}  // namespace surge::cli
