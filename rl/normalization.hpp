#pragma once
// Observation normalisation and reward scaling on the device, with the semantics of Gymnasium's
// vector NormalizeObservation and NormalizeReward wrappers (same-step auto-reset) and their
// RunningMeanStd: running moments start at mean 0, variance 1, count 1e-4; each batch's mean and
// population variance are merged with Chan's parallel formula; values are divided by
// sqrt(variance + 1e-8). Normalised observations and scaled rewards are then clipped to +-clip.
// Every launcher only enqueues: nothing waits for the device, so all of it can be captured in a graph.
#include <cstdint>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/learner_configs.hpp"
#include "sim/buffer_table.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

class Collective;

inline constexpr double kMomentsInitialCount = 1e-4;   // RunningMeanStd's epsilon
inline constexpr double kNormalizationEpsilon = 1e-8;  // under the square root of the divisor
// The widest sample normalize_obs handles: the batch sums are one fixed-width reduction.
inline constexpr int kMaxNormalizedDim = 8;

// Running moments of dim-dimensional samples live in [2*dim + 1] doubles: mean[dim], var[dim], count.
inline std::int64_t moments_size(int dim) { return 2 * static_cast<std::int64_t>(dim) + 1; }
// Doubles of scratch update_moments and scale_rewards need on `device`.
std::int64_t normalization_scratch_doubles(Device device);

// mean 0, var 1, count 1e-4.
void reset_moments(const Stream& stream, int dim, double* moments);

// Merges the batch samples[count][dim] into the moments: the batch's mean and population variance
// from sums shifted by the running mean (a deterministic reduction in double), then one thread
// applies Chan's formula. batch_sums: [2 * kMaxNormalizedDim]; scratch: normalization_scratch_doubles.
// With `ranks`, the batch is every rank's samples together (`count` on each): their shifted sums add up,
// since every rank shifts by the same running mean, and every rank merges the same batch.
void update_moments(const Stream& stream, const float* samples, std::int64_t count, int dim, double* moments,
                    double* batch_sums, double* scratch, const Collective* ranks = nullptr);

// In place, rows[count][dim]: x = clamp((x - mean) / sqrt(var + 1e-8), -clip, clip), clip being
// hyper[agent].obs_clip (device memory). Where `ended` is given, only the rows n with terminated[n] or
// truncated[n] set (final observations).
void normalize_rows(const Stream& stream, float* rows, std::int64_t count, int dim, const double* moments,
                    const AgentHyper* hyper, int agent, const std::uint8_t* terminated = nullptr,
                    const std::uint8_t* truncated = nullptr);
// The same with clip given (put in a device array of its own; waits).
void normalize_rows(const Stream& stream, float* rows, std::int64_t count, int dim, const double* moments, double clip,
                    const std::uint8_t* terminated = nullptr, const std::uint8_t* truncated = nullptr);

// Scales reward[T][N] into scaled[T][N] as the vector NormalizeReward wrapper does at every step t = 0..T-1:
//   accumulator[n] = accumulator[n] * gamma * (1 - terminated[t][n]) + reward[t][n]   (float, as Gymnasium's)
//   the moments merge the batch of the N accumulators
//   scaled[t][n] = clamp(reward[t][n] / sqrt(var + 1e-8), -clip, clip)
//   accumulator[n] = 0 where the episode ended at t (terminated or truncated: the env was reset)
// moments: [3]; accumulator: [N], carried across calls; step_sums: [2*T]. `scaled` holds the discounted
// returns until the last pass, so it must not be `reward`. Each step's sums are shifted by the first
// environment's accumulator; with `ranks` (every rank's N accumulators are one batch) that of rank 0,
// which `shifts` [T] carries to every rank. gamma and clip are hyper[agent].gamma and .reward_clip
// (device memory); the overload that takes them puts them in a device array of their own (and waits).
void scale_rewards(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const AgentHyper* hyper,
                   int agent, const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                   float* accumulator, float* scaled, double* moments, double* step_sums, double* scratch,
                   double* shifts = nullptr, const Collective* ranks = nullptr);
void scale_rewards(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, double gamma, double clip,
                   const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                   float* accumulator, float* scaled, double* moments, double* step_sums, double* scratch,
                   double* shifts = nullptr, const Collective* ranks = nullptr);

// The trainer's normalisation state and scratch, one table. Buffers of a switched-off part are empty.
class Normalization {
 public:
  // Enqueues the zeroing of its buffers on `stream`. With `ranks`, the statistics are those of every
  // rank's environments together, the same on each. The kernels read gamma and the clips from
  // hyper[agent] (a trainer's device array, which must outlive this); without one, from a copy of
  // config's own (a normalisation outside a trainer).
  Normalization(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                std::int64_t num_envs, const Stream& stream, const Collective* ranks = nullptr,
                const AgentHyper* hyper = nullptr, int agent = 0);

  const NormalizationConfig& config() const { return config_; }
  // Starting statistics and zero accumulators.
  void reset(const Stream& stream);
  // obs[N][obs_dim] just observed (a reset or a step's next observation): counts it into the statistics,
  // then normalises it, and the final observations of the episodes that ended where final_obs is given.
  void observe(const Stream& stream, float* obs, float* final_obs = nullptr, const std::uint8_t* terminated = nullptr,
               const std::uint8_t* truncated = nullptr);
  // Normalises obs[N][obs_dim] with the statistics as they are (the observation is counted already).
  void normalize(const Stream& stream, float* obs) const;
  // The rewards the learner trains on for the rollout's reward[T][N]: scaled into a buffer of its own
  // (see scale_rewards), so the rollout keeps the environments' rewards; `reward` itself when off.
  const float* scale(const Stream& stream, const float* reward, const std::uint8_t* terminated,
                     const std::uint8_t* truncated);
  // What scale() returns for `reward`, without scaling: the buffer of scaled rewards, or `reward` itself.
  const float* learner_rewards(const float* reward) const {
    return config_.normalize_reward ? data(b_.scaled_reward) : reward;
  }

  // The statistics, [2*obs_dim + 1] and [3] (empty when off), and the latest scaled rewards [T][N].
  Span<double> obs_moments() const { return arena_[b_.obs_moments]; }
  Span<double> reward_moments() const { return arena_[b_.reward_moments]; }
  Span<float> scaled_rewards() const { return arena_[b_.scaled_reward]; }
  // The buffers, among them the state a resumable checkpoint saves (kSaved).
  const BufferArena& buffers() const { return arena_; }

  static BufferTable table(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                           std::int64_t num_envs);
  std::size_t device_bytes() const { return arena_.device_bytes(); }

  // The buffers, as entries of `table` (rl/batched_trainer.hpp keeps an agent's among its own): a
  // switched-off part's entries are empty.
  struct Buffers {
    Slot<double> obs_moments, obs_batch_sums, reward_moments, reward_step_sums, reward_shifts, scratch;
    Slot<float> reward_accumulator, scaled_reward;
  };
  static void add_buffers(BufferTable& table, Device device, const NormalizationConfig& config, int obs_dim,
                          std::int64_t num_steps, std::int64_t num_envs, Buffers& b);

 private:
  template <class T>
  T* data(Slot<T> slot) const {
    return arena_.data(slot);
  }

  NormalizationConfig config_;
  int obs_dim_;
  std::int64_t num_steps_, num_envs_;
  const Collective* ranks_;
  Buffers b_;
  BufferArena arena_;
  DeviceBuffer<AgentHyper> own_hyper_;  // [1] config's scalars, where no hyper was given
  const AgentHyper* hyper_;
  int agent_;
};

}  // namespace surge::rl
