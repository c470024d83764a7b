// The trainer's bookkeeping kernels, single-source.
#include "rl/trainer_kernels.hpp"

#include <cmath>

#include "rl/batched_kernels.hpp"
#include "rl/ppo_loss.hpp"
#include "sim/error.hpp"
#include "sim/parallel.cuh"
#include "sim/parallel_segments.cuh"

namespace surge::rl {

namespace detail {

// One agent's part of begin_iteration and end_epoch, for the per-agent and the batched launchers.
SURGE_HD_INLINE void begin_agent_iteration(const AgentHyper& h, TrainState* state, OptimizerScalars* optimizer,
                                           double iterations) {
  const double fraction = h.anneal_lr != 0.0 ? 1.0 - static_cast<double>(state->iteration) / iterations : 1.0;
  optimizer->learning_rate = fraction * h.learning_rate;
  optimizer->frozen = 0.0;
  state->epochs_applied = 0;
}

SURGE_HD_INLINE void end_agent_epoch(const AgentHyper& h, TrainState* state, OptimizerScalars* optimizer,
                                     const double* last_terms, double batch) {
  if (optimizer->frozen) return;
  const double target_kl = h.target_kl;
  state->epochs_applied += 1;
  if (target_kl > 0.0 && last_terms[kApproxKl] / batch > target_kl) optimizer->frozen = 1.0;
}

// The sums explained_variance_sums reduces, of sample s of agent `agent`.
struct ExplainedVarianceTerms {
  PerAgent<const float> returns, value;
  SURGE_HD_INLINE void operator()(std::int64_t agent, std::int64_t s, double* acc) const {
    const float ret = returns[agent][s], v = value[agent][s];
    const double y = ret, residual = static_cast<double>(ret) - static_cast<double>(v);
    acc[0] += y;
    acc[1] += y * y;
    acc[2] += residual;
    acc[3] += residual * residual;
  }
};

}  // namespace detail

void begin_iteration(const Stream& stream, const AgentHyper* hyper, int agent, TrainState* state,
                     OptimizerScalars* optimizer, std::int64_t num_iterations) {
  const double iterations = static_cast<double>(num_iterations);
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    detail::begin_agent_iteration(hyper[agent], state, optimizer, iterations);
  });
}

void begin_iteration_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                             OptimizerScalars* optimizer, std::int64_t num_iterations) {
  const double iterations = static_cast<double>(num_iterations);
  parallel_for(stream, agents, [=] SURGE_HD(std::int64_t k) {
    detail::begin_agent_iteration(hyper[k], state + k, optimizer + k, iterations);
  });
}

void scale_values(const Stream& stream, float* values, std::int64_t count, float factor) {
  parallel_for(stream, count, [=] SURGE_HD(std::int64_t i) { values[i] *= factor; });
}

namespace detail {

// A functor rather than a lambda: see mlp.cu's note on nvcc's host-side wrappers. One call copies a
// tile of kGatherTileRows rows, so the shuffle's round keys (two Philox blocks) are derived once per
// tile rather than once per row.
constexpr std::int64_t kGatherTileRows = 16;

struct GatherMinibatch {
  Permutation base;
  const TrainState* state;
  std::int64_t epochs, epoch, first, size;
  BatchView in;
  MinibatchBuffers to;
  SURGE_HD_INLINE void operator()(std::int64_t tile) const {
    const Permutation p = base.with_shuffle(static_cast<std::uint64_t>(state->iteration * epochs + epoch));
    const std::int64_t begin = tile * kGatherTileRows;
    const std::int64_t end = begin + kGatherTileRows < size ? begin + kGatherTileRows : size;
    std::uint64_t source[kGatherTileRows];
    permute_tile(p, first + begin, static_cast<int>(end - begin), source);
    for (std::int64_t j = begin; j < end; ++j) copy_row(j, static_cast<std::int64_t>(source[j - begin]));
  }
  // out[j] = p(first + j) for j < rows, as Permutation::operator() gives them, with the tile's rows side by
  // side through each Feistel round: one index's rounds are a chain of dependent multiplies, and the rows'
  // independent chains interleaved keep the core busy (and vectorise on the CPU: the halves are 32-bit
  // lanes throughout, compared with n half by half). A row whose value already lies in [0, n) keeps it
  // while the others walk on.
  SURGE_HD_INLINE static void permute_tile(const Permutation& p, std::int64_t first, int rows, std::uint64_t* out) {
    const int half = p.half_bits;
    const std::uint32_t mask = static_cast<std::uint32_t>((std::uint64_t(1) << half) - 1);
    const std::uint64_t n = static_cast<std::uint64_t>(p.size);
    const std::uint32_t n_left = static_cast<std::uint32_t>(n >> half), n_right = static_cast<std::uint32_t>(n) & mask;
    std::uint32_t left[kGatherTileRows], right[kGatherTileRows];
    for (int j = 0; j < kGatherTileRows; ++j) {
      const std::uint64_t index = static_cast<std::uint64_t>(first + (j < rows ? j : 0));
      left[j] = static_cast<std::uint32_t>(index >> half);
      right[j] = static_cast<std::uint32_t>(index) & mask;
    }
    for (bool outside = true, first_walk = true; outside; first_walk = false) {
      std::uint32_t l[kGatherTileRows], r[kGatherTileRows];
      for (int j = 0; j < kGatherTileRows; ++j) {
        l[j] = left[j];
        r[j] = right[j];
      }
      for (int round = 0; round < Permutation::kRounds; ++round) {
        const std::uint32_t key = p.keys[round];
        for (int j = 0; j < kGatherTileRows; ++j) {
          const std::uint32_t next_r = l[j] ^ (Permutation::mix(r[j] ^ key) & mask);
          l[j] = r[j];
          r[j] = next_r;
        }
      }
      int outside_rows = 0;
      for (int j = 0; j < kGatherTileRows; ++j) {
        const bool walks = first_walk | (left[j] > n_left) | ((left[j] == n_left) & (right[j] >= n_right));
        left[j] = walks ? l[j] : left[j];
        right[j] = walks ? r[j] : right[j];
        outside_rows += (left[j] > n_left) | ((left[j] == n_left) & (right[j] >= n_right));
      }
      outside = outside_rows > 0;
    }
    for (int j = 0; j < kGatherTileRows; ++j) out[j] = static_cast<std::uint64_t>(left[j]) << half | right[j];
  }
  SURGE_HD_INLINE void copy_row(std::int64_t j, std::int64_t s) const {
    const int d = in.obs_dim;
    for (int k = 0; k < d; ++k) to.obs[j * d + k] = in.obs[s * d + k];
    if (in.action_dim > 0) {
      const int a = in.action_dim;
      for (int k = 0; k < a; ++k) to.continuous_actions[j * a + k] = in.continuous_actions[s * a + k];
    } else {
      to.actions[j] = in.actions[s];
    }
    to.logprob[j] = in.logprob[s];
    to.value[j] = in.value[s];
    to.advantage[j] = in.advantage[s];
    to.returns[j] = in.returns[s];
  }
};

}  // namespace detail

void gather_minibatch(const Stream& stream, const Permutation& permutation, const TrainState* state,
                      std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch, std::int64_t minibatch_size,
                      const BatchView& batch, const MinibatchBuffers& out) {
  const std::int64_t tiles = (minibatch_size + detail::kGatherTileRows - 1) / detail::kGatherTileRows;
  parallel_for(stream, tiles,
               detail::GatherMinibatch{permutation, state, epochs, epoch, minibatch * minibatch_size, minibatch_size,
                                       batch, out},
               64 * detail::kGatherTileRows);
}

void end_epoch(const Stream& stream, const AgentHyper* hyper, int agent, TrainState* state, OptimizerScalars* optimizer,
               const double* last_terms, std::int64_t minibatch_size) {
  const double batch = static_cast<double>(minibatch_size);
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    detail::end_agent_epoch(hyper[agent], state, optimizer, last_terms, batch);
  });
}

void end_epoch_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                       OptimizerScalars* optimizer, PerAgent<const double> last_terms, std::int64_t minibatch_size) {
  const double batch = static_cast<double>(minibatch_size);
  parallel_for(stream, agents, [=] SURGE_HD(std::int64_t k) {
    detail::end_agent_epoch(hyper[k], state + k, optimizer + k, last_terms[k], batch);
  });
}

void track_episode_returns(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const float* reward,
                           const std::uint8_t* terminated, const std::uint8_t* truncated, float* running_return,
                           float* ended_return) {
  const std::int64_t n = num_envs, steps = num_steps;
  parallel_for(
      stream, n,
      [=] SURGE_HD(std::int64_t i) {
        // Accumulated in float in step order, exactly as the engine accumulates its episode returns.
        float running = running_return[i];
        for (std::int64_t t = 0; t < steps; ++t) {
          const std::int64_t slot = t * n + i;
          running += reward[slot];
          if (terminated[slot] || truncated[slot]) {
            ended_return[slot] = running;
            running = 0.0f;
          }
        }
        running_return[i] = running;
      },
      num_steps);
}

std::int64_t finished_chunk_count(std::int64_t slots) { return (slots + kFinishedChunk - 1) / kFinishedChunk; }
std::int64_t finished_group_count(std::int64_t slots) {
  return (finished_chunk_count(slots) + kFinishedChunk - 1) / kFinishedChunk;
}

void count_finished(const Stream& stream, std::int64_t slots, const std::uint8_t* terminated,
                    const std::uint8_t* truncated, std::int32_t* chunk_counts, std::int32_t* group_counts) {
  const std::int64_t chunks = finished_chunk_count(slots), groups = finished_group_count(slots);
  parallel_for(
      stream, chunks,
      [=] SURGE_HD(std::int64_t c) {
        const std::int64_t end = (c + 1) * kFinishedChunk < slots ? (c + 1) * kFinishedChunk : slots;
        std::int32_t count = 0;
        for (std::int64_t s = c * kFinishedChunk; s < end; ++s) count += (terminated[s] || truncated[s]) ? 1 : 0;
        chunk_counts[c] = count;
      },
      kFinishedChunk);
  parallel_for(
      stream, groups,
      [=] SURGE_HD(std::int64_t g) {
        const std::int64_t end = (g + 1) * kFinishedChunk < chunks ? (g + 1) * kFinishedChunk : chunks;
        std::int32_t count = 0;
        for (std::int64_t c = g * kFinishedChunk; c < end; ++c) count += chunk_counts[c];
        group_counts[g] = count;
      },
      kFinishedChunk);
}

void newest_finished(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, std::int64_t first_env,
                     std::int64_t global_envs, const std::uint8_t* terminated, const std::uint8_t* truncated,
                     const float* ended_return, const std::int32_t* chunk_counts, const std::int32_t* group_counts,
                     double* candidates) {
  const std::int64_t slots = num_steps * num_envs, n = num_envs;
  const std::int64_t chunks = finished_chunk_count(slots), groups = finished_group_count(slots);
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    // Walks back from the end and stops after kRecentEpisodes: older ones cannot matter.
    int found = 0;
    for (std::int64_t g = groups - 1; g >= 0 && found < kRecentEpisodes; --g) {
      if (group_counts[g] == 0) continue;
      const std::int64_t last_chunk = (g + 1) * kFinishedChunk < chunks ? (g + 1) * kFinishedChunk : chunks;
      for (std::int64_t c = last_chunk - 1; c >= g * kFinishedChunk && found < kRecentEpisodes; --c) {
        if (chunk_counts[c] == 0) continue;
        const std::int64_t last_slot = (c + 1) * kFinishedChunk < slots ? (c + 1) * kFinishedChunk : slots;
        for (std::int64_t s = last_slot - 1; s >= c * kFinishedChunk && found < kRecentEpisodes; --s) {
          if (!(terminated[s] || truncated[s])) continue;
          const std::int64_t key = (s / n) * global_envs + first_env + s % n + 1;
          candidates[2 * found] = static_cast<double>(key);
          candidates[2 * found + 1] = static_cast<double>(ended_return[s]);
          ++found;
        }
      }
    }
  });
}

void push_recent_returns(const Stream& stream, const double* candidates, int ranks, double* ring, TrainState* state) {
  constexpr int kMaxRanks = 4096;
  SURGE_CHECK(ranks >= 1 && ranks <= kMaxRanks, "push_recent_returns: rank count out of range");
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
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
        const double key = candidates[r * kRecentCandidateWidth + 2 * next[r]];
        if (key > best_key) {
          best = r;
          best_key = key;
        }
      }
      if (best < 0) break;
      newest[found++] = candidates[best * kRecentCandidateWidth + 2 * next[best] + 1];
      next[best] += 1;
    }
    std::int64_t head = state->last100_head, count = state->last100_count;
    for (int k = found - 1; k >= 0; --k) {
      ring[head] = newest[k];
      head = (head + 1) % kRecentEpisodes;
      if (count < kRecentEpisodes) ++count;
    }
    state->last100_head = head;
    state->last100_count = count;
  });
}

void explained_variance_sums(const Stream& stream, std::int64_t slots, const float* returns, const float* value,
                             double* scratch, double* sums) {
  const detail::ExplainedVarianceTerms terms{{returns, 0}, {value, 0}};
  parallel_reduce<4>(
      stream, slots, [=] SURGE_HD(std::int64_t s, double* acc) { terms(0, s, acc); }, scratch, sums);
}

void explained_variance_sums_batched(const Stream& stream, int agents, std::int64_t slots,
                                     PerAgent<const float> returns, PerAgent<const float> value, double* scratch,
                                     double* sums) {
  parallel_reduce_segments<4>(stream, agents, slots, detail::ExplainedVarianceTerms{returns, value}, scratch, sums);
}

void finish_iteration(const Stream& stream, const MetricsInputs& inputs, const OptimizerScalars* optimizer,
                      TrainState* state, IterationMetrics* metrics) {
  const MetricsInputs in = inputs;
  parallel_for(stream, 1, [=] SURGE_HD(std::int64_t) {
    const double nan = NAN;
    IterationMetrics m;
    m.iteration = static_cast<double>(state->iteration + 1);
    m.global_step = m.iteration * static_cast<double>(in.steps_per_iteration);
    m.episodes = in.episode_stats[0];
    m.episodic_return_mean = m.episodes > 0 ? in.episode_stats[1] / m.episodes : nan;
    m.episodic_length_mean = m.episodes > 0 ? in.episode_stats[2] / m.episodes : nan;
    const std::int64_t recent = state->last100_count;
    double recent_sum = 0.0;
    for (std::int64_t k = 0; k < recent; ++k) recent_sum += in.ring[k];
    m.return_last100 = recent > 0 ? recent_sum / static_cast<double>(recent) : nan;
    m.recent_episodes = static_cast<double>(recent);
    // Loss terms of the minibatches whose updates were applied (a prefix: a freeze lasts the iteration).
    const std::int64_t applied = state->epochs_applied * in.minibatches;
    double sums[kLossTermCount] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (std::int64_t b = 0; b < applied; ++b)
      for (int k = 0; k < kLossTermCount; ++k) sums[k] += in.loss_terms[b * kLossTermCount + k];
    const double samples = static_cast<double>(applied * in.minibatch_size);
    m.policy_loss = applied > 0 ? sums[kPolicyLoss] / samples : nan;
    m.value_loss = applied > 0 ? sums[kValueLoss] / samples : nan;
    m.entropy = applied > 0 ? sums[kEntropy] / samples : nan;
    m.approx_kl = applied > 0 ? sums[kApproxKl] / samples : nan;
    m.clipfrac = applied > 0 ? sums[kClipFraction] / samples : nan;
    const double n = static_cast<double>(in.steps_per_iteration);
    const double var_y = in.ev_sums[1] / n - (in.ev_sums[0] / n) * (in.ev_sums[0] / n);
    const double var_residual = in.ev_sums[3] / n - (in.ev_sums[2] / n) * (in.ev_sums[2] / n);
    m.explained_variance = var_y > 0.0 ? 1.0 - var_residual / var_y : nan;
    m.learning_rate = optimizer->learning_rate;
    m.epochs_applied = static_cast<double>(state->epochs_applied);
    *metrics = m;
    state->iteration += 1;
  });
}

}  // namespace surge::rl
