// Batched action sampling for the categorical policy.
#include "rl/batched_kernels.hpp"
#include "rl/categorical.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

namespace detail {

// The seed of every agent: a device array, or one value for a launcher of one agent (whose rows are then
// all agent 0's, found without a division).
struct SeedArray {
  static constexpr bool kOneAgent = false;
  const std::uint64_t* seeds;
  SURGE_HD_INLINE std::uint64_t operator[](std::int64_t agent) const { return seeds[agent]; }
};
struct OneSeed {
  static constexpr bool kOneAgent = true;
  std::uint64_t seed;
  SURGE_HD_INLINE std::uint64_t operator[](std::int64_t) const { return seed; }
};

// Row i of agent i / n: environment i % n's draw from the agent's seed and counter (one agent: row i itself).
template <class Seeds>
struct CategoricalDraws {
  PerAgent<const float> logits;
  PerAgent<std::int32_t> actions;
  PerAgent<float> logprob;  // data null: not written
  Seeds seeds;
  PerAgent<const std::int64_t> counter;  // data null means 0
  std::int64_t per_count, draw, first_env, n;
  int num_actions;
  bool greedy;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = Seeds::kOneAgent ? 0 : item / n, i = Seeds::kOneAgent ? item : item % n;
    const float* row = logits[agent] + i * num_actions;
    int action;
    if (greedy) {
      action = argmax(row, num_actions);
    } else {
      const std::int64_t base = counter.data ? *counter[agent] * per_count : 0;
      Rng rng(seeds[agent], rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first_env + i)),
              static_cast<std::uint64_t>(base + draw) * static_cast<std::uint64_t>(num_actions));
      action = sample_categorical(row, num_actions, rng);
    }
    actions[agent][i] = action;
    if (logprob.data) logprob[agent][i] = row[action] - log_partition(row, num_actions);
  }
};

}  // namespace detail

void sample_actions_batched(const Stream& stream, int agents, PerAgent<const float> logits, std::int64_t n,
                            int num_actions, const BatchedActionDraw& draw, bool greedy, PerAgent<std::int32_t> actions,
                            PerAgent<float> logprob) {
  const detail::CategoricalDraws<detail::SeedArray> draws{
      logits,         actions, logprob,     {draw.seeds}, draw.draw_counter, draw.draws_per_count, draw.draw,
      draw.first_env, n,       num_actions, greedy};
  parallel_for(stream, agents * n, draws);
}

void sample_actions(const Stream& stream, const float* logits, std::int64_t n, int num_actions, const ActionDraw& draw,
                    bool greedy, std::int32_t* actions, float* logprob) {
  const detail::CategoricalDraws<detail::OneSeed> draws{{logits, 0},
                                                        {actions, 0},
                                                        {logprob, 0},
                                                        {draw.seed},
                                                        {draw.draw_counter, 0},
                                                        draw.draws_per_count,
                                                        draw.draw,
                                                        draw.first_env,
                                                        n,
                                                        num_actions,
                                                        greedy};
  parallel_for(stream, n, draws);
}

}  // namespace surge::rl
