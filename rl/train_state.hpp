#pragma once
// The device-resident state of a training run and the per-iteration metrics it reduces into: plain
// structs that kernels read and write, copied to the host only as a whole.
#include <cstdint>

namespace surge::rl {

struct TrainState {
  std::int64_t iteration;       // iterations completed; drives action draws, shuffles and the LR schedule
  std::int64_t epochs_applied;  // epochs of the current iteration whose updates were applied (target-KL)
  std::int64_t last100_head;    // where the ring of recent episode returns takes its next entry
  std::int64_t last100_count;   // entries in that ring (at most kRecentEpisodes)
};

// The returns the ring keeps for return_last100.
inline constexpr int kRecentEpisodes = 100;

// One row of metrics.csv less what only the host knows (wall time, SPS).
struct IterationMetrics {
  double iteration;             // 1-based
  double global_step;           // env steps taken by the end of this iteration
  double episodes;              // episodes finished during this iteration
  double episodic_return_mean;  // their mean return (NaN when none finished)
  double episodic_length_mean;
  double return_last100;   // mean return of the last 100 finished episodes (of all so far, if fewer)
  double recent_episodes;  // how many that mean covers
  double policy_loss;      // means over the minibatches whose updates were applied
  double value_loss;
  double entropy;
  double approx_kl;
  double clipfrac;
  double explained_variance;  // 1 - Var(ret - value) / Var(ret) over the rollout
  double learning_rate;       // used by this iteration's updates
  double epochs_applied;      // fewer than update_epochs when target-KL stopped the iteration
};

}  // namespace surge::rl
