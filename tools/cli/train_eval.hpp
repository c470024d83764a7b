#pragma once
// Evaluation during training (config keys eval_every, eval_episodes): every eval_every iterations,
// eval_episodes greedy episodes of the current policy, one per environment of an engine of their own,
// so the learner's environments, random streams and results are untouched. Each evaluation's engine is
// seeded from the run's seed and the iteration, so a resumed run evaluates exactly as the whole one.
#include <cstdint>
#include <string>

#include "rl/trainer.hpp"
#include "sim/engine.hpp"

namespace surge::cli {

struct EvalResult {
  double mean = 0.0, std = 0.0;  // over the episodes' returns (std: population)
};

class TrainEvaluator {
 public:
  TrainEvaluator(std::string scenario, const PhysicsConfig& physics, const rl::TrainConfig& config);
  // Whether iteration `iteration` (numbered from 1) ends with an evaluation.
  bool due(std::int64_t iteration) const;
  // Waits for the trainer's work so far, then plays the episodes with its parameters.
  EvalResult run(const rl::Trainer& trainer, std::int64_t iteration) const;
  // The same for a policy given as its network, parameters and observation statistics (an agent of the
  // batched learner; the statistics empty where its config does not normalise); waits for `stream` first.
  EvalResult run(const rl::ActorCritic& network, Span<const float> params, Span<const double> obs_moments,
                 const Stream& stream, const rl::TrainConfig& config, std::int64_t iteration) const;

 private:
  EvalResult play(const rl::ActorCritic& network, Span<const float> params, Span<const double> moments,
                  const rl::TrainConfig& config, std::int64_t iteration) const;
  std::string scenario_;
  PhysicsConfig physics_;
  std::int64_t every_, episodes_;
  std::uint64_t seed_;
  bool normalized_;
  double obs_clip_;
};

}  // namespace surge::cli
