// Batched action sampling for the diagonal Gaussian policy.
#include "rl/batched_kernels.hpp"
#include "rl/gaussian.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

namespace detail {

// Row i of agent i / n: environment i % n's draw from the agent's seed, counter and log std (kOneAgent:
// row i itself, from `seed`, found without a division or a seed read).
template <bool kOneAgent>
struct GaussianDraws {
  PerAgent<const float> mean;     // [n][dims]
  PerAgent<const float> log_std;  // [dims]
  const float *low, *high;        // [dims], every agent's
  PerAgent<float> actions;        // data null: not written
  PerAgent<float> logprob;        // data null: not written
  PerAgent<float> env_actions;
  const std::uint64_t* seeds;            // [K], unread for one agent
  std::uint64_t seed;                    // the one agent's
  PerAgent<const std::int64_t> counter;  // data null means 0
  std::int64_t per_count, draw, first_env, n;
  int dims;
  bool deterministic;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / n, i = kOneAgent ? item : item % n;
    const float* row_mean = mean[agent] + i * dims;
    const float* std_log = log_std[agent];
    float action[kMaxGaussianDims];
    if (deterministic) {
      for (int k = 0; k < dims; ++k) action[k] = row_mean[k];
    } else {
      const std::int64_t base = counter.data ? *counter[agent] * per_count : 0;
      const std::uint64_t words = static_cast<std::uint64_t>(gaussian_words_per_draw(dims));
      Rng rng(kOneAgent ? seed : seeds[agent],
              rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first_env + i)),
              static_cast<std::uint64_t>(base + draw) * words);
      sample_gaussian(row_mean, std_log, dims, rng, action);
    }
    float* row_actions = actions.data ? actions[agent] + i * dims : nullptr;
    float* row_env = env_actions[agent] + i * dims;
    for (int k = 0; k < dims; ++k) {
      if (row_actions) row_actions[k] = action[k];
      row_env[k] = action[k] < low[k] ? low[k] : (action[k] > high[k] ? high[k] : action[k]);
    }
    if (logprob.data) logprob[agent][i] = gaussian_log_prob(action, row_mean, std_log, dims);
  }
};

void check_gaussian_dims(int dims) {
  SURGE_CHECK(dims >= 1 && dims <= kMaxGaussianDims,
              "Gaussian actions need 1.." + std::to_string(kMaxGaussianDims) + " dimensions");
}

}  // namespace detail

void sample_gaussian_actions(const Stream& stream, const float* mean, const float* log_std, std::int64_t n, int dims,
                             const float* low, const float* high, const ActionDraw& draw, bool deterministic,
                             float* actions, float* logprob, float* env_actions) {
  detail::check_gaussian_dims(dims);
  const detail::GaussianDraws<true> draws{{mean, 0},
                                          {log_std, 0},
                                          low,
                                          high,
                                          {actions, 0},
                                          {logprob, 0},
                                          {env_actions, 0},
                                          nullptr,
                                          draw.seed,
                                          {draw.draw_counter, 0},
                                          draw.draws_per_count,
                                          draw.draw,
                                          draw.first_env,
                                          n,
                                          dims,
                                          deterministic};
  parallel_for(stream, n, draws);
}

void sample_gaussian_actions_batched(const Stream& stream, int agents, PerAgent<const float> mean,
                                     PerAgent<const float> log_std, std::int64_t n, int dims, const float* low,
                                     const float* high, const BatchedActionDraw& draw, bool deterministic,
                                     PerAgent<float> actions, PerAgent<float> logprob, PerAgent<float> env_actions) {
  detail::check_gaussian_dims(dims);
  const detail::GaussianDraws<false> draws{mean,
                                           log_std,
                                           low,
                                           high,
                                           actions,
                                           logprob,
                                           env_actions,
                                           draw.seeds,
                                           0,
                                           draw.draw_counter,
                                           draw.draws_per_count,
                                           draw.draw,
                                           draw.first_env,
                                           n,
                                           dims,
                                           deterministic};
  parallel_for(stream, agents * n, draws);
}

}  // namespace surge::rl
