#pragma once
// The learner's kernels with an agent dimension, for a batched learner of K agents (docs/batched-learner.md,
// "The pieces"). Agent k's copy of an array is at base + k * stride (PerAgent); its scalars
// come from device arrays indexed by k (hyper[k], optimizer[k], state[k], seeds[k]), never from kernel
// arguments. Each launcher is defined next to its per-agent twin (gae.cu, adam.cu, trainer_kernels.cu,
// trainer_metrics.cu, categorical.cu, gaussian.cu, mlp.cu), runs the same per-element code with k taken from
// the element index, and gives agent k the bits of the per-agent launcher on agent k's slices, on the CPU and
// on CUDA. On CUDA each is a fixed number of launches whatever K is.
#include <cstdint>

#include "rl/adam.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/learner_configs.hpp"
#include "rl/train_state.hpp"
#include "sim/device.hpp"
#include "sim/hd.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// K arrays of one layout: agent k's starts `stride` elements after agent k-1's. A [K][...] buffer has the
// stride of one agent's array; K equal arenas at a fixed distance have that distance.
template <class T>
struct PerAgent {
  T* data = nullptr;        // agent 0's array
  std::int64_t stride = 0;  // elements from one agent's array to the next
  SURGE_HD_INLINE T* operator[](std::int64_t agent) const { return data + agent * stride; }
};

// Doubles of scratch a batched reduction of `agents` segments of `width` needs on `device`
// (sim/parallel_segments.cuh's reduce_segments_scratch_size, for code that may not include it).
std::int64_t batched_reduce_scratch_doubles(Device device, std::int64_t agents, int width);

// compute_gae (rl/gae.hpp) for each agent: value [T+1][N], the others [T][N] per agent; gamma and lambda
// from hyper[k].
struct GaeBatch {
  PerAgent<const float> reward;
  PerAgent<const std::uint8_t> terminated;
  PerAgent<const std::uint8_t> truncated;
  PerAgent<const float> value;
  PerAgent<const float> final_value;
  PerAgent<float> advantage;
  PerAgent<float> returns;
};
void compute_gae_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                         const AgentHyper* hyper, const GaeBatch& batch);

// gradient_norm_sq_reference (rl/adam.hpp) for each agent: the sum of squares of grads[k][count] into
// out[k * out_stride]. scratch holds batched_reduce_scratch_doubles(device, agents, 1) doubles.
void gradient_norm_sq_batched(const Stream& stream, int agents, PerAgent<const float> grads, std::int64_t count,
                              double* scratch, double* out, std::int64_t out_stride);

// adam_step (rl/adam.hpp) for each agent, with hyper[k]'s max_grad_norm and adam_eps and optimizer[k]'s
// scalars (learning rate, frozen flag; the step's scalars are written there). The gradient norms are a
// segmented reduction (on the CPU the per-agent chunks of adam_step), then one launch sets every agent's
// scalars and one updates all K * count parameters. scratch as for gradient_norm_sq_batched.
struct AdamBatch {
  PerAgent<float> params;
  PerAgent<const float> grads;
  PerAgent<float> m;
  PerAgent<float> v;
};
void adam_step_batched(const Stream& stream, const AdamConfig& config, int agents, const AgentHyper* hyper,
                       const AdamBatch& batch, std::int64_t count, OptimizerScalars* optimizer, double* scratch);

// begin_iteration and end_epoch (rl/trainer_kernels.hpp) for each agent: state[k], optimizer[k], hyper[k];
// end_epoch reads agent k's last minibatch's loss terms at last_terms[k]. One thread per agent.
void begin_iteration_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                             OptimizerScalars* optimizer, std::int64_t num_iterations);
void end_epoch_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                       OptimizerScalars* optimizer, PerAgent<const double> last_terms, std::int64_t minibatch_size);

// explained_variance_sums (rl/trainer_kernels.hpp) for each agent, into sums[k * 4 .. k * 4 + 3]. scratch
// holds batched_reduce_scratch_doubles(device, agents, 4) doubles.
void explained_variance_sums_batched(const Stream& stream, int agents, std::int64_t slots,
                                     PerAgent<const float> returns, PerAgent<const float> value, double* scratch,
                                     double* sums);

// The episode bookkeeping and metrics (rl/trainer_kernels.hpp, defined in trainer_metrics.cu) for each agent,
// agent k's rollout being its own [T][N] arrays (one rank, first_env 0). state, optimizer and metrics are
// [K] arrays.
// track_episode_returns for each agent ([T][N] flags and rewards, [N] running, [T][N] ended).
void track_episode_returns_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                                   PerAgent<const float> reward, PerAgent<const std::uint8_t> terminated,
                                   PerAgent<const std::uint8_t> truncated, PerAgent<float> running_return,
                                   PerAgent<float> ended_return);
// count_finished for each agent over its slots = T*N. Two launches whatever K.
void count_finished_batched(const Stream& stream, int agents, std::int64_t slots,
                            PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                            PerAgent<std::int32_t> chunk_counts, PerAgent<std::int32_t> group_counts);
// newest_finished for each agent with first_env 0 and global_envs = num_envs (one rank), into candidates[k]
// (kRecentCandidateWidth doubles each; like the per-agent launcher it writes only the entries it finds).
// One thread per agent.
void newest_finished_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                             PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                             PerAgent<const float> ended_return, PerAgent<const std::int32_t> chunk_counts,
                             PerAgent<const std::int32_t> group_counts, PerAgent<double> candidates);
// push_recent_returns with ranks = 1 for each agent: candidates[k] into ring[k], state[k]. One thread per agent.
void push_recent_returns_batched(const Stream& stream, int agents, PerAgent<const double> candidates,
                                 PerAgent<double> ring, TrainState* state);
// finish_iteration for each agent: metrics[k], state[k], optimizer[k]. One thread per agent.
struct MetricsBatch {
  PerAgent<const double> episode_stats;  // [3] each
  PerAgent<const double> ring;           // [kRecentEpisodes] each
  PerAgent<const double> loss_terms;     // [epochs * minibatches][kLossTermCount] each
  PerAgent<const double> ev_sums;        // [4] each
  std::int64_t minibatches = 0;
  std::int64_t minibatch_size = 0;
  std::int64_t steps_per_iteration = 0;
};
void finish_iteration_batched(const Stream& stream, int agents, const MetricsBatch& inputs,
                              const OptimizerScalars* optimizer, TrainState* state, IterationMetrics* metrics);
// fill (rl/device_util.hpp) for each agent: values[k][0 .. count) = value in one launch, e.g. to clear every
// agent's candidates. Defined next to fill in mlp.cu.
void fill_batched(const Stream& stream, int agents, PerAgent<double> values, std::int64_t count, double value);
// Copies each agent's [count] floats from `from[k]` to `to[k]` in one launch (the trainer moves obs[T] to
// obs[0] of every agent's rollout this way): the bytes copy_bytes gives agent by agent.
void copy_batched(const Stream& stream, int agents, PerAgent<const float> from, PerAgent<float> to, std::int64_t count);

// Observation normalisation and reward scaling (rl/normalization.hpp, defined in normalization.cu) for each
// agent of one rank, its moments at moments[k] ([2*dim+1], rewards [3]) and its clips and gamma from hyper[k].
// Doubles of scratch update_moments_batched and scale_rewards_batched need for `agents` on `device`.
std::int64_t normalization_batched_scratch_doubles(Device device, int agents);
// update_moments for each agent: samples[k] [count][dim] merged into moments[k]; batch_sums[k] holds
// 2 * kMaxNormalizedDim doubles (stride at least that). A segmented reduction, then one thread per agent.
void update_moments_batched(const Stream& stream, int agents, PerAgent<const float> samples, std::int64_t count,
                            int dim, PerAgent<double> moments, PerAgent<double> batch_sums, double* scratch);
// normalize_rows for each agent: rows[k] [count][dim] in place, clipped at hyper[k].obs_clip; where the flags
// are given ([count] each), only the rows whose episode ended. One launch over K * count rows.
void normalize_rows_batched(const Stream& stream, int agents, PerAgent<float> rows, std::int64_t count, int dim,
                            PerAgent<const double> moments, const AgentHyper* hyper,
                            PerAgent<const std::uint8_t> terminated = {}, PerAgent<const std::uint8_t> truncated = {});
// scale_rewards for each agent ([T][N] rewards and flags, [N] accumulator, [T][N] scaled, [2*T] step sums),
// with hyper[k].gamma and .reward_clip. On CUDA 3 + 2 * T launches whatever K (a segmented reduction per step).
void scale_rewards_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                           const AgentHyper* hyper, PerAgent<const float> reward,
                           PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                           PerAgent<float> accumulator, PerAgent<float> scaled, PerAgent<double> moments,
                           PerAgent<double> step_sums, double* scratch);

// sample_actions (rl/categorical.hpp) for each agent, agent k's draws from seeds[k] (device) and its own
// counter: what ActionDraw{seeds[k], draw_counter[k], draws_per_count, draw, first_env} gives a solo run.
struct BatchedActionDraw {
  const std::uint64_t* seeds = nullptr;         // [K], device
  PerAgent<const std::int64_t> draw_counter{};  // agent k's counter at draw_counter[k]; data null means 0
  std::int64_t draws_per_count = 0;
  std::int64_t draw = 0;
  std::int64_t first_env = 0;
};
void sample_actions_batched(const Stream& stream, int agents, PerAgent<const float> logits, std::int64_t n,
                            int num_actions, const BatchedActionDraw& draw, bool greedy, PerAgent<std::int32_t> actions,
                            PerAgent<float> logprob);

// sample_gaussian_actions (rl/gaussian.hpp) for each agent: agent k's means [n][dims] and log std [dims]
// (its parameter slice), its draws from seeds[k] and its own counter as in sample_actions_batched; low and
// high [dims] are every agent's (one scenario's bounds). actions and logprob may have null data.
void sample_gaussian_actions_batched(const Stream& stream, int agents, PerAgent<const float> mean,
                                     PerAgent<const float> log_std, std::int64_t n, int dims, const float* low,
                                     const float* high, const BatchedActionDraw& draw, bool deterministic,
                                     PerAgent<float> actions, PerAgent<float> logprob, PerAgent<float> env_actions);

}  // namespace surge::rl
