// The trainer's bookkeeping kernels, single-source (the episode tracking and metrics: trainer_metrics.cu).
#include "rl/trainer_kernels.hpp"

#include "rl/batched_kernels.hpp"
#include "rl/batched_loss.hpp"
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
    acc[1] += unfused(y * y);
    acc[2] += residual;
    acc[3] += unfused(residual * residual);  // as one agent's launcher has always rounded it
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
// tile rather than once per row. Item i is tile i % tiles of agent i / tiles, whose permutation family
// has seed seeds[agent] (kOneAgent: tile i of the one agent, whose family is `family` itself, found
// without a division or a seed read).
constexpr std::int64_t kGatherTileRows = 16;

template <bool kOneAgent>
struct GatherMinibatch {
  Permutation family;          // size and half bits (and, for one agent, the seed)
  const std::uint64_t* seeds;  // [K], unread for one agent
  const TrainState* state;     // [K]
  std::int64_t epochs, epoch, first, size, tiles;
  GatherBatch in;
  MinibatchBatch to;
  SURGE_HD_INLINE void operator()(std::int64_t item) const {
    const std::int64_t agent = kOneAgent ? 0 : item / tiles, tile = kOneAgent ? item : item % tiles;
    Permutation base = family;
    if (!kOneAgent) base.seed = seeds[agent];
    const Permutation p = base.with_shuffle(static_cast<std::uint64_t>(state[agent].iteration * epochs + epoch));
    const std::int64_t begin = tile * kGatherTileRows;
    const std::int64_t end = begin + kGatherTileRows < size ? begin + kGatherTileRows : size;
    std::uint64_t source[kGatherTileRows];
    permute_tile(p, first + begin, static_cast<int>(end - begin), source);
    for (std::int64_t j = begin; j < end; ++j) copy_row(agent, j, static_cast<std::int64_t>(source[j - begin]));
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
  SURGE_HD_INLINE void copy_row(std::int64_t agent, std::int64_t j, std::int64_t s) const {
    const int d = in.obs_dim;
    const float* obs = in.obs[agent];
    float* obs_to = to.obs[agent];
    for (int k = 0; k < d; ++k) obs_to[j * d + k] = obs[s * d + k];
    if (in.action_dim > 0) {
      const int a = in.action_dim;
      const float* actions = in.continuous_actions[agent];
      float* actions_to = to.continuous_actions[agent];
      for (int k = 0; k < a; ++k) actions_to[j * a + k] = actions[s * a + k];
    } else {
      to.actions[agent][j] = in.actions[agent][s];
    }
    to.logprob[agent][j] = in.logprob[agent][s];
    to.value[agent][j] = in.value[agent][s];
    to.advantage[agent][j] = in.advantage[agent][s];
    to.returns[agent][j] = in.returns[agent][s];
  }
};

}  // namespace detail

void gather_minibatch(const Stream& stream, const Permutation& permutation, const TrainState* state,
                      std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch, std::int64_t minibatch_size,
                      const BatchView& batch, const MinibatchBuffers& out) {
  const std::int64_t tiles = (minibatch_size + detail::kGatherTileRows - 1) / detail::kGatherTileRows;
  const GatherBatch in{{batch.obs, 0},     {batch.actions, 0}, {batch.continuous_actions, 0},
                       {batch.logprob, 0}, {batch.value, 0},   {batch.advantage, 0},
                       {batch.returns, 0}, batch.obs_dim,      batch.action_dim};
  const MinibatchBatch to{{out.obs, 0},     {out.actions, 0}, {out.continuous_actions, 0},
                          {out.logprob, 0}, {out.value, 0},   {out.advantage, 0},
                          {out.returns, 0}};
  parallel_for(stream, tiles,
               detail::GatherMinibatch<true>{permutation, nullptr, state, epochs, epoch, minibatch * minibatch_size,
                                             minibatch_size, tiles, in, to},
               64 * detail::kGatherTileRows);
}

void gather_minibatch_batched(const Stream& stream, int agents, const std::uint64_t* seeds, std::int64_t batch_size,
                              const TrainState* state, std::int64_t epochs, std::int64_t epoch, std::int64_t minibatch,
                              std::int64_t minibatch_size, const GatherBatch& batch, const MinibatchBatch& out) {
  SURGE_CHECK(agents >= 0, "gather_minibatch_batched: a negative agent count");
  const std::int64_t tiles = (minibatch_size + detail::kGatherTileRows - 1) / detail::kGatherTileRows;
  // Every agent's family has the batch's size and half bits; the seed is set per agent on the device.
  const Permutation family = Permutation::make(batch_size, 0, 0);
  parallel_for(stream, agents * tiles,
               detail::GatherMinibatch<false>{family, seeds, state, epochs, epoch, minibatch * minibatch_size,
                                              minibatch_size, tiles, batch, out},
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

}  // namespace surge::rl
