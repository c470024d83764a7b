#pragma once
// surge train --num-envs auto: the number of environments a short training sweep on this device
// recommends (the smallest N within 90% of the best training throughput; docs/throughput.md).
#include <cstdint>
#include <string>

#include "rl/train_config.hpp"
#include "sim/device.hpp"

namespace surge::cli {

struct AutoNumEnvs {
  std::int64_t num_envs = 0;
  std::string summary;  // one line: what was measured and why this N
};

// Sweeps N from 1024 (CUDA) or 16 (CPU) upward with `config`'s learner settings and rollout length,
// one short timed repeat set per N, and returns the recommendation.
AutoNumEnvs recommend_num_envs(const std::string& scenario, Device device, const rl::TrainConfig& config);

}  // namespace surge::cli
