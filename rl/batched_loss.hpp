#pragma once
// The minibatch gather and the PPO loss with an agent dimension, for a batched learner of K agents
// (docs/batched-learner.md, "The pieces"), in rl/batched_kernels.hpp's layout: agent k's copy of
// an array at PerAgent's base + k * stride, its scalars and seed from device arrays indexed by k. Each
// launcher is defined next to its per-agent twin (trainer_kernels.cu, ppo_loss.cu), runs the same
// per-element code with k taken from the element index, and gives agent k the bits of the per-agent
// launcher on agent k's slices. On CUDA each is a fixed number of launches whatever K is.
#include <cstdint>

#include "rl/agent_hyper.hpp"
#include "rl/batched_kernels.hpp"
#include "rl/train_state.hpp"
#include "sim/device.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// gather_minibatch (rl/trainer_kernels.hpp) for each agent: agent k's permutation is
// Permutation::make(batch_size, seeds[k], 0) (the family a solo Trainer with seed seeds[k] makes), its shuffle
// number from state[k].iteration. seeds and state are device arrays [K].
struct GatherBatch {
  PerAgent<const float> obs;                                 // agent k's [T*N][obs_dim]
  PerAgent<const std::int32_t> actions;                      // [T*N] discrete, data null when continuous
  PerAgent<const float> continuous_actions;                  // [T*N][action_dim], data null when discrete
  PerAgent<const float> logprob, value, advantage, returns;  // [T*N]
  int obs_dim = 0;
  int action_dim = 0;  // 0 when discrete
};
struct MinibatchBatch {
  PerAgent<float> obs;                                 // [B][obs_dim]
  PerAgent<std::int32_t> actions;                      // [B], null data when continuous
  PerAgent<float> continuous_actions;                  // [B][action_dim], null data when discrete
  PerAgent<float> logprob, value, advantage, returns;  // [B]
};
void gather_minibatch_batched(const Stream& stream, int agents, const std::uint64_t* seeds, std::int64_t batch_size,
                              const TrainState* state, std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch,
                              std::int64_t minibatch_size, const GatherBatch& batch, const MinibatchBatch& out);

// ppo_loss<float> (rl/ppo_loss.hpp) for each agent: hyper[k]'s scalars, agent k's minibatch, logits
// [B][num_actions] and values [B]; agent k's advantage statistics (2 doubles) at advantage_stats[k], its term
// sums (kLossTermCount doubles) at terms[k]. scratch holds ppo_loss_batched_scratch_doubles(device, agents)
// doubles. Two segmented reductions (sim/parallel_segments.cuh): the advantages' sums, then the per-sample
// loss and gradient with the term sums; on CUDA four launches whatever K.
struct LossBatch {
  std::int64_t size = 0;  // B, every agent's
  PerAgent<const std::int32_t> actions;
  PerAgent<const float> old_logprob, old_value, advantage, returns;
  PerAgent<const float> continuous_actions{};  // [B][action_dim] for a Gaussian policy (actions is then unused)
};
std::int64_t ppo_loss_batched_scratch_doubles(Device device, int agents);
void ppo_loss_batched(const Stream& stream, int agents, const AgentHyper* hyper, const LossBatch& minibatch,
                      int num_actions, PerAgent<const float> logits, PerAgent<const float> values,
                      PerAgent<double> advantage_stats, double* scratch, PerAgent<float> d_logits,
                      PerAgent<float> d_values, PerAgent<double> terms);

// gaussian_ppo_loss<float> (rl/ppo_loss.hpp) for each agent, in the same way: agent k's means
// [B][action_dim], log std [action_dim] (its parameter slice) and sampled actions
// (minibatch.continuous_actions); writes its dloss/dmeans, the per-sample terms of dloss/dlog_std
// [B][action_dim], dloss/dvalues and term sums. scratch as for ppo_loss_batched.
void gaussian_ppo_loss_batched(const Stream& stream, int agents, const AgentHyper* hyper, const LossBatch& minibatch,
                               int action_dim, PerAgent<const float> means, PerAgent<const float> log_std,
                               PerAgent<const float> values, PerAgent<double> advantage_stats, double* scratch,
                               PerAgent<float> d_means, PerAgent<float> d_log_std_rows, PerAgent<float> d_values,
                               PerAgent<double> terms);

}  // namespace surge::rl
