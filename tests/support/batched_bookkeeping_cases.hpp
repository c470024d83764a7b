#pragma once
// The batched episode bookkeeping and metrics launchers (rl/batched_kernels.hpp, rl/trainer_metrics.cu)
// against their per-agent twins on one device, shared by the CPU and the GPU test. A case runs several
// iterations' bookkeeping (track, count, clear, newest, push, finish) of K agents once batched and once per
// agent on agent slices of copies of the same state, then counts the agents whose every output (with the
// padding between agents) is equal bit for bit. Agents differ: one ends over kRecentEpisodes episodes per
// rollout, one none (its means are NaN), one a few (its ring wraps across the calls). With `shift` > 0 agent
// k's expected outputs are made from agent k + shift's inputs (mod K): then no agent may match.
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "rl/batched_kernels.hpp"
#include "rl/device_util.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"
#include "tests/support/batched_kernel_cases.hpp"

namespace surge::testing {

// Agent k's chance that an environment's episode ends at a step: many, none, a few.
inline float episode_end_rate(int agent) {
  constexpr float kRates[3] = {0.25f, 0.0f, 0.06f};
  return kRates[agent % 3];
}

// Flags of `agents` rollouts at `stride` apart; where an episode ends, terminated, truncated or both.
inline void random_episode_ends(int agents, std::int64_t slots, std::int64_t stride, std::uint64_t seed,
                                std::vector<std::uint8_t>& terminated, std::vector<std::uint8_t>& truncated) {
  terminated.assign(static_cast<std::size_t>(agents * stride), 0);
  truncated.assign(terminated.size(), 0);
  Rng rng(seed, 11, 0);
  for (int k = 0; k < agents; ++k) {
    const float rate = episode_end_rate(k);
    for (std::int64_t s = 0; s < slots; ++s) {
      const float u = rng.uniform();
      const std::size_t at = static_cast<std::size_t>(k * stride + s);
      terminated[at] = u < 0.8f * rate ? 1 : 0;
      truncated[at] = (u >= 0.5f * rate && u < rate) ? 1 : 0;
    }
  }
}

inline std::vector<double> random_doubles(std::int64_t count, std::uint64_t seed, float low, float high) {
  const std::vector<float> values = random_floats(count, seed, low, high);
  return std::vector<double>(values.begin(), values.end());
}

// The agents whose every output matched in every call so far.
class AgentsStillEqual {
 public:
  explicit AgentsStillEqual(int agents) : equal_(static_cast<std::size_t>(agents), true) {}
  // One call's outputs, each from agents_equal.
  void keep(std::initializer_list<std::vector<bool>> outputs) {
    for (const std::vector<bool>& output : outputs)
      for (std::size_t k = 0; k < equal_.size(); ++k) equal_[k] = equal_[k] && output[k];
  }
  int count() const {
    int matching = 0;
    for (const bool e : equal_) matching += e;
    return matching;
  }

 private:
  std::vector<bool> equal_;
};

// One start uploaded twice: for the batched launcher and for the per-agent launchers.
template <class T>
struct Twin {
  DeviceBuffer<T> batched, single;
  Twin(const Stream& stream, const std::vector<T>& start)
      : batched(upload(stream, start)), single(upload(stream, start)) {}
  // Per agent, whether all `stride` elements of its slice (its padding too) are the same bits in both.
  std::vector<bool> equal(const Stream& stream, int agents, std::int64_t stride) const {
    return agents_equal(stream, agents, stride, stride, batched, single);
  }
};

// Per agent, whether all `stride` elements of its slice (its padding too) are the same bits.
template <class T>
std::vector<bool> slices_equal(const Stream& stream, int agents, std::int64_t stride, const DeviceBuffer<T>& got,
                               const DeviceBuffer<T>& want) {
  return agents_equal(stream, agents, stride, stride, got, want);
}

// Agents equal in every output of `calls` iterations of bookkeeping over rollouts of `steps` x `envs`.
inline int agents_matching_bookkeeping(Device device, int agents, std::int64_t steps, std::int64_t envs, int calls,
                                       int shift) {
  using rl::kRecentCandidateWidth;
  using rl::kRecentEpisodes;
  const Stream stream(device);
  const std::int64_t slots = steps * envs;
  const std::int64_t chunks = rl::finished_chunk_count(slots), groups = rl::finished_group_count(slots);
  const std::int64_t epochs = 3, minibatches = 2, minibatch_size = 48;
  // Padded strides, a different one per array.
  const std::int64_t flag_stride = slots + 7, reward_stride = slots + 3, running_stride = envs + 2,
                     ended_stride = slots + 5, chunk_stride = chunks + 1, group_stride = groups + 2,
                     candidate_stride = kRecentCandidateWidth + 3, ring_stride = kRecentEpisodes + 1, stats_stride = 3,
                     terms_stride = epochs * minibatches * rl::kLossTermCount + 4, ev_stride = 5;

  // Per-agent state: running returns, a sentinel where no episode ended, the ring and TrainState.
  const std::vector<float> running_start = random_floats(agents * running_stride, 21, -3.0f, 3.0f);
  const std::vector<float> ended_start(static_cast<std::size_t>(agents * ended_stride), -7.0f);
  const std::vector<double> ring_start = random_doubles(agents * ring_stride, 22, -50.0f, 500.0f);
  std::vector<rl::TrainState> states(static_cast<std::size_t>(agents), rl::TrainState{});
  std::vector<rl::OptimizerScalars> optimizers(static_cast<std::size_t>(agents), rl::OptimizerScalars{});
  for (int k = 0; k < agents; ++k) {
    rl::TrainState& s = states[static_cast<std::size_t>(k)];
    s.iteration = 5 + k;
    s.epochs_applied = k % 3 == 0 ? 3 : (k % 3 == 1 ? 0 : 2);
    s.last100_head = k % 3 == 0 ? 37 : (k % 3 == 1 ? 0 : 20);  // full, empty, partly filled
    s.last100_count = k % 3 == 0 ? kRecentEpisodes : s.last100_head;
    optimizers[static_cast<std::size_t>(k)].learning_rate = 2.5e-4 * (k + 1);
  }
  DeviceBuffer<float> running = upload(stream, running_start), running_single = upload(stream, running_start);
  DeviceBuffer<float> ended = upload(stream, ended_start), ended_single = upload(stream, ended_start);
  const std::vector<std::int32_t> chunks_start(static_cast<std::size_t>(agents * chunk_stride), -1),
      groups_start(static_cast<std::size_t>(agents * group_stride), -1);
  DeviceBuffer<std::int32_t> chunk_counts = upload(stream, chunks_start),
                             chunk_counts_single = upload(stream, chunks_start);
  DeviceBuffer<std::int32_t> group_counts = upload(stream, groups_start),
                             group_counts_single = upload(stream, groups_start);
  const std::vector<double> candidates_start = random_doubles(agents * candidate_stride, 23, 1.0f, 9.0f);
  DeviceBuffer<double> candidates = upload(stream, candidates_start),
                       candidates_single = upload(stream, candidates_start);
  DeviceBuffer<double> ring = upload(stream, ring_start), ring_single = upload(stream, ring_start);
  DeviceBuffer<rl::TrainState> state = upload(stream, states), state_single = upload(stream, states);
  const DeviceBuffer<rl::OptimizerScalars> optimizer = upload(stream, optimizers);
  const std::vector<rl::IterationMetrics> metrics_start(static_cast<std::size_t>(agents), rl::IterationMetrics{});
  DeviceBuffer<rl::IterationMetrics> metrics = upload(stream, metrics_start),
                                     metrics_single = upload(stream, metrics_start);

  AgentsStillEqual equal(agents);
  for (int call = 0; call < calls; ++call) {
    const std::uint64_t seed = 100 + 10 * static_cast<std::uint64_t>(call);
    std::vector<std::uint8_t> terminated_host, truncated_host;
    random_episode_ends(agents, slots, flag_stride, seed, terminated_host, truncated_host);
    const DeviceBuffer<std::uint8_t> terminated = upload(stream, terminated_host),
                                     truncated = upload(stream, truncated_host);
    const DeviceBuffer<float> reward = upload(stream, random_floats(agents * reward_stride, seed + 1, -1.0f, 2.0f));
    std::vector<double> stats_host = random_doubles(agents * stats_stride, seed + 2, 1.0f, 400.0f);
    for (int k = 0; k < agents; ++k)  // the engine's [episodes, return sum, length sum]; none for agent 1
      stats_host[static_cast<std::size_t>(k * stats_stride)] = k % 3 == 1 ? 0.0 : static_cast<double>(3 + call + k);
    const DeviceBuffer<double> episode_stats = upload(stream, stats_host);
    const DeviceBuffer<double> loss_terms =
        upload(stream, random_doubles(agents * terms_stride, seed + 3, -2.0f, 2.0f));
    const DeviceBuffer<double> ev_sums = upload(stream, random_doubles(agents * ev_stride, seed + 4, 0.5f, 900.0f));
    // Cleared with 0 (what the trainer does) and, on odd calls, with a negative key push ignores as well.
    const double cleared = call % 2 == 0 ? 0.0 : -2.5;

    rl::track_episode_returns_batched(stream, agents, steps, envs, {reward.data(), reward_stride},
                                      {terminated.data(), flag_stride}, {truncated.data(), flag_stride},
                                      {running.data(), running_stride}, {ended.data(), ended_stride});
    rl::count_finished_batched(stream, agents, slots, {terminated.data(), flag_stride}, {truncated.data(), flag_stride},
                               {chunk_counts.data(), chunk_stride}, {group_counts.data(), group_stride});
    rl::fill_batched(stream, agents, {candidates.data(), candidate_stride}, kRecentCandidateWidth, cleared);
    rl::newest_finished_batched(stream, agents, steps, envs, {terminated.data(), flag_stride},
                                {truncated.data(), flag_stride}, {ended.data(), ended_stride},
                                {chunk_counts.data(), chunk_stride}, {group_counts.data(), group_stride},
                                {candidates.data(), candidate_stride});
    rl::push_recent_returns_batched(stream, agents, {candidates.data(), candidate_stride}, {ring.data(), ring_stride},
                                    state.data());
    rl::MetricsBatch inputs;
    inputs.episode_stats = {episode_stats.data(), stats_stride};
    inputs.ring = {ring.data(), ring_stride};
    inputs.loss_terms = {loss_terms.data(), terms_stride};
    inputs.ev_sums = {ev_sums.data(), ev_stride};
    inputs.minibatches = minibatches;
    inputs.minibatch_size = minibatch_size;
    inputs.steps_per_iteration = slots;
    rl::finish_iteration_batched(stream, agents, inputs, optimizer.data(), state.data(), metrics.data());

    for (int k = 0; k < agents; ++k) {
      const int in = shifted(k, shift, agents);  // whose inputs agent k's expected outputs are made from
      const std::uint8_t* const term = terminated.data() + in * flag_stride;
      const std::uint8_t* const trunc = truncated.data() + in * flag_stride;
      float* const own_ended = ended_single.data() + k * ended_stride;
      std::int32_t* const own_chunks = chunk_counts_single.data() + k * chunk_stride;
      std::int32_t* const own_groups = group_counts_single.data() + k * group_stride;
      double* const own_candidates = candidates_single.data() + k * candidate_stride;
      rl::track_episode_returns(stream, steps, envs, reward.data() + in * reward_stride, term, trunc,
                                running_single.data() + k * running_stride, own_ended);
      rl::count_finished(stream, slots, term, trunc, own_chunks, own_groups);
      rl::fill(stream, own_candidates, kRecentCandidateWidth, cleared);
      rl::newest_finished(stream, steps, envs, 0, envs, term, trunc, own_ended, own_chunks, own_groups, own_candidates);
      rl::push_recent_returns(stream, own_candidates, 1, ring_single.data() + k * ring_stride, state_single.data() + k);
      rl::MetricsInputs solo;
      solo.episode_stats = episode_stats.data() + in * stats_stride;
      solo.ring = ring_single.data() + k * ring_stride;
      solo.loss_terms = loss_terms.data() + in * terms_stride;
      solo.ev_sums = ev_sums.data() + in * ev_stride;
      solo.minibatches = minibatches;
      solo.minibatch_size = minibatch_size;
      solo.steps_per_iteration = slots;
      rl::finish_iteration(stream, solo, optimizer.data() + in, state_single.data() + k, metrics_single.data() + k);
    }
    // Every output after every call, each agent's whole stride (its padding must stay as it was).
    equal.keep({slices_equal(stream, agents, running_stride, running, running_single),
                slices_equal(stream, agents, ended_stride, ended, ended_single),
                slices_equal(stream, agents, chunk_stride, chunk_counts, chunk_counts_single),
                slices_equal(stream, agents, group_stride, group_counts, group_counts_single),
                slices_equal(stream, agents, candidate_stride, candidates, candidates_single),
                slices_equal(stream, agents, ring_stride, ring, ring_single),
                slices_equal(stream, agents, 1, state, state_single),
                slices_equal(stream, agents, 1, metrics, metrics_single)});
  }
  return equal.count();
}

// fill_batched against fill and copy_batched against copy_bytes on each agent's slice (padded strides);
// with `shift`, agent k's expected copy is of agent k + shift's source.
inline int agents_matching_fill_copy(Device device, int agents, std::int64_t count, int shift) {
  const Stream stream(device);
  const std::int64_t fill_stride = count + 3, copy_stride = count + 5;
  const std::vector<double> fill_start = random_doubles(agents * fill_stride, 31, -1.0f, 1.0f);
  DeviceBuffer<double> filled = upload(stream, fill_start), filled_single = upload(stream, fill_start);
  const DeviceBuffer<float> from = upload(stream, random_floats(agents * copy_stride, 32, -4.0f, 4.0f));
  const std::vector<float> to_start = random_floats(agents * copy_stride, 33, -1.0f, 1.0f);
  DeviceBuffer<float> to = upload(stream, to_start), to_single = upload(stream, to_start);
  rl::fill_batched(stream, agents, {filled.data(), fill_stride}, count, 1.5);
  rl::copy_batched(stream, agents, {from.data(), copy_stride}, {to.data(), copy_stride}, count);
  for (int k = 0; k < agents; ++k) {
    rl::fill(stream, filled_single.data() + k * fill_stride, count, 1.5);
    copy_bytes(to_single.data() + k * copy_stride, device, from.data() + shifted(k, shift, agents) * copy_stride,
               device, static_cast<std::size_t>(count) * sizeof(float), stream);
  }
  return agents_equal_in_all({slices_equal(stream, agents, fill_stride, filled, filled_single),
                              slices_equal(stream, agents, copy_stride, to, to_single)});
}

// Episodes agent `agent` ends in the rollout of call `call` of agents_matching_bookkeeping.
inline std::int64_t episodes_ended(int agents, std::int64_t slots, int call, int agent) {
  std::vector<std::uint8_t> terminated, truncated;
  random_episode_ends(agents, slots, slots, 100 + 10 * static_cast<std::uint64_t>(call), terminated, truncated);
  std::int64_t ended = 0;
  for (std::int64_t s = agent * slots; s < (agent + 1) * slots; ++s)
    ended += terminated[static_cast<std::size_t>(s)] || truncated[static_cast<std::size_t>(s)];
  return ended;
}

// K = 1 and 3 on rollouts of T*N below and above kFinishedChunk^2 slots (more than one group), four calls
// each, and K = 3 with every agent's expected outputs made from the next agent's inputs, which must fail.
inline void check_batched_bookkeeping(Device device) {
  struct Shape {
    std::int64_t steps, envs;
  };
  // The mix the cases claim on 16 x 37: agent 0 over kRecentEpisodes per rollout, agent 1 none, agent 2 (its
  // ring at 20 of 100) under kRecentEpisodes per rollout but over 80 in four calls, so that its ring wraps.
  std::int64_t few = 0;
  for (int call = 0; call < 4; ++call) {
    CHECK(episodes_ended(3, 16 * 37, call, 0) > rl::kRecentEpisodes);
    CHECK(episodes_ended(3, 16 * 37, call, 1) == 0);
    CHECK(episodes_ended(3, 16 * 37, call, 2) < rl::kRecentEpisodes);
    few += episodes_ended(3, 16 * 37, call, 2);
  }
  CHECK(few > 80);
  for (const Shape shape : {Shape{16, 37}, Shape{3, 5}, Shape{5, 13200}}) {
    INFO("T " << shape.steps << " N " << shape.envs);
    CHECK(agents_matching_bookkeeping(device, 1, shape.steps, shape.envs, 4, 0) == 1);
    CHECK(agents_matching_bookkeeping(device, 3, shape.steps, shape.envs, 4, 0) == 3);
  }
  CHECK(agents_matching_bookkeeping(device, 3, 16, 37, 2, 1) == 0);
}

inline void check_batched_fill_copy(Device device) {
  check_agents_match({37, 1, 5001}, 1, [&](int agents, std::int64_t count, int shift) {
    return agents_matching_fill_copy(device, agents, count, shift);
  });
}

}  // namespace surge::testing
