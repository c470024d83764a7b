// Running moments, observation normalisation and reward scaling, single-source.
#include "rl/normalization.hpp"

#include <cmath>

#include "rl/collective.hpp"
#include "rl/device_util.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"

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
  parallel_reduce<kSumsWidth>(
      stream, count,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        for (int k = 0; k < dim; ++k) {
          const double d = static_cast<double>(samples[i * dim + k]) - moments[k];
          acc[k] += d;
          acc[kMaxNormalizedDim + k] += d * d;
        }
      },
      scratch, batch_sums);
  const int rank_count = ranks ? ranks->size() : 1;
  if (rank_count > 1) ranks->all_reduce_sum({batch_sums, kSumsWidth, stream.device()}, stream);
  const double n = static_cast<double>(count) * rank_count;
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    double* mean = moments;
    double* var = moments + dim;
    double& running_count = moments[2 * dim];
    for (int k = 0; k < dim; ++k) {
      double b_mean = 0.0, b_var = 0.0;
      batch_moments(mean[k], batch_sums[k], batch_sums[kMaxNormalizedDim + k], n, b_mean, b_var);
      merge_moments(mean[k], var[k], running_count, b_mean, b_var, n);
    }
    running_count += n;
  });
}

void normalize_rows(const Stream& stream, float* rows, std::int64_t count, int dim, const double* moments,
                    const AgentHyper* hyper, int agent, const std::uint8_t* terminated, const std::uint8_t* truncated) {
  const bool masked = terminated != nullptr;
  SURGE_CHECK(!masked || truncated != nullptr, "normalize_rows: give both flags or neither");
  parallel_for(
      stream, count,
      [=] SURGE_HD(std::int64_t n) {
        if (masked && !(terminated[n] || truncated[n])) return;
        const double clip = hyper[agent].obs_clip;
        for (int k = 0; k < dim; ++k) {
          const double x = static_cast<double>(rows[n * dim + k]);
          rows[n * dim + k] = clamp_to((x - moments[k]) / sqrt(moments[dim + k] + kNormalizationEpsilon), clip);
        }
      },
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
  parallel_for(
      stream, n,
      [=] SURGE_HD(std::int64_t i) {
        const float gamma_f = static_cast<float>(hyper[agent].gamma);
        float running = accumulator[i];
        for (std::int64_t t = 0; t < steps; ++t) {
          const std::int64_t slot = t * n + i;
          running = (terminated[slot] ? 0.0f : running * gamma_f) + reward[slot];
          discounted[slot] = running;
          if (terminated[slot] || truncated[slot]) running = 0.0f;
        }
        accumulator[i] = running;
      },
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
    const float* row = discounted + t * n;
    const double* shift_at = shared_shifts ? shared_shifts + t : nullptr;
    parallel_reduce<2>(
        stream, n,
        [=] SURGE_HD(std::int64_t i, double* acc) {
          const double shift = shift_at ? *shift_at : static_cast<double>(row[0]);
          const double d = static_cast<double>(row[i]) - shift;
          acc[0] += d;
          acc[1] += d * d;
        },
        scratch, step_sums + 2 * t);
  }
  if (rank_count > 1) ranks->all_reduce_sum({step_sums, 2 * steps, stream.device()}, stream);
  // The steps' merges in order; step_sums[2t] then holds step t's divisor.
  const double count = static_cast<double>(n) * rank_count;
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    for (std::int64_t t = 0; t < steps; ++t) {
      double b_mean = 0.0, b_var = 0.0;
      const double shift = shared_shifts ? shared_shifts[t] : static_cast<double>(discounted[t * n]);
      batch_moments(shift, step_sums[2 * t], step_sums[2 * t + 1], count, b_mean, b_var);
      merge_moments(moments[0], moments[1], moments[2], b_mean, b_var, count);
      moments[2] += count;
      step_sums[2 * t] = sqrt(moments[1] + kNormalizationEpsilon);
    }
  });
  parallel_for(stream, steps * n, [=] SURGE_HD(std::int64_t slot) {
    scaled[slot] = clamp_to(static_cast<double>(reward[slot]) / step_sums[2 * (slot / n)], hyper[agent].reward_clip);
  });
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

BufferTable Normalization::table(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                                 std::int64_t num_envs, Buffers& b) {
  const std::int64_t obs = config.normalize_obs ? 1 : 0, rewards = config.normalize_reward ? 1 : 0;
  const std::int64_t any = obs | rewards;
  BufferTable t;
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
  return t;
}

BufferTable Normalization::table(Device device, const NormalizationConfig& config, int obs_dim, std::int64_t num_steps,
                                 std::int64_t num_envs) {
  Buffers unused;
  return table(device, config, obs_dim, num_steps, num_envs, unused);
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
  arena_ = BufferArena(device, table(device, config, obs_dim, num_steps, num_envs, b_), stream);
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
