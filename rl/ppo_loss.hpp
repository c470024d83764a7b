#pragma once
// The PPO loss of one minibatch and its gradient with respect to the networks' outputs (logits, or a
// Gaussian's means and log standard deviations, and values), as CleanRL's ppo.py defines it: clipped surrogate, clipped
// value loss, entropy bonus, and advantages normalised within the minibatch.
#include <cstdint>

#include "rl/agent_hyper.hpp"
#include "rl/learner_configs.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

class Collective;

// One minibatch, gathered into contiguous rows on the device.
template <class Scalar>
struct MinibatchView {
  std::int64_t size = 0;
  const Scalar* obs = nullptr;                 // [B][obs_dim]
  const std::int32_t* actions = nullptr;       // [B]
  const Scalar* old_logprob = nullptr;         // [B] log pi_old(a|s) from the rollout
  const Scalar* old_value = nullptr;           // [B] V_old(s) from the rollout
  const Scalar* advantage = nullptr;           // [B]
  const Scalar* returns = nullptr;             // [B]
  const Scalar* continuous_actions = nullptr;  // [B][action_dim] for a Gaussian policy (actions is then unused)
  const std::uint8_t* frames = nullptr;        // pixel policies: [B][H][W][stack * C] (obs is then unused)
};

// Sums over the minibatch that ppo_loss() leaves in terms[kLossTermCount] (divide by B for means).
enum LossTerm : int { kPolicyLoss = 0, kValueLoss, kEntropy, kApproxKl, kClipFraction, kLossTermCount };

// Per sample (advantage a normalised as (a - mean) / (std + 1e-8) when norm_adv, std unbiased):
//   ratio = exp(logp - old_logp)
//   policy = max(-a ratio, -a clip(ratio, 1-c, 1+c))
//   value  = 0.5 max((v - R)^2, (old_v + clip(v - old_v, -c, c) - R)^2)   (0.5 (v - R)^2 without clip_vloss)
//   loss   = mean(policy) - ent_coef mean(entropy) + vf_coef mean(value)
// Writes dloss/dlogits [B][num_actions] and dloss/dvalues [B], and the sums of policy, value, entropy,
// approx_kl ((ratio - 1) - log ratio) and clip fraction (|ratio - 1| > c) into terms. All device pointers;
// scratch holds reduce_scratch_size(device, 2 and kLossTermCount) doubles, advantage_stats 2 doubles.
// With `ranks` (data parallelism) the minibatch is the union of every rank's: the advantages are
// normalised by the mean and std over all of them (the term sums and the gradient stay this rank's).
// c, ent_coef, vf_coef, clip_vloss and norm_adv are hyper[agent]'s (device memory; rl/agent_hyper.hpp);
// the advantage sums are taken whether norm_adv is on or not, since the host does not know.
template <class Scalar>
void ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks = nullptr);
// The same with config's scalars (put in a device array of their own; waits).
template <class Scalar>
void ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
              int num_actions, const Scalar* logits, const Scalar* values, double* advantage_stats, double* scratch,
              Scalar* d_logits, Scalar* d_values, double* terms, const Collective* ranks = nullptr);

// The same loss for a diagonal Gaussian policy: means [B][action_dim] from the actor, log_std
// [action_dim] (a parameter slice), the sampled actions in minibatch.continuous_actions. Writes
// dloss/dmeans [B][action_dim], the per-sample terms of dloss/dlog_std into d_log_std_rows
// [B][action_dim] (their column sums are the gradient), dloss/dvalues [B] and the term sums.
template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const AgentHyper* hyper, int agent, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks = nullptr);
template <class Scalar>
void gaussian_ppo_loss(const Stream& stream, const PpoLossConfig& config, const MinibatchView<Scalar>& minibatch,
                       int action_dim, const Scalar* means, const Scalar* log_std, const Scalar* values,
                       double* advantage_stats, double* scratch, Scalar* d_means, Scalar* d_log_std_rows,
                       Scalar* d_values, double* terms, const Collective* ranks = nullptr);

// The scalar loss from the term sums of a minibatch of `batch` samples (host).
double total_loss(const PpoLossConfig& config, const double* term_sums, std::int64_t batch);

}  // namespace surge::rl
