// Batched action sampling for the categorical policy.
#include "rl/categorical.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

void sample_actions(const Stream& stream, const float* logits, std::int64_t n, int num_actions, const ActionDraw& draw,
                    bool greedy, std::int32_t* actions, float* logprob) {
  const std::uint64_t seed = draw.seed;
  const std::int64_t* counter = draw.draw_counter;
  const std::int64_t per_count = draw.draws_per_count, draw_index = draw.draw, first = draw.first_env;
  parallel_for(stream, n, [=] SURGE_HD(std::int64_t i) {
    const float* row = logits + i * num_actions;
    int action;
    if (greedy) {
      action = argmax(row, num_actions);
    } else {
      const std::int64_t base = counter ? *counter * per_count : 0;
      Rng rng(seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first + i)),
              static_cast<std::uint64_t>(base + draw_index) * static_cast<std::uint64_t>(num_actions));
      action = sample_categorical(row, num_actions, rng);
    }
    actions[i] = action;
    if (logprob) logprob[i] = row[action] - log_partition(row, num_actions);
  });
}

}  // namespace surge::rl
