#pragma once
// Evaluating a policy: K environments each play one episode to its end, greedily (the most probable
// action, or a Gaussian's mean) or sampling from the policy, and the K returns come back.
#include <cstdint>
#include <functional>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/normalization.hpp"
#include "sim/engine.hpp"
#include "sim/frame_source.hpp"

namespace surge::rl {

// `engine` holds the K environments (K = engine.num_envs(), freshly reset); `params` the network's
// parameters on the engine's device ([network.table().total()]). Returns each environment's first
// episode return, in environment order. Sampling draws from the engine's seed on the Action streams.
// With observation statistics (a policy trained with normalize_obs), the policy sees observations
// normalised by them, frozen; the returns stay in raw reward units.
struct FrozenObsNormalization {
  Span<const double> moments;  // [2*obs_dim + 1] on the engine's device, or empty for none
  double clip = 10.0;
};
// `watch`, when given, is called before the first step and after every step with the returns so far and
// the flags of the environments whose first episode has ended (both [K], on the engine's device).
using EvaluationWatcher = std::function<void(Span<const double> returns, Span<const std::uint8_t> finished)>;
// A pixel policy reads its stacks from `frames`: a frame store of the engine's K environments, any number
// of rows from the stack up (rows are reused: the store is carried over whenever it is full).
std::vector<double> evaluate_policy(Engine& engine, const ActorCritic& network, Span<const float> params, bool sample,
                                    const FrozenObsNormalization& normalization = {},
                                    const EvaluationWatcher& watch = {}, FrameSource* frames = nullptr);

// Per environment: adds this step's reward to the return of its first episode until that episode ends.
void accumulate_first_episode(const Stream& stream, std::int64_t num_envs, const float* reward,
                              const std::uint8_t* terminated, const std::uint8_t* truncated, std::uint8_t* finished,
                              double* returns);

}  // namespace surge::rl
