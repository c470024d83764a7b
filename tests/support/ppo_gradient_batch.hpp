#pragma once
// What the PPO gradient tests build their minibatches from: standard normal draws, and rollout-time
// log-probabilities, values and returns placed so that ratios and value steps fall both inside and
// well outside the clip range (0.2), never near its edges, where the loss has kinks.
#include <cmath>
#include <cstdint>

#include "sim/philox.hpp"

namespace surge::testing {

inline double normal(Rng& rng) {
  const double u1 = rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

struct RolloutEstimates {
  double old_logprob, old_value, returns;
};

// Sample i's, given its log-probability and value under the current parameters.
inline RolloutEstimates around_the_clip_range(std::int64_t i, double logp, double value) {
  const double log_ratio_offsets[] = {-0.6, -0.1, 0.05, 0.12, 0.5, -0.35};
  const double value_steps[] = {-0.9, -0.05, 0.1, 0.7};
  return {logp - log_ratio_offsets[i % 6], value - value_steps[i % 4],
          value + (i % 3 == 0 ? 1.5 : -0.8) * value_steps[(i + 1) % 4]};
}

}  // namespace surge::testing
