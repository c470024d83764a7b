// Running moments, observation normalisation and reward scaling, single-source.
#include "rl/normalization.hpp"

#include <cmath>
#include <utility>

#include "rl/batched_kernels.hpp"
#include "rl/collective.hpp"
#include "rl/device_util.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"
#include "sim/parallel_segments.cuh"

namespace surge::rl {
namespace {

constexpr int kSumsWidth = 2 * kMaxNormalizedDim;  // shifted sums and sums of squares, per dimension

// Chan et al.'s merge of a batch (mean, population variance, count) into running moments, exactly as
// Gymnasium's update_mean_var_count_from_moments writes it.
SURGE_HD_INLINE void merge_moments(double& mean, double& var, double count, double batch_mean, double batch_var,
                                   double batch_count) {
  const double delta = batch_mean - mean;
  const double total = count + batch_count;
  const double m2 = var * count + batch_var * batch_count + delta * delta * count * batch_count / total;
  mean = mean + delta * batch_count / total;
  var = m2 / total;
}

// A batch's mean and population variance from sums of (x - shift) and (x - shift)^2.
SURGE_HD_INLINE void batch_moments(double shift, double sum, double sum_sq, double count, double& mean, double& var) {
  const double centred = sum / count;
  mean = shift + centred;
  const double v = sum_sq / count - centred * centred;
  var = v > 0.0 ? v : 0.0;
}

SURGE_HD_INLINE float clamp_to(double x, double clip) {
  return static_cast<float>(x < -clip ? -clip : (x > clip ? clip : x));
}

// The per-element code of the launchers below, shared by the per-agent launchers (agent 0 of PerAgents of
// stride 0, hyper pointing at the agent's own scalars) and their batched twins for K agents.

// Sample i of agent `agent` minus the running mean, and its square, per dimension.
struct ShiftedSums {
  PerAgent<const float> samples;  // [count][dim] each
  PerAgent<const double> moments;
  int dim;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    const float* const x = samples[agent] + i * dim;
    const double* const mean = moments[agent];
    for (int k = 0; k < dim; ++k) {
      const double d = static_cast<double>(x[k]) - mean[k];
      acc[k] += d;
      acc[kMaxNormalizedDim + k] += d * d;
    }
  }
};

// One thread per agent: its batch of n samples (batch_sums) merged into its moments.
struct MergeBatch {
  PerAgent<double> moments;
  PerAgent<const double> batch_sums;
  int dim;
  double n;
  SURGE_HD_INLINE void operator()(std::int64_t agent) const {
    double* const mean = moments[agent];
    double* const var = mean + dim;
    double& running_count = mean[2 * dim];
    const double* const sums = batch_sums[agent];
    for (int k = 0; k < dim; ++k) {
      double b_mean = 0.0, b_var = 0.0;
      batch_moments(mean[k], sums[k], sums[kMaxNormalizedDim + k], n, b_mean, b_var);
      merge_moments(mean[k], var[k], running_count, b_mean, b_var, n);
    }
    running_count += n;
  }
};

// Row item % count of agent item / count (kOneAgent: row item of agent 0), normalised in place; where the
// flags are given, only a row whose episode ended.
template <bool kOneAgent>
struct NormalizeRows {
  PerAgent<float> rows;  // [count][dim] each
  PerAgent<const double> moments;
  const AgentHyper* hyper;
  PerAgent<const std::uint8_t> terminated, truncated;  // [count] each, or data null
  std::int64_t count;
  int dim;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / count, n = kOneAgent ? item : item % count;
    if (terminated.data && !(terminated[agent][n] || truncated[agent][n])) return;
    const double clip = hyper[agent].obs_clip;
    const double* const m = moments[agent];
    float* const row = rows[agent] + n * dim;
    for (int k = 0; k < dim; ++k) {
      const double x = static_cast<double>(row[k]);
      row[k] = clamp_to((x - m[k]) / sqrt(m[dim + k] + kNormalizationEpsilon), clip);
    }
  }
};

// Column i of agent column / n: every step's discounted return of environment i % n, before the reset at an
// episode's end, into `discounted`; the last one carried in its accumulator.
template <bool kOneAgent>
struct DiscountedReturns {
  const AgentHyper* hyper;
  PerAgent<const float> reward;
  PerAgent<float> accumulator, discounted;
  PerAgent<const std::uint8_t> terminated, truncated;
  std::int64_t steps, n;
  SURGE_HD_INLINE void operator()(std::int64_t column) const {
    const std::int64_t agent = kOneAgent ? 0 : column / n, i = kOneAgent ? column : column % n;
    const float gamma_f = static_cast<float>(hyper[agent].gamma);
    const float* const rewards = reward[agent] + i;  // the column's slots, n apart
    const std::uint8_t *const restarts = terminated[agent] + i, *const time_limits = truncated[agent] + i;
    float* const out = discounted[agent] + i;
    float running = accumulator[agent][i];
    for (std::int64_t t = 0; t < steps; ++t) {
      running = (restarts[t * n] ? 0.0f : running * gamma_f) + rewards[t * n];
      out[t * n] = running;
      if (restarts[t * n] || time_limits[t * n]) running = 0.0f;
    }
    accumulator[agent][i] = running;
  }
};

// Step t's sums over agent `agent`'s N accumulators, shifted by `shift_at` (the ranks' shared shift) or,
// without it, by the agent's first environment's accumulator.
struct StepSums {
  PerAgent<const float> discounted;
  std::int64_t t, n;
  const double* shift_at;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t i, double* acc) const {
    const float* const row = discounted[agent] + t * n;
    const double shift = shift_at ? *shift_at : static_cast<double>(row[0]);
    const double d = static_cast<double>(row[i]) - shift;
    acc[0] += d;
    acc[1] += d * d;
  }
};

// One thread per agent: the steps' merges in order; step_sums[2t] then holds step t's divisor.
struct MergeSteps {
  PerAgent<double> moments, step_sums;
  PerAgent<const float> discounted;
  const double* shared_shifts;  // [T] across ranks, or null
  std::int64_t steps, n;
  double count;
  SURGE_HD_INLINE void operator()(std::int64_t agent) const {
    double* const m = moments[agent];
    double* const sums = step_sums[agent];
    const float* const returns = discounted[agent];
    for (std::int64_t t = 0; t < steps; ++t) {
      double b_mean = 0.0, b_var = 0.0;
      const double shift = shared_shifts ? shared_shifts[t] : static_cast<double>(returns[t * n]);
      batch_moments(shift, sums[2 * t], sums[2 * t + 1], count, b_mean, b_var);
      merge_moments(m[0], m[1], m[2], b_mean, b_var, count);
      m[2] += count;
      sums[2 * t] = sqrt(m[1] + kNormalizationEpsilon);
    }
  }
};

// Slot item % slots of agent item / slots: its reward over its step's divisor, clipped.
template <bool kOneAgent>
struct ScaleRewards {
  const AgentHyper* hyper;
  PerAgent<const float> reward;
  PerAgent<float> scaled;
  PerAgent<const double> step_sums;
  std::int64_t slots, n;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / slots, slot = kOneAgent ? item : item % slots;
    scaled[agent][slot] =
        clamp_to(static_cast<double>(reward[agent][slot]) / step_sums[agent][2 * (slot / n)], hyper[agent].reward_clip);
  }
};

}  // namespace

// ============================== launchers ==============================

std::int64_t normalization_scratch_doubles(Device device) { return reduce_scratch_size(device, kSumsWidth); }

void reset_moments(const Stream& stream, int dim, double* moments) {
  parallel_for(stream, moments_size(dim), [=] SURGE_HD(std::int64_t i) {
    moments[i] = i < dim ? 0.0 : (i < 2 * dim ? 1.0 : kMomentsInitialCount);
  });
}

void update_moments(const Stream& stream, const float* samples, std::int64_t count, int dim, double* moments,
                    double* batch_sums, double* scratch, const Collective* ranks) {
  SURGE_CHECK(dim >= 1 && dim <= kMaxNormalizedDim, "update_moments: dimension out of range");
  if (count <= 0) return;
  // Shifted by the running mean, so the sums stay small once the statistics have settled.
  const ShiftedSums sums{{samples, 0}, {moments, 0}, dim};
  parallel_reduce<kSumsWidth>(
      stream, count, [=] SURGE_HD(std::int64_t i, double* acc) { sums(0, i, acc); }, scratch, batch_sums);
  const int rank_count = ranks ? ranks->size() : 1;
  if (rank_count > 1) ranks->all_reduce_sum({batch_sums, kSumsWidth, stream.device()}, stream);
  const double n = static_cast<double>(count) * rank_count;
  parallel_for(stream, 1, MergeBatch{{moments, 0}, {batch_sums, 0}, dim, n});
}

std::int64_t normalization_batched_scratch_doubles(Device device, int agents) {
  return reduce_segments_scratch_size(device, agents, kSumsWidth);
}

void update_moments_batched(const Stream& stream, int agents, PerAgent<const float> samples, std::int64_t count,
                            int dim, PerAgent<double> moments, PerAgent<double> batch_sums, double* scratch) {
  SURGE_CHECK(dim >= 1 && dim <= kMaxNormalizedDim, "update_moments_batched: dimension out of range");
  SURGE_CHECK(batch_sums.stride >= kSumsWidth, "update_moments_batched: batch sums closer than 16 doubles apart");
  if (count <= 0 || agents <= 0) return;
  parallel_reduce_segments<kSumsWidth>(stream, agents, count, ShiftedSums{samples, {moments.data, moments.stride}, dim},
                                       scratch, batch_sums.data, batch_sums.stride);
  parallel_for(stream, agents,
               MergeBatch{moments, {batch_sums.data, batch_sums.stride}, dim, static_cast<double>(count)});
}

void normalize_rows(const Stream& stream, float* rows, std::int64_t count, int dim, const double* moments,
                    const AgentHyper* hyper, int agent, const std::uint8_t* terminated, const std::uint8_t* truncated) {
  SURGE_CHECK((terminated == nullptr) == (truncated == nullptr), "normalize_rows: give both flags or neither");
  parallel_for(stream, count,
               NormalizeRows<true>{{rows, 0}, {moments, 0}, hyper + agent, {terminated, 0}, {truncated, 0}, count, dim},
               dim);
}

void normalize_rows_batched(const Stream& stream, int agents, PerAgent<float> rows, std::int64_t count, int dim,
                            PerAgent<const double> moments, const AgentHyper* hyper,
                            PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated) {
  SURGE_CHECK((terminated.data == nullptr) == (truncated.data == nullptr),
              "normalize_rows_batched: give both flags or neither");
  parallel_for(stream, agents * count, NormalizeRows<false>{rows, moments, hyper, terminated, truncated, count, dim},
               dim);
}

void normalize_rows(const Stream& stream, float* rows, std::int64_t count, int dim, const double* moments, double clip,
                    const std::uint8_t* terminated, const std::uint8_t* truncated) {
  AgentHyper values{};
  values.obs_clip = clip;
  const OwnAgentHyper hyper(stream, values);
  normalize_rows(stream, rows, count, dim, moments, hyper.get(), 0, terminated, truncated);
}

void scale_rewards(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const AgentHyper* hyper,
                   int agent, const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                   float* accumulator, float* scaled, double* moments, double* step_sums, double* scratch,
                   double* shifts, const Collective* ranks) {
  const std::int64_t steps = num_steps, n = num_envs;
  if (steps <= 0 || n <= 0) return;
  SURGE_CHECK(scaled != reward, "scale_rewards: scaled must be a buffer of its own");
  // Every env's accumulator after each step, before the reset at an episode's end, into `scaled`.
  float* discounted = scaled;
  const AgentHyper* const own = hyper + agent;
  parallel_for(stream, n,
               DiscountedReturns<true>{
                   own, {reward, 0}, {accumulator, 0}, {discounted, 0}, {terminated, 0}, {truncated, 0}, steps, n},
               steps);
  // Each step's batch sums, shifted by its first env's accumulator (rank 0's, across ranks).
  const int rank_count = ranks ? ranks->size() : 1;
  SURGE_CHECK(rank_count == 1 || shifts != nullptr, "scale_rewards: several ranks need the shifts buffer");
  if (rank_count > 1) {
    const bool first_rank = ranks->rank() == 0;
    parallel_for(stream, steps, [=] SURGE_HD(std::int64_t t) {
      shifts[t] = first_rank ? static_cast<double>(discounted[t * n]) : 0.0;
    });
    ranks->all_reduce_sum({shifts, steps, stream.device()}, stream);
  }
  const double* shared_shifts = rank_count > 1 ? shifts : nullptr;
  for (std::int64_t t = 0; t < steps; ++t) {
    const StepSums sums{{discounted, 0}, t, n, shared_shifts ? shared_shifts + t : nullptr};
    parallel_reduce<2>(
        stream, n, [=] SURGE_HD(std::int64_t i, double* acc) { sums(0, i, acc); }, scratch, step_sums + 2 * t);
  }
  if (rank_count > 1) ranks->all_reduce_sum({step_sums, 2 * steps, stream.device()}, stream);
  // The steps' merges in order; step_sums[2t] then holds step t's divisor.
  const double count = static_cast<double>(n) * rank_count;
  parallel_for(stream, 1, MergeSteps{{moments, 0}, {step_sums, 0}, {discounted, 0}, shared_shifts, steps, n, count});
  parallel_for(stream, steps * n, ScaleRewards<true>{own, {reward, 0}, {scaled, 0}, {step_sums, 0}, steps * n, n});
}

void scale_rewards_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                           const AgentHyper* hyper, PerAgent<const float> reward,
                           PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                           PerAgent<float> accumulator, PerAgent<float> scaled, PerAgent<double> moments,
                           PerAgent<double> step_sums, double* scratch) {
  const std::int64_t steps = num_steps, n = num_envs;
  if (steps <= 0 || n <= 0 || agents <= 0) return;
  SURGE_CHECK(scaled.data != reward.data, "scale_rewards_batched: scaled must be a buffer of its own");
  const PerAgent<const float> discounted{scaled.data, scaled.stride};
  parallel_for(stream, agents * n,
               DiscountedReturns<false>{hyper, reward, accumulator, scaled, terminated, truncated, steps, n}, steps);
  for (std::int64_t t = 0; t < steps; ++t)
    parallel_reduce_segments<2>(stream, agents, n, StepSums{discounted, t, n, nullptr}, scratch, step_sums.data + 2 * t,
                                step_sums.stride);
  parallel_for(stream, agents, MergeSteps{moments, step_sums, discounted, nullptr, steps, n, static_cast<double>(n)});
  parallel_for(stream, agents * steps * n,
               ScaleRewards<false>{hyper, reward, scaled, {step_sums.data, step_sums.stride}, steps * n, n});
}

void scale_rewards(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, double gamma, double clip,
                   const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                   float* accumulator, float* scaled, double* moments, double* step_sums, double* scratch,
                   double* shifts, const Collective* ranks) {
  AgentHyper values{};
  values.gamma = gamma;
  values.reward_clip = clip;
  const OwnAgentHyper hyper(stream, values);
  scale_rewards(stream, num_steps, num_envs, hyper.get(), 0, reward, terminated, truncated, accumulator, scaled,
                moments, step_sums, scratch, shifts, ranks);
}

// ============================== the trainer's state ==============================

void Normalization::add_buffers(BufferTable& t, Device device, const NormalizationConfig& config, int obs_dim,
                                std::int64_t num_steps, std::int64_t num_envs, Buffers& b) {
  const std::int64_t obs = config.normalize_obs ? 1 : 0, rewards = config.normalize_reward ? 1 : 0;
  const std::int64_t any = obs | rewards;
  b.obs_moments = t.add<double>("normalization.obs_moments", {obs * moments_size(obs_dim)}, "[2*obs_dim+1]",
                                "running mean, variance and count of the observations", kSaved | kAgent);
  b.obs_batch_sums = t.add<double>("normalization.obs_batch_sums", {obs * kSumsWidth}, "[16]",
                                   "one batch's shifted sums and sums of squares");
  b.reward_moments = t.add<double>("normalization.reward_moments", {rewards * moments_size(1)}, "[3]",
                                   "running mean, variance and count of the discounted returns", kSaved | kAgent);
  b.reward_accumulator = t.add<float>("normalization.reward_accumulator", {rewards * num_envs}, "[N]",
                                      "each env's discounted return so far", kSaved);
  b.reward_step_sums = t.add<double>("normalization.reward_step_sums", {rewards * 2 * num_steps}, "[2*T]",
                                     "each step's sums over the accumulators");
  b.reward_shifts = t.add<double>("normalization.reward_shifts", {rewards * num_steps}, "[T]",
                                  "each step's shift of the sums: rank 0's first accumulator");
  b.scaled_reward = t.add<float>("normalization.scaled_reward", {rewards * num_steps, num_envs}, "[T][N]",
                                 "the scaled rewards GAE reads (the discounted returns until then)");
  b.scratch = t.add<double>("normalization.reduce_scratch", {any * normalization_scratch_doubles(device)}, "[scratch]",
                            "partial sums of the reductions");
}

BufferTable Normalization::table(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                                 std::int64_t num_envs) {
  BufferTable t;
  Buffers unused;
  add_buffers(t, device, config, obs_dim, num_steps, num_envs, unused);
  return t;
}

Normalization::Normalization(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                             std::int64_t num_envs, const Stream& stream, const Collective* ranks,
                             const AgentHyper* hyper, int agent)
    : config_(config),
      obs_dim_(obs_dim),
      num_steps_(num_steps),
      num_envs_(num_envs),
      ranks_(ranks),
      hyper_(hyper),
      agent_(agent) {
  if (config.normalize_obs && (obs_dim < 1 || obs_dim > kMaxNormalizedDim))
    throw InputError("normalize_obs handles observations of up to " + std::to_string(kMaxNormalizedDim) +
                     " values, and this scenario has " + std::to_string(obs_dim) + "; set normalize_obs = false");
  BufferTable t;
  add_buffers(t, device, config, obs_dim, num_steps, num_envs, b_);
  arena_ = BufferArena(device, std::move(t), stream);
  if (!hyper_) {
    AgentHyper own{};
    own.gamma = config.gamma;
    own.obs_clip = config.obs_clip;
    own.reward_clip = config.reward_clip;
    own_hyper_ = DeviceBuffer<AgentHyper>(device, 1);
    from_host(own_hyper_.span(), std::vector<AgentHyper>{own}, stream);
    hyper_ = own_hyper_.data();
    agent_ = 0;
  }
}

void Normalization::reset(const Stream& stream) {
  if (config_.normalize_obs) reset_moments(stream, obs_dim_, data(b_.obs_moments));
  if (config_.normalize_reward) {
    reset_moments(stream, 1, data(b_.reward_moments));
    fill(stream, data(b_.reward_accumulator), num_envs_, 0.0f);
  }
}

void Normalization::observe(const Stream& stream, float* obs, float* final_obs, const std::uint8_t* terminated,
                            const std::uint8_t* truncated) {
  if (!config_.normalize_obs) return;
  double* moments = data(b_.obs_moments);
  update_moments(stream, obs, num_envs_, obs_dim_, moments, data(b_.obs_batch_sums), data(b_.scratch), ranks_);
  normalize_rows(stream, obs, num_envs_, obs_dim_, moments, hyper_, agent_);
  if (final_obs) normalize_rows(stream, final_obs, num_envs_, obs_dim_, moments, hyper_, agent_, terminated, truncated);
}

void Normalization::normalize(const Stream& stream, float* obs) const {
  if (config_.normalize_obs) normalize_rows(stream, obs, num_envs_, obs_dim_, data(b_.obs_moments), hyper_, agent_);
}

const float* Normalization::scale(const Stream& stream, const float* reward, const std::uint8_t* terminated,
                                  const std::uint8_t* truncated) {
  if (config_.normalize_reward)
    scale_rewards(stream, num_steps_, num_envs_, hyper_, agent_, reward, terminated, truncated,
                  data(b_.reward_accumulator), data(b_.scaled_reward), data(b_.reward_moments),
                  data(b_.reward_step_sums), data(b_.scratch), data(b_.reward_shifts), ranks_);
  return learner_rewards(reward);
}

}  // namespace surge::rl
