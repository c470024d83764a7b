#pragma once
// Per-phase timing of PPO training: the trainer's diagnostic pass (an iteration enqueued outside the
// CUDA graph with a clock mark after every phase), repeated, medians taken phase by phase.
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "sim/device.hpp"

namespace surge::cli {

struct TrainPhaseTiming {
  std::vector<double> seconds;   // [rl::kTrainPhaseCount] median seconds of each phase per iteration
  double iteration_seconds = 0;  // median seconds of the whole diagnostic iteration
};

// Builds the engine and trainer for `config` (num_envs, num_steps and the learner's settings; its
// total_steps is filled in), runs two ordinary iterations to warm up, then `repeats` diagnostic ones.
TrainPhaseTiming time_train_phases(const std::string& scenario, Device device, rl::TrainConfig config, int repeats);

}  // namespace surge::cli
