#include "tools/cli/train_eval.hpp"

#include <cmath>

#include "rl/evaluate.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"

namespace surge::cli {

TrainEvaluator::TrainEvaluator(std::string scenario, const PhysicsConfig& physics, const rl::TrainConfig& config)
    : scenario_(std::move(scenario)),
      physics_(physics),
      every_(config.eval_every),
      episodes_(config.eval_episodes),
      seed_(config.seed),
      normalized_(config.normalize_obs),
      obs_clip_(config.obs_clip) {}

bool TrainEvaluator::due(std::int64_t iteration) const { return every_ > 0 && iteration % every_ == 0; }

EvalResult TrainEvaluator::run(const rl::Trainer& trainer, std::int64_t iteration) const {
  trainer.stream().synchronize();
  const Span<const double> moments = normalized_ ? Span<const double>(trainer.obs_moments()) : Span<const double>();
  return play(trainer.network(), trainer.parameters(), moments, trainer.config(), iteration);
}

EvalResult TrainEvaluator::run(const rl::ActorCritic& network, Span<const float> params, Span<const double> obs_moments,
                               const Stream& stream, const rl::TrainConfig& config, std::int64_t iteration) const {
  SURGE_CHECK(!normalized_ || obs_moments.size > 0, "an evaluation of a normalised policy needs its statistics");
  stream.synchronize();
  return play(network, params, normalized_ ? obs_moments : Span<const double>(), config, iteration);
}

EvalResult TrainEvaluator::play(const rl::ActorCritic& network, Span<const float> params, Span<const double> moments,
                                const rl::TrainConfig& config, std::int64_t iteration) const {
  // A seed of its own per evaluation (a splitmix64 step of the run's seed and the iteration): the
  // episodes' starts differ from one evaluation to the next and from the learner's environments.
  std::uint64_t z = seed_ + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(iteration + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  auto engine = make_engine(scenario_, params.device, episodes_, z ^ (z >> 31), physics_);
  const auto frames = make_frame_store(*engine, config.pixel_observations(), config.frame_stack, config.frame_size,
                                       config.grayscale, config.frame_stack);
  const std::vector<double> returns = rl::evaluate_policy(
      *engine, network, params, false, rl::FrozenObsNormalization{moments, obs_clip_}, {}, frames.get());
  EvalResult result;
  for (double r : returns) result.mean += r;
  result.mean /= static_cast<double>(returns.size());
  for (double r : returns) result.std += (r - result.mean) * (r - result.mean);
  result.std = std::sqrt(result.std / static_cast<double>(returns.size()));
  return result;
}

}  // namespace surge::cli
