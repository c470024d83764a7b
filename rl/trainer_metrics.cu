// The trainer's episode bookkeeping and metrics kernels (rl/trainer_kernels.hpp), single-source, and their
// batched twins for K agents (rl/batched_kernels.hpp): each pair runs one per-element functor, the per-agent
// launcher with agent 0 of a PerAgent of stride 0.
#include <cmath>

#include "rl/batched_kernels.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

// ============================== kernels ==============================
namespace detail {

// Column i of agent i / n: environment i % n of that agent's rollout walks its T steps (kOneAgent: column i
// of agent 0, found without a division). Adds rewards to the running return and, where an episode ends,
// writes the finished return into ended_return[t][n] and starts again at 0.
template <bool kOneAgent>
struct TrackEpisodeReturns {
  PerAgent<const float> reward;
  PerAgent<const std::uint8_t> terminated, truncated;
  PerAgent<float> running_return, ended_return;
  std::int64_t steps, n;
  SURGE_HD_INLINE void operator()(std::int64_t column) const {
    const std::int64_t agent = kOneAgent ? 0 : column / n, i = kOneAgent ? column : column % n;
    const float* const rewards = reward[agent];
    const std::uint8_t *const ended_by_terminal = terminated[agent], *const ended_by_time = truncated[agent];
    float* const ended = ended_return[agent];
    // Accumulated in float in step order, exactly as the engine accumulates its episode returns.
    float running = running_return[agent][i];
    for (std::int64_t t = 0; t < steps; ++t) {
      const std::int64_t slot = t * n + i;
      running += rewards[slot];
      if (ended_by_terminal[slot] || ended_by_time[slot]) {
        ended[slot] = running;
        running = 0.0f;
      }
    }
    running_return[agent][i] = running;
  }
};

// Chunk c of agent item / chunks counts the ended episodes of its kFinishedChunk slots.
template <bool kOneAgent>
struct CountFinishedChunks {
  PerAgent<const std::uint8_t> terminated, truncated;
  PerAgent<std::int32_t> chunk_counts;
  std::int64_t slots, chunks;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / chunks, c = kOneAgent ? item : item % chunks;
    const std::uint8_t *const ended_by_terminal = terminated[agent], *const ended_by_time = truncated[agent];
    const std::int64_t end = (c + 1) * kFinishedChunk < slots ? (c + 1) * kFinishedChunk : slots;
    std::int32_t count = 0;
    for (std::int64_t s = c * kFinishedChunk; s < end; ++s) count += (ended_by_terminal[s] || ended_by_time[s]) ? 1 : 0;
    chunk_counts[agent][c] = count;
  }
};

// Group g of agent item / groups sums its kFinishedChunk chunks' counts.
template <bool kOneAgent>
struct CountFinishedGroups {
  PerAgent<const std::int32_t> chunk_counts;
  PerAgent<std::int32_t> group_counts;
  std::int64_t chunks, groups;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / groups, g = kOneAgent ? item : item % groups;
    const std::int32_t* const counts = chunk_counts[agent];
    const std::int64_t end = (g + 1) * kFinishedChunk < chunks ? (g + 1) * kFinishedChunk : chunks;
    std::int32_t count = 0;
    for (std::int64_t c = g * kFinishedChunk; c < end; ++c) count += counts[c];
    group_counts[agent][g] = count;
  }
};

// One thread per agent: its newest kRecentEpisodes finished episodes, newest first, into its candidates.
struct NewestFinished {
  PerAgent<const std::uint8_t> terminated, truncated;
  PerAgent<const float> ended_return;
  PerAgent<const std::int32_t> chunk_counts, group_counts;
  PerAgent<double> candidates;
  std::int64_t steps, n, first_env, global_envs;
  SURGE_HD_INLINE void operator()(std::int64_t agent) const {
    const std::int64_t slots = steps * n;
    const std::int64_t chunks = (slots + kFinishedChunk - 1) / kFinishedChunk;
    const std::int64_t groups = (chunks + kFinishedChunk - 1) / kFinishedChunk;
    const std::uint8_t *const ended_by_terminal = terminated[agent], *const ended_by_time = truncated[agent];
    const float* const ended = ended_return[agent];
    const std::int32_t *const chunk_count = chunk_counts[agent], *const group_count = group_counts[agent];
    double* const out = candidates[agent];
    // Walks back from the end and stops after kRecentEpisodes: older ones cannot matter.
    int found = 0;
    for (std::int64_t g = groups - 1; g >= 0 && found < kRecentEpisodes; --g) {
      if (group_count[g] == 0) continue;
      const std::int64_t last_chunk = (g + 1) * kFinishedChunk < chunks ? (g + 1) * kFinishedChunk : chunks;
      for (std::int64_t c = last_chunk - 1; c >= g * kFinishedChunk && found < kRecentEpisodes; --c) {
        if (chunk_count[c] == 0) continue;
        const std::int64_t last_slot = (c + 1) * kFinishedChunk < slots ? (c + 1) * kFinishedChunk : slots;
        for (std::int64_t s = last_slot - 1; s >= c * kFinishedChunk && found < kRecentEpisodes; --s) {
          if (!(ended_by_terminal[s] || ended_by_time[s])) continue;
          const std::int64_t key = (s / n) * global_envs + first_env + s % n + 1;
          out[2 * found] = static_cast<double>(key);
          out[2 * found + 1] = static_cast<double>(ended[s]);
          ++found;
        }
      }
    }
  }
};

// One thread per agent: merges its `ranks` candidate lists by key and pushes the newest kRecentEpisodes,
// oldest first, into its ring. kMaxRanks bounds the merge's per-thread table.
template <int kMaxRanks>
struct PushRecentReturns {
  PerAgent<const double> candidates;  // [ranks][kRecentCandidateWidth] each
  int ranks;
  PerAgent<double> ring;
  TrainState* state;
  SURGE_HD_INLINE void operator()(std::int64_t agent) const {
    const double* const lists = candidates[agent];
    double* const returns = ring[agent];
    TrainState* const own = state + agent;
    // Each rank's list is newest first: a merge of their heads, newest first, for kRecentEpisodes.
    int next[kMaxRanks];
    for (int r = 0; r < ranks; ++r) next[r] = 0;
    double newest[kRecentEpisodes];
    int found = 0;
    while (found < kRecentEpisodes) {
      int best = -1;
      double best_key = 0.0;
      for (int r = 0; r < ranks; ++r) {
        if (next[r] >= kRecentEpisodes) continue;
        const double key = lists[r * kRecentCandidateWidth + 2 * next[r]];
        if (key > best_key) {
          best = r;
          best_key = key;
        }
      }
      if (best < 0) break;
      newest[found++] = lists[best * kRecentCandidateWidth + 2 * next[best] + 1];
      next[best] += 1;
    }
    std::int64_t head = own->last100_head, count = own->last100_count;
    for (int k = found - 1; k >= 0; --k) {
      returns[head] = newest[k];
      head = (head + 1) % kRecentEpisodes;
      if (count < kRecentEpisodes) ++count;
    }
    own->last100_head = head;
    own->last100_count = count;
  }
};
inline constexpr int kMaxRecentRanks = 4096;

// One thread per agent: its iteration's metrics, and its state's iteration advanced.
struct FinishIteration {
  MetricsBatch in;
  const OptimizerScalars* optimizer;
  TrainState* state;
  IterationMetrics* metrics;
  SURGE_HD_INLINE void operator()(std::int64_t agent) const {
    const double* const episode_stats = in.episode_stats[agent];
    const double *const ring = in.ring[agent], *const loss_terms = in.loss_terms[agent];
    const double* const ev_sums = in.ev_sums[agent];
    TrainState* const own = state + agent;
    const double nan = NAN;
    IterationMetrics m;
    m.iteration = static_cast<double>(own->iteration + 1);
    m.global_step = m.iteration * static_cast<double>(in.steps_per_iteration);
    m.episodes = episode_stats[0];
    m.episodic_return_mean = m.episodes > 0 ? episode_stats[1] / m.episodes : nan;
    m.episodic_length_mean = m.episodes > 0 ? episode_stats[2] / m.episodes : nan;
    const std::int64_t recent = own->last100_count;
    double recent_sum = 0.0;
    for (std::int64_t k = 0; k < recent; ++k) recent_sum += ring[k];
    m.return_last100 = recent > 0 ? recent_sum / static_cast<double>(recent) : nan;
    m.recent_episodes = static_cast<double>(recent);
    // Loss terms of the minibatches whose updates were applied (a prefix: a freeze lasts the iteration).
    const std::int64_t applied = own->epochs_applied * in.minibatches;
    double sums[kLossTermCount] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (std::int64_t b = 0; b < applied; ++b)
      for (int k = 0; k < kLossTermCount; ++k) sums[k] += loss_terms[b * kLossTermCount + k];
    const double samples = static_cast<double>(applied * in.minibatch_size);
    m.policy_loss = applied > 0 ? sums[kPolicyLoss] / samples : nan;
    m.value_loss = applied > 0 ? sums[kValueLoss] / samples : nan;
    m.entropy = applied > 0 ? sums[kEntropy] / samples : nan;
    m.approx_kl = applied > 0 ? sums[kApproxKl] / samples : nan;
    m.clipfrac = applied > 0 ? sums[kClipFraction] / samples : nan;
    const double n = static_cast<double>(in.steps_per_iteration);
    const double var_y = ev_sums[1] / n - (ev_sums[0] / n) * (ev_sums[0] / n);
    const double var_residual = ev_sums[3] / n - (ev_sums[2] / n) * (ev_sums[2] / n);
    m.explained_variance = var_y > 0.0 ? 1.0 - var_residual / var_y : nan;
    m.learning_rate = optimizer[agent].learning_rate;
    m.epochs_applied = static_cast<double>(own->epochs_applied);
    metrics[agent] = m;
    own->iteration += 1;
  }
};

// Element i % count of agent i / count.
struct CopyAgents {
  PerAgent<const float> from;
  PerAgent<float> to;
  std::int64_t count;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const std::int64_t agent = i / count, j = i % count;
    to[agent][j] = from[agent][j];
  }
};

}  // namespace detail

// ============================== launchers ==============================

void track_episode_returns(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const float* reward,
                           const std::uint8_t* terminated, const std::uint8_t* truncated, float* running_return,
                           float* ended_return) {
  const detail::TrackEpisodeReturns<true> track{{reward, 0},       {terminated, 0}, {truncated, 0}, {running_return, 0},
                                                {ended_return, 0}, num_steps,       num_envs};
  parallel_for(stream, num_envs, track, num_steps);
}

void track_episode_returns_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                                   PerAgent<const float> reward, PerAgent<const std::uint8_t> terminated,
                                   PerAgent<const std::uint8_t> truncated, PerAgent<float> running_return,
                                   PerAgent<float> ended_return) {
  const detail::TrackEpisodeReturns<false> track{reward,       terminated, truncated, running_return,
                                                 ended_return, num_steps,  num_envs};
  parallel_for(stream, agents * num_envs, track, num_steps);
}

std::int64_t finished_chunk_count(std::int64_t slots) { return (slots + kFinishedChunk - 1) / kFinishedChunk; }
std::int64_t finished_group_count(std::int64_t slots) {
  return (finished_chunk_count(slots) + kFinishedChunk - 1) / kFinishedChunk;
}

void count_finished(const Stream& stream, std::int64_t slots, const std::uint8_t* terminated,
                    const std::uint8_t* truncated, std::int32_t* chunk_counts, std::int32_t* group_counts) {
  const std::int64_t chunks = finished_chunk_count(slots), groups = finished_group_count(slots);
  parallel_for(stream, chunks,
               detail::CountFinishedChunks<true>{{terminated, 0}, {truncated, 0}, {chunk_counts, 0}, slots, chunks},
               kFinishedChunk);
  parallel_for(stream, groups, detail::CountFinishedGroups<true>{{chunk_counts, 0}, {group_counts, 0}, chunks, groups},
               kFinishedChunk);
}

void count_finished_batched(const Stream& stream, int agents, std::int64_t slots,
                            PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                            PerAgent<std::int32_t> chunk_counts, PerAgent<std::int32_t> group_counts) {
  const std::int64_t chunks = finished_chunk_count(slots), groups = finished_group_count(slots);
  parallel_for(stream, agents * chunks,
               detail::CountFinishedChunks<false>{terminated, truncated, chunk_counts, slots, chunks}, kFinishedChunk);
  parallel_for(
      stream, agents * groups,
      detail::CountFinishedGroups<false>{{chunk_counts.data, chunk_counts.stride}, group_counts, chunks, groups},
      kFinishedChunk);
}

void newest_finished(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, std::int64_t first_env,
                     std::int64_t global_envs, const std::uint8_t* terminated, const std::uint8_t* truncated,
                     const float* ended_return, const std::int32_t* chunk_counts, const std::int32_t* group_counts,
                     double* candidates) {
  parallel_for(stream, 1,
               detail::NewestFinished{{terminated, 0},
                                      {truncated, 0},
                                      {ended_return, 0},
                                      {chunk_counts, 0},
                                      {group_counts, 0},
                                      {candidates, 0},
                                      num_steps,
                                      num_envs,
                                      first_env,
                                      global_envs});
}

void newest_finished_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                             PerAgent<const std::uint8_t> terminated, PerAgent<const std::uint8_t> truncated,
                             PerAgent<const float> ended_return, PerAgent<const std::int32_t> chunk_counts,
                             PerAgent<const std::int32_t> group_counts, PerAgent<double> candidates) {
  parallel_for(stream, agents,
               detail::NewestFinished{terminated, truncated, ended_return, chunk_counts, group_counts, candidates,
                                      num_steps, num_envs, 0, num_envs});
}

void push_recent_returns(const Stream& stream, const double* candidates, int ranks, double* ring, TrainState* state) {
  SURGE_CHECK(ranks >= 1 && ranks <= detail::kMaxRecentRanks, "push_recent_returns: rank count out of range");
  parallel_for(stream, 1, detail::PushRecentReturns<detail::kMaxRecentRanks>{{candidates, 0}, ranks, {ring, 0}, state});
}

void push_recent_returns_batched(const Stream& stream, int agents, PerAgent<const double> candidates,
                                 PerAgent<double> ring, TrainState* state) {
  parallel_for(stream, agents, detail::PushRecentReturns<1>{candidates, 1, ring, state});
}

void finish_iteration(const Stream& stream, const MetricsInputs& inputs, const OptimizerScalars* optimizer,
                      TrainState* state, IterationMetrics* metrics) {
  MetricsBatch one;
  one.episode_stats = {inputs.episode_stats, 0};
  one.ring = {inputs.ring, 0};
  one.loss_terms = {inputs.loss_terms, 0};
  one.ev_sums = {inputs.ev_sums, 0};
  one.minibatches = inputs.minibatches;
  one.minibatch_size = inputs.minibatch_size;
  one.steps_per_iteration = inputs.steps_per_iteration;
  parallel_for(stream, 1, detail::FinishIteration{one, optimizer, state, metrics});
}

void finish_iteration_batched(const Stream& stream, int agents, const MetricsBatch& inputs,
                              const OptimizerScalars* optimizer, TrainState* state, IterationMetrics* metrics) {
  parallel_for(stream, agents, detail::FinishIteration{inputs, optimizer, state, metrics});
}

void copy_batched(const Stream& stream, int agents, PerAgent<const float> from, PerAgent<float> to,
                  std::int64_t count) {
  if (count <= 0) return;
  parallel_for(stream, agents * count, detail::CopyAgents{from, to, count});
}

}  // namespace surge::rl
