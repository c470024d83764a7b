#pragma once
// The diagonal Gaussian policy's per-sample math, written once for host and device: log-density of a
// sample, entropy, and sampling from Philox. The actor's MLP gives the means; the log standard
// deviations are one parameter vector shared by every state (CleanRL's ppo_continuous_action.py).
// Launchers for whole batches are in gaussian.cu.
#include <cstdint>

#include "rl/categorical.hpp"
#include "rl/scalar_math.hpp"
#include "sim/hd.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// Action dimensions a Gaussian policy may have (ActorCritic checks), so that a row fits on the stack.
inline constexpr int kMaxGaussianDims = 64;

inline constexpr double kHalfLogTwoPi = 0.91893853320467274178;  // 0.5 log(2 pi)

// log N(action; mean, exp(log_std)^2) summed over `dims` independent dimensions:
//   sum_k -0.5 z_k^2 - log_std_k - 0.5 log(2 pi),  z_k = (action_k - mean_k) / exp(log_std_k).
template <class Scalar>
SURGE_HD_INLINE Scalar gaussian_log_prob(const Scalar* action, const Scalar* mean, const Scalar* log_std, int dims) {
  Scalar sum = Scalar(0);
  for (int k = 0; k < dims; ++k) {
    const Scalar z = (action[k] - mean[k]) * scalar_exp(-log_std[k]);
    sum += Scalar(-0.5) * z * z - log_std[k] - static_cast<Scalar>(kHalfLogTwoPi);
  }
  return sum;
}

// H = sum_k 0.5 + 0.5 log(2 pi) + log_std_k: it does not depend on the mean.
template <class Scalar>
SURGE_HD_INLINE Scalar gaussian_entropy(const Scalar* log_std, int dims) {
  Scalar sum = Scalar(0);
  for (int k = 0; k < dims; ++k) sum += Scalar(0.5) + static_cast<Scalar>(kHalfLogTwoPi) + log_std[k];
  return sum;
}

// Two independent standard normal draws from two words of the stream, with the arithmetic of cuRAND's
// curand_normal on its Philox generator (Box-Muller; curand_normal returns .x, then .y on its next call).
// The device uses the fast __sincosf as cuRAND does, so device draws equal curand_normal's bit for bit
// but differ from the host's (sinf, cosf) by up to about 1e-6 times the radius s, in absolute terms:
// __sincosf's error is absolute (2^-21.4 on [-pi, pi], more beyond, and the angle here reaches 2 pi),
// so a draw near zero can differ from the host's in every bit while a large one differs by ~6e-6.
struct NormalPair {
  float x, y;
};
SURGE_HD_INLINE NormalPair standard_normal_pair(Rng& rng) {
  constexpr float kTwoPowMinus32 = 2.3283064e-10f;
  constexpr float kTwoPowMinus32TwoPi = 2.3283064e-10f * 6.2831855f;
  const std::uint32_t x = rng.next_u32(), y = rng.next_u32();
  const float u = static_cast<float>(x) * kTwoPowMinus32 + kTwoPowMinus32 / 2.0f;  // in (0, 1]: log(u) is finite
  const float v = static_cast<float>(y) * kTwoPowMinus32TwoPi + kTwoPowMinus32TwoPi / 2.0f;
  const float s = sqrtf(-2.0f * logf(u));
  NormalPair pair;
#if defined(__CUDA_ARCH__)
  __sincosf(v, &pair.x, &pair.y);
#else
  pair.x = sinf(v);
  pair.y = cosf(v);
#endif
  pair.x *= s;
  pair.y *= s;
  return pair;
}

// Words of the stream one draw of a `dims`-dimensional action uses: one Box-Muller pair per two dims.
SURGE_HD_INLINE std::int64_t gaussian_words_per_draw(int dims) { return 2 * ((dims + 1) / 2); }

// action_k = mean_k + exp(log_std_k) * n_k, the n_k standard normals in curand_normal's order.
SURGE_HD_INLINE void sample_gaussian(const float* mean, const float* log_std, int dims, Rng& rng, float* action) {
  NormalPair pair{0.0f, 0.0f};
  for (int k = 0; k < dims; ++k) {
    if (k % 2 == 0) pair = standard_normal_pair(rng);
    const float n = k % 2 == 0 ? pair.x : pair.y;
    action[k] = mean[k] + expf(log_std[k]) * n;
  }
}

// ------------------------------------------------------------------ launchers (gaussian.cu)

// For each of n rows: actions[i] ~ N(mean[i], exp(log_std)^2) (or the mean itself with `deterministic`,
// using no random numbers), logprob[i] = its log-density when logprob is not null, and env_actions[i]
// = the action clipped to [low, high] per dimension, which is what the environment receives. Env i
// draws from stream (seed, rng_subsequence(Action, i)) at word
// (*draw_counter * draws_per_count + draw) * gaussian_words_per_draw(dims). mean [n][dims], log_std
// [dims], low/high [dims] (all device), actions and env_actions [n][dims]; actions may be null.
void sample_gaussian_actions(const Stream& stream, const float* mean, const float* log_std, std::int64_t n, int dims,
                             const float* low, const float* high, const ActionDraw& draw, bool deterministic,
                             float* actions, float* logprob, float* env_actions);

}  // namespace surge::rl
