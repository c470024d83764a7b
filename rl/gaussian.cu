// Batched action sampling for the diagonal Gaussian policy.
#include "rl/gaussian.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

void sample_gaussian_actions(const Stream& stream, const float* mean, const float* log_std, std::int64_t n, int dims,
                             const float* low, const float* high, const ActionDraw& draw, bool deterministic,
                             float* actions, float* logprob, float* env_actions) {
  SURGE_CHECK(dims >= 1 && dims <= kMaxGaussianDims,
              "Gaussian actions need 1.." + std::to_string(kMaxGaussianDims) + " dimensions");
  const std::uint64_t seed = draw.seed;
  const std::int64_t* counter = draw.draw_counter;
  const std::int64_t per_count = draw.draws_per_count, draw_index = draw.draw, first = draw.first_env;
  const std::uint64_t words = static_cast<std::uint64_t>(gaussian_words_per_draw(dims));
  parallel_for(stream, n, [=] SURGE_HD(std::int64_t i) {
    const float* row_mean = mean + i * dims;
    float action[kMaxGaussianDims];
    if (deterministic) {
      for (int k = 0; k < dims; ++k) action[k] = row_mean[k];
    } else {
      const std::int64_t base = counter ? *counter * per_count : 0;
      Rng rng(seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first + i)),
              static_cast<std::uint64_t>(base + draw_index) * words);
      sample_gaussian(row_mean, log_std, dims, rng, action);
    }
    for (int k = 0; k < dims; ++k) {
      if (actions) actions[i * dims + k] = action[k];
      env_actions[i * dims + k] = action[k] < low[k] ? low[k] : (action[k] > high[k] ? high[k] : action[k]);
    }
    if (logprob) logprob[i] = gaussian_log_prob(action, row_mean, log_std, dims);
  });
}

}  // namespace surge::rl
