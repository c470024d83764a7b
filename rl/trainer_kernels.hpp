#pragma once
// The trainer's own single-source kernels (trainer_kernels.cu; the episode tracking and metrics in
// trainer_metrics.cu): bookkeeping between the learner's building blocks. Each launcher only enqueues.
#include <cstdint>

#include "rl/adam.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/shuffle.hpp"
#include "rl/train_state.hpp"
#include "sim/buffer_table.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// Sets this iteration's learning rate, lr0 * (1 - iteration / num_iterations) when annealing (CleanRL's
// schedule; lr0 and anneal_lr from hyper[agent]), thaws the optimiser and clears the epoch count. One thread.
void begin_iteration(const Stream& stream, const AgentHyper* hyper, int agent, TrainState* state,
                     OptimizerScalars* optimizer, std::int64_t num_iterations);

// values[count] *= factor (the ranks' summed gradients into their mean).
void scale_values(const Stream& stream, float* values, std::int64_t count, float factor);

// Rollout fields of the whole batch, flat over [T][N] (sample s = t * N + n).
struct BatchView {
  const float* obs;                 // [T*N][obs_dim]
  const std::int32_t* actions;      // [T*N] discrete, or null
  const float* continuous_actions;  // [T*N][action_dim] continuous, or null
  const float* logprob;
  const float* value;
  const float* advantage;
  const float* returns;
  int obs_dim;
  int action_dim;  // 0 when discrete
};
// Minibatch buffers the gather fills.
struct MinibatchBuffers {
  float* obs;                 // [B][obs_dim]
  std::int32_t* actions;      // [B] discrete, or null
  float* continuous_actions;  // [B][action_dim] continuous, or null
  float* logprob;
  float* value;
  float* advantage;
  float* returns;
};

// Copies minibatch `minibatch` of epoch `epoch` into contiguous rows: sample j is batch sample
// permutation(minibatch * B + j), the permutation being shuffle number iteration * epochs + epoch.
void gather_minibatch(const Stream& stream, const Permutation& permutation, const TrainState* state,
                      std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch, std::int64_t minibatch_size,
                      const BatchView& batch, const MinibatchBuffers& out);

// After an epoch: counts it as applied unless the optimiser was frozen, then freezes the optimiser for
// the rest of the iteration when target_kl (hyper[agent]'s) > 0 and the epoch's last minibatch had approx_kl
// above it (CleanRL's check). last_terms are that minibatch's loss term sums. One thread.
void end_epoch(const Stream& stream, const AgentHyper* hyper, int agent, TrainState* state, OptimizerScalars* optimizer,
               const double* last_terms, std::int64_t minibatch_size);

// Per environment over the rollout: adds rewards to its running return and, where an episode ends,
// writes the finished return into ended_return[t][n] and starts again at 0.
void track_episode_returns(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const float* reward,
                           const std::uint8_t* terminated, const std::uint8_t* truncated, float* running_return,
                           float* ended_return);

// The buffers of the per-environment episode tracking and the ring of recent returns, entries of one
// learner's buffer table (Trainer's, or each agent's of rl/batched_trainer.hpp); `ranks` lists of candidates.
struct EpisodeBuffers {
  Slot<float> running_return, ended_return;
  Slot<std::int32_t> chunk_counts, group_counts;
  Slot<double> recent_returns, recent_candidates;
};
void add_episode_buffers(BufferTable& table, std::int64_t num_steps, std::int64_t num_envs, int ranks,
                         EpisodeBuffers& b);

// The minibatch the gather fills ([B] rows: observations, actions, and logprob, value, advantage and return
// side by side in `fields`) and each minibatch's loss term sums, entries of one learner's buffer table;
// actions are discrete or [B][action_dim] continuous (the other slot left empty).
struct MinibatchSlots {
  Slot<float> obs, continuous_actions, fields;
  Slot<std::int32_t> actions;
  Slot<double> loss_terms;
};
void add_minibatch_buffers(BufferTable& table, std::int64_t minibatch_size, int obs_dim, int action_dim,
                           bool continuous, std::int64_t minibatches, MinibatchSlots& b);

// Two-level counts of ended episodes over the [T*N] slots, for finding the latest ones quickly:
// chunk_counts[c] over slots [c*kChunk, (c+1)*kChunk), group_counts[g] over chunks [g*kChunk, ...).
inline constexpr std::int64_t kFinishedChunk = 256;
std::int64_t finished_chunk_count(std::int64_t slots);
std::int64_t finished_group_count(std::int64_t slots);
void count_finished(const Stream& stream, std::int64_t slots, const std::uint8_t* terminated,
                    const std::uint8_t* truncated, std::int32_t* chunk_counts, std::int32_t* group_counts);

// The ring of the last kRecentEpisodes finished returns, over the environments of every rank, in two
// kernels with a sum across ranks between them. An episode's key orders it: it ended at step t of
// global environment e, key t * global_envs + e + 1 (later steps are more recent; within a step, higher
// environment indices count as later); 0 marks an empty entry.
inline constexpr std::int64_t kRecentCandidateWidth = 2 * kRecentEpisodes;  // [100][key, return]
// Writes this rank's newest kRecentEpisodes finished episodes, newest first, as (key, return) pairs into
// candidates[kRecentCandidateWidth]; the rest of it stays as it was (zero). The rollout's environments are
// global environments first_env .. first_env + num_envs - 1 of global_envs. One thread.
void newest_finished(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, std::int64_t first_env,
                     std::int64_t global_envs, const std::uint8_t* terminated, const std::uint8_t* truncated,
                     const float* ended_return, const std::int32_t* chunk_counts, const std::int32_t* group_counts,
                     double* candidates);
// Merges the `ranks` lists of candidates[ranks][kRecentCandidateWidth] by key and pushes the newest
// kRecentEpisodes of them, oldest first, into the ring. One thread.
void push_recent_returns(const Stream& stream, const double* candidates, int ranks, double* ring, TrainState* state);

// Sums of ret, ret^2, ret - value and (ret - value)^2 over the batch, into sums[4].
void explained_variance_sums(const Stream& stream, std::int64_t slots, const float* returns, const float* value,
                             double* scratch, double* sums);

struct MetricsInputs {
  const double* episode_stats;       // [3] episodes, return sum, length sum (Engine::reduce_episode_stats)
  const double* ring;                // [kRecentEpisodes]
  const double* loss_terms;          // [epochs * minibatches][kLossTermCount]
  const double* ev_sums;             // [4]
  std::int64_t minibatches;          // per epoch
  std::int64_t minibatch_size;       // over every rank
  std::int64_t steps_per_iteration;  // T * N over every rank
};

// Writes the iteration's metrics and advances state->iteration. One thread.
void finish_iteration(const Stream& stream, const MetricsInputs& inputs, const OptimizerScalars* optimizer,
                      TrainState* state, IterationMetrics* metrics);

}  // namespace surge::rl
