#pragma once
// `iterations` training iterations of a trainer, and every iteration's metrics, read as surge train reads
// them (ready ones after each iteration, the rest at the end).
#include <vector>

#include "rl/trainer.hpp"

namespace surge::testing {

inline std::vector<rl::IterationMetrics> trained_metrics(rl::Trainer& trainer, int iterations) {
  std::vector<rl::IterationMetrics> metrics;
  for (int k = 0; k < iterations; ++k) {
    trainer.iterate();
    for (const auto& m : trainer.ready_metrics()) metrics.push_back(m);
  }
  for (const auto& m : trainer.drain()) metrics.push_back(m);
  return metrics;
}

}  // namespace surge::testing
