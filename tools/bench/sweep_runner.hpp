#pragma once
// The batch-doubling sweep itself, behind `surge bench sweep` and `surge train --num-envs auto`:
// measures N = from, 2 from, ... until a doubling stops paying, the next N would not fit in memory, or
// the next N would pass `to`; then analyses the series (tools/bench/knee.hpp).
#include <cstdint>
#include <string>

#include "rl/train_config.hpp"
#include "sim/device.hpp"
#include "tools/bench/knee.hpp"
#include "tools/bench/sweep_report.hpp"

namespace surge::cli {

struct SweepSettings {
  std::string what = "env";  // "env": environment stepping; "train": PPO iterations
  std::string scenario;
  Device device = Device::cpu();
  std::string mode = "fused";      // env only: "fused" or "step"
  rl::TrainConfig train;           // train only: the learner's settings (num_envs, num_steps and seed are set per N)
  std::int64_t from = 0, to = 0;   // from a power of two, from <= to
  std::int64_t steps = 128;        // T
  std::int64_t min_env_steps = 1;  // per timed repeat
  int repeats = 5;
  std::uint64_t seed = 1;
  PhysicsSettings physics;  // on top of train.physics for --what train
  throughput::KneeRule rule;
  std::string command;   // recorded in the result
  bool progress = true;  // a line per N on stderr
};

// Throws InputError when even `from` environments do not fit in the device's free memory.
throughput::SweepResult run_sweep(const SweepSettings& settings);

}  // namespace surge::cli
