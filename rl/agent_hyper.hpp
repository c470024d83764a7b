#pragma once
// The scalars a hyperparameter grid may vary (docs/agents.md), per agent, in a device array that the
// learner's kernels read: AgentHyper[K], agent k's entry written once when its learner is made. No such
// scalar is a kernel argument, so one CUDA graph of an iteration serves every grid point. Today a
// Trainer holds one agent (K = 1, agent 0); the batched learner makes it K.
#include <cstdint>

#include "rl/learner_configs.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

struct TrainConfig;

// All float64, so a buffer of them reads as float64 [K][14] (flags are 0 or 1). Each holds the config's
// value unrounded: a kernel that took a float before casts the double as the config's value was cast.
struct AgentHyper {
  double learning_rate;  // before annealing
  double anneal_lr;      // 1: linearly to 0 over the run
  double clip_coef;
  double ent_coef;
  double vf_coef;
  double clip_vloss;  // 1: clipped value loss
  double norm_adv;    // 1: advantages normalised within the minibatch
  double gamma;       // of GAE and of the reward scaling's discounted return
  double gae_lambda;
  double max_grad_norm;  // <= 0: no clipping
  double adam_eps;
  double target_kl;  // 0: no early stop
  double obs_clip;
  double reward_clip;
};
static_assert(sizeof(AgentHyper) == 14 * sizeof(double));
inline constexpr int kAgentHyperFields = 14;

// The grid-variable scalars of `config` (a grid point's config gives that point's values).
AgentHyper agent_hyper(const TrainConfig& config);
// The loss's scalars of `loss`, the others TrainConfig's defaults (for a loss launcher given a config).
AgentHyper loss_hyper(const PpoLossConfig& loss);
// The loss's and the optimiser's parts of `hyper`, for host code that takes a config (the CPU's fused
// update, rl/ppo_loss_fused.hpp); `adam` gives what a grid does not vary (beta1, beta2).
PpoLossConfig loss_config(const AgentHyper& hyper);
AdamConfig adam_config(const AgentHyper& hyper, const AdamConfig& adam);

// One agent's scalars in a device array of their own, for a launcher given plain values (tests, tools):
// its kernels then read them from there, as they read a trainer's. Waits for the stream when it goes, so
// no kernel still reading it outlives it.
class OwnAgentHyper {
 public:
  OwnAgentHyper(const Stream& stream, const AgentHyper& values);
  ~OwnAgentHyper() { stream_.synchronize_noexcept(); }
  OwnAgentHyper(const OwnAgentHyper&) = delete;
  OwnAgentHyper& operator=(const OwnAgentHyper&) = delete;
  const AgentHyper* get() const { return buffer_.data(); }

 private:
  const Stream& stream_;
  DeviceBuffer<AgentHyper> buffer_;
};

}  // namespace surge::rl
