#pragma once
// The categorical policy's per-sample math, written once for host and device: log-softmax, entropy and
// Gumbel-max sampling from Philox. Launchers for whole batches are in categorical.cu.
#include <cstdint>

#include "rl/scalar_math.hpp"
#include "sim/hd.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// log sum_k exp(logits[k]), shifted by the largest logit so that nothing overflows.
template <class Scalar>
SURGE_HD_INLINE Scalar log_partition(const Scalar* logits, int count) {
  Scalar largest = logits[0];
  for (int k = 1; k < count; ++k) largest = scalar_max(largest, logits[k]);
  Scalar sum = Scalar(0);
  for (int k = 0; k < count; ++k) sum += scalar_exp(logits[k] - largest);
  return largest + scalar_log(sum);
}

// H = -sum_k p_k log p_k, with log p_k = logits[k] - log_z.
template <class Scalar>
SURGE_HD_INLINE Scalar categorical_entropy(const Scalar* logits, int count, Scalar log_z) {
  Scalar entropy = Scalar(0);
  for (int k = 0; k < count; ++k) {
    const Scalar log_p = logits[k] - log_z;
    entropy -= scalar_exp(log_p) * log_p;
  }
  return entropy;
}

// A standard Gumbel draw from 32 random bits: -log(-log(u)) with u = (top 23 bits + 1/2) / 2^23, which
// lies strictly inside (0, 1) so that neither logarithm meets 0.
SURGE_HD_INLINE float gumbel_from_bits(std::uint32_t bits) {
  const float u = (static_cast<float>(bits >> 9) + 0.5f) * (1.0f / 8388608.0f);
  return -logf(-logf(u));
}

// Gumbel-max: argmax_k (logits[k] + g_k) is distributed as softmax(logits). Uses one word of the stream
// per action.
template <class Scalar>
SURGE_HD_INLINE int sample_categorical(const Scalar* logits, int count, Rng& rng) {
  int best = 0;
  Scalar best_score = Scalar(0);
  for (int k = 0; k < count; ++k) {
    const Scalar score = logits[k] + static_cast<Scalar>(gumbel_from_bits(rng.next_u32()));
    if (k == 0 || score > best_score) {
      best = k;
      best_score = score;
    }
  }
  return best;
}

template <class Scalar>
SURGE_HD_INLINE int argmax(const Scalar* logits, int count) {
  int best = 0;
  for (int k = 1; k < count; ++k)
    if (logits[k] > logits[best]) best = k;
  return best;
}

// ------------------------------------------------------------------ launchers (categorical.cu)

// Where a batch of draws sits in each environment's action stream: env i uses stream
// (seed, rng_subsequence(Action, first_env + i)) from word (*draw_counter * draws_per_count + draw) * num_actions,
// so a counter kept on the device (the trainer's iteration) moves the draws on without the host.
struct ActionDraw {
  std::uint64_t seed = 0;
  const std::int64_t* draw_counter = nullptr;  // device; null means 0
  std::int64_t draws_per_count = 0;
  std::int64_t draw = 0;
  std::int64_t first_env = 0;  // the global index of row 0's environment (Engine::first_env)
};

// actions[i] ~ softmax(logits[i]) by Gumbel-max, logprob[i] = log p(actions[i]). logits [n][num_actions].
// With `greedy` the action is the argmax instead and no random numbers are used.
void sample_actions(const Stream& stream, const float* logits, std::int64_t n, int num_actions, const ActionDraw& draw,
                    bool greedy, std::int32_t* actions, float* logprob);

}  // namespace surge::rl
