#pragma once
// The batched minibatch gather and PPO loss (rl/batched_loss.hpp) against their per-agent twins on one
// device, shared by the CPU and the GPU test, in the manner of batched_kernel_cases.hpp: one batched call
// over K agents, the per-agent launcher K times on agent slices of the same inputs, and a count of the
// agents whose outputs (their padding included) are equal bit for bit. Every array has its own padded
// stride. A `wrong` input makes agent k's expected result with agent k + 1's seed, iteration or scalars,
// all of which differ from agent k's: then no agent may match.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/batched_loss.hpp"
#include "rl/gaussian.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/shuffle.hpp"
#include "rl/trainer_kernels.hpp"
#include "tests/support/batched_kernel_cases.hpp"

namespace surge::testing {

// What the per-agent run takes from the next agent instead of its own.
enum class Wrong { kNothing, kSeed, kIteration, kScalars };

inline int source_agent(int agent, Wrong what, Wrong wrong, int agents) {
  return wrong == what ? shifted(agent, 1, agents) : agent;
}

// K agents' inputs of `count` elements at a stride of count + pad.
template <class T>
struct PaddedInput {
  std::int64_t stride;
  DeviceBuffer<T> buffer;
  PaddedInput(const Stream& stream, int agents, std::int64_t count, std::int64_t pad, const std::vector<T>& values)
      : stride(count + pad), buffer(upload(stream, values)) {
    SURGE_CHECK(static_cast<std::int64_t>(values.size()) == agents * stride, "PaddedInput: wrong size");
  }
  rl::PerAgent<const T> view() const { return {buffer.data(), stride}; }
  const T* at(int agent) const { return buffer.data() + agent * stride; }
};

inline PaddedInput<float> random_input(const Stream& stream, int agents, std::int64_t count, std::int64_t pad,
                                       std::uint64_t seed, float low = -2.0f, float high = 2.0f) {
  return {stream, agents, count, pad, random_floats(agents * (count + pad), seed, low, high)};
}

inline std::vector<std::int32_t> random_ints(std::int64_t count, std::uint32_t bound, std::uint64_t seed) {
  Rng rng(seed, 11, 0);
  std::vector<std::int32_t> values(static_cast<std::size_t>(count));
  for (std::int32_t& x : values) x = static_cast<std::int32_t>(rng.next_u32() % bound);
  return values;
}

// An output of `count` elements per agent at a stride of count + pad, twice (the batched launcher's and the
// per-agent launcher's), both starting from the same values.
template <class T>
struct PaddedOutput {
  std::int64_t stride;
  DeviceBuffer<T> batched, single;
  PaddedOutput(const Stream& stream, int agents, std::int64_t count, std::int64_t pad, std::uint64_t seed)
      : stride(count + pad), batched(stream.device(), 0), single(stream.device(), 0) {
    std::vector<T> start(static_cast<std::size_t>(agents * stride));
    const std::vector<float> values = random_floats(agents * stride, seed, -9.0f, 9.0f);
    for (std::size_t i = 0; i < start.size(); ++i) start[i] = static_cast<T>(values[i]);
    batched = upload(stream, start);
    single = upload(stream, start);
  }
  rl::PerAgent<T> view() { return {batched.data(), stride}; }
  T* single_at(int agent) { return single.data() + agent * stride; }
  std::vector<bool> equal(const Stream& stream, int agents) const {
    return agents_equal(stream, agents, stride, stride, batched, single);
  }
};

// Agent k's seed first_seed + seed_step * k and iteration first_iteration + iteration_step * k, on the host
// and on the device.
struct AgentSeeds {
  std::vector<std::uint64_t> values;
  DeviceBuffer<std::uint64_t> seeds;
  DeviceBuffer<rl::TrainState> state;
  AgentSeeds(const Stream& stream, int agents, std::uint64_t first_seed, std::uint64_t seed_step,
             std::int64_t first_iteration, std::int64_t iteration_step) {
    std::vector<rl::TrainState> states(static_cast<std::size_t>(agents), rl::TrainState{});
    for (int k = 0; k < agents; ++k) {
      values.push_back(first_seed + seed_step * static_cast<std::uint64_t>(k));
      states[static_cast<std::size_t>(k)].iteration = first_iteration + iteration_step * k;
    }
    seeds = upload(stream, values);
    state = upload(stream, states);
  }
  std::uint64_t seed_of(int agent) const { return values[static_cast<std::size_t>(agent)]; }
};

// Every epoch's every minibatch of K rollouts of `batch` samples (discrete actions, or continuous ones of
// action_dim columns) gathered into minibatches of `size` rows; agent k has its own seed and iteration.
inline int agents_matching_gather(Device device, int agents, std::int64_t batch, std::int64_t size, int action_dim,
                                  Wrong wrong) {
  const Stream stream(device);
  constexpr int kObsDim = 3;
  constexpr std::int64_t kEpochs = 3;
  const bool continuous = action_dim > 0;
  const PaddedInput<float> obs = random_input(stream, agents, batch * kObsDim, 7, 21);
  const PaddedInput<float> logprob = random_input(stream, agents, batch, 1, 22);
  const PaddedInput<float> value = random_input(stream, agents, batch, 2, 23);
  const PaddedInput<float> advantage = random_input(stream, agents, batch, 3, 24);
  const PaddedInput<float> returns = random_input(stream, agents, batch, 4, 25);
  const PaddedInput<float> continuous_actions = random_input(stream, agents, batch * action_dim, 5, 26);
  const PaddedInput<std::int32_t> actions(stream, agents, batch, 6, random_ints(agents * (batch + 6), 1u << 30, 27));
  const AgentSeeds agent_seeds(stream, agents, 500, 31, 4, 3);

  PaddedOutput<float> out_obs(stream, agents, size * kObsDim, 3, 31), out_logprob(stream, agents, size, 5, 32);
  PaddedOutput<float> out_value(stream, agents, size, 2, 33), out_advantage(stream, agents, size, 4, 34);
  PaddedOutput<float> out_returns(stream, agents, size, 6, 35);
  PaddedOutput<float> out_continuous(stream, agents, size * action_dim, 1, 36);
  PaddedOutput<std::int32_t> out_actions(stream, agents, size, 7, 37);

  rl::GatherBatch in{obs.view(),       {nullptr, 0},   {nullptr, 0}, logprob.view(), value.view(),
                     advantage.view(), returns.view(), kObsDim,      action_dim};
  rl::MinibatchBatch out{out_obs.view(),   {nullptr, 0},         {nullptr, 0},      out_logprob.view(),
                         out_value.view(), out_advantage.view(), out_returns.view()};
  if (continuous) {
    in.continuous_actions = continuous_actions.view();
    out.continuous_actions = out_continuous.view();
  } else {
    in.actions = actions.view();
    out.actions = out_actions.view();
  }
  // The per-agent launcher's outputs: `out` with the second buffer of each pair.
  rl::MinibatchBatch single = out;
  single.obs.data = out_obs.single.data();
  single.actions.data = continuous ? nullptr : out_actions.single.data();
  single.continuous_actions.data = continuous ? out_continuous.single.data() : nullptr;
  single.logprob.data = out_logprob.single.data();
  single.value.data = out_value.single.data();
  single.advantage.data = out_advantage.single.data();
  single.returns.data = out_returns.single.data();
  for (std::int64_t epoch = 0; epoch < kEpochs; ++epoch)
    for (std::int64_t minibatch = 0; minibatch < batch / size; ++minibatch) {
      rl::gather_minibatch_batched(stream, agents, agent_seeds.seeds.data(), batch, agent_seeds.state.data(), kEpochs,
                                   epoch, minibatch, size, in, out);
      for (int k = 0; k < agents; ++k) {
        const rl::Permutation permutation =
            rl::Permutation::make(batch, agent_seeds.seed_of(source_agent(k, Wrong::kSeed, wrong, agents)), 0);
        const rl::BatchView one_in{in.obs[k],     in.actions[k], in.continuous_actions[k],
                                   in.logprob[k], in.value[k],   in.advantage[k],
                                   in.returns[k], kObsDim,       action_dim};
        const rl::MinibatchBuffers one_out{single.obs[k],     single.actions[k], single.continuous_actions[k],
                                           single.logprob[k], single.value[k],   single.advantage[k],
                                           single.returns[k]};
        rl::gather_minibatch(stream, permutation,
                             agent_seeds.state.data() + source_agent(k, Wrong::kIteration, wrong, agents), kEpochs,
                             epoch, minibatch, size, one_in, one_out);
      }
    }
  return agents_equal_in_all({out_obs.equal(stream, agents), out_logprob.equal(stream, agents),
                              out_value.equal(stream, agents), out_advantage.equal(stream, agents),
                              out_returns.equal(stream, agents), out_continuous.equal(stream, agents),
                              out_actions.equal(stream, agents)});
}

// Agent k's loss scalars differ from every other agent's; norm_adv and clip_vloss take both values.
inline std::vector<rl::AgentHyper> distinct_loss_hyper(int agents) {
  std::vector<rl::AgentHyper> hyper = distinct_hyper(agents);
  for (int k = 0; k < agents; ++k) {
    rl::AgentHyper& h = hyper[static_cast<std::size_t>(k)];
    h.clip_coef = 0.2 - 0.05 * k;
    h.ent_coef = 0.01 + 0.02 * k;
    h.vf_coef = 0.5 + 0.25 * k;
    h.norm_adv = k % 2 == 0 ? 1.0 : 0.0;
    h.clip_vloss = k % 3 == 1 ? 0.0 : 1.0;
  }
  return hyper;
}

// What both policy heads' losses read and write besides the head: agent k's scalars, minibatch fields
// (discrete actions of `num_actions`, unused by a Gaussian head), values and their gradient, advantage
// statistics and term sums. old_logprob lies in [logprob_low, logprob_high), far enough from the heads'
// log-probabilities that ratios leave every agent's clip range.
struct LossCase {
  DeviceBuffer<rl::AgentHyper> hyper;
  PaddedInput<std::int32_t> actions;
  PaddedInput<float> old_logprob, old_value, advantage, returns, values;
  PaddedOutput<float> d_values;
  PaddedOutput<double> stats, terms;
  DeviceBuffer<double> scratch;
  LossCase(const Stream& stream, int agents, std::int64_t size, int num_actions, float logprob_low, float logprob_high)
      : hyper(upload(stream, distinct_loss_hyper(agents))),
        actions(stream, agents, size, 5,
                random_ints(agents * (size + 5), static_cast<std::uint32_t>(num_actions > 0 ? num_actions : 1), 41)),
        old_logprob(random_input(stream, agents, size, 1, 42, logprob_low, logprob_high)),
        old_value(random_input(stream, agents, size, 2, 43)),
        advantage(random_input(stream, agents, size, 3, 44, -3.0f, 3.0f)),
        returns(random_input(stream, agents, size, 4, 45)),
        values(random_input(stream, agents, size, 6, 47)),
        d_values(stream, agents, size, 8, 52),
        stats(stream, agents, 2, 1, 53),
        terms(stream, agents, rl::kLossTermCount, 2, 54),
        scratch(stream.device(), rl::ppo_loss_batched_scratch_doubles(stream.device(), agents) + 1) {}
  rl::LossBatch batch(std::int64_t size) const {
    return {size, actions.view(), old_logprob.view(), old_value.view(), advantage.view(), returns.view()};
  }
  // Agent k's minibatch for the per-agent launcher.
  rl::MinibatchView<float> one(int k, std::int64_t size) const {
    rl::MinibatchView<float> view;
    view.size = size;
    view.actions = actions.at(k);
    view.old_logprob = old_logprob.at(k);
    view.old_value = old_value.at(k);
    view.advantage = advantage.at(k);
    view.returns = returns.at(k);
    return view;
  }
  // Per agent: whether its values' gradient, advantage statistics and term sums are the same bits.
  std::vector<bool> equal(const Stream& stream, int agents) const {
    std::vector<bool> all(static_cast<std::size_t>(agents), true);
    for (const std::vector<bool>& equal :
         {d_values.equal(stream, agents), stats.equal(stream, agents), terms.equal(stream, agents)})
      for (std::size_t k = 0; k < all.size(); ++k) all[k] = all[k] && equal[k];
    return all;
  }
};

// The categorical PPO loss of K minibatches of `size` samples and `num_actions` logits.
inline int agents_matching_loss(Device device, int agents, std::int64_t size, int num_actions, Wrong wrong) {
  const Stream stream(device);
  LossCase shared(stream, agents, size, num_actions, -2.5f, -0.5f);
  const PaddedInput<float> logits = random_input(stream, agents, size * num_actions, 7, 46);
  PaddedOutput<float> d_logits(stream, agents, size * num_actions, 9, 51);
  rl::ppo_loss_batched(stream, agents, shared.hyper.data(), shared.batch(size), num_actions, logits.view(),
                       shared.values.view(), shared.stats.view(), shared.scratch.data(), d_logits.view(),
                       shared.d_values.view(), shared.terms.view());
  for (int k = 0; k < agents; ++k)
    rl::ppo_loss<float>(stream, shared.hyper.data(), source_agent(k, Wrong::kScalars, wrong, agents),
                        shared.one(k, size), num_actions, logits.at(k), shared.values.at(k), shared.stats.single_at(k),
                        shared.scratch.data(), d_logits.single_at(k), shared.d_values.single_at(k),
                        shared.terms.single_at(k));
  return agents_equal_in_all({d_logits.equal(stream, agents), shared.equal(stream, agents)});
}

// The Gaussian PPO loss of K minibatches of `size` samples of `dims` action dimensions, each agent with its
// own log std.
inline int agents_matching_gaussian_loss(Device device, int agents, std::int64_t size, int dims, Wrong wrong) {
  const Stream stream(device);
  LossCase shared(stream, agents, size, 0, -1.5f * static_cast<float>(dims) - 1.0f, -0.5f * static_cast<float>(dims));
  const PaddedInput<float> continuous_actions = random_input(stream, agents, size * dims, 3, 61);
  const PaddedInput<float> means = random_input(stream, agents, size * dims, 5, 62, -1.0f, 1.0f);
  const PaddedInput<float> log_std = random_input(stream, agents, dims, 1, 63, -1.0f, 0.5f);
  PaddedOutput<float> d_means(stream, agents, size * dims, 4, 64), d_log_std(stream, agents, size * dims, 6, 65);
  rl::LossBatch batch = shared.batch(size);
  batch.continuous_actions = continuous_actions.view();
  rl::gaussian_ppo_loss_batched(stream, agents, shared.hyper.data(), batch, dims, means.view(), log_std.view(),
                                shared.values.view(), shared.stats.view(), shared.scratch.data(), d_means.view(),
                                d_log_std.view(), shared.d_values.view(), shared.terms.view());
  for (int k = 0; k < agents; ++k) {
    rl::MinibatchView<float> one = shared.one(k, size);
    one.continuous_actions = continuous_actions.at(k);
    rl::gaussian_ppo_loss<float>(stream, shared.hyper.data(), source_agent(k, Wrong::kScalars, wrong, agents), one,
                                 dims, means.at(k), log_std.at(k), shared.values.at(k), shared.stats.single_at(k),
                                 shared.scratch.data(), d_means.single_at(k), d_log_std.single_at(k),
                                 shared.d_values.single_at(k), shared.terms.single_at(k));
  }
  return agents_equal_in_all(
      {d_means.equal(stream, agents), d_log_std.equal(stream, agents), shared.equal(stream, agents)});
}

// Gaussian draws of K agents of `envs` environments and `dims` dimensions, each agent from its own means,
// log std, seed and counter (the TrainState's iteration, read with TrainState's stride), against
// sample_gaussian_actions with a solo run's ActionDraw. With `optional_outputs` false the actions and
// log-probabilities are not written (data null).
inline int agents_matching_gaussian_draws(Device device, int agents, std::int64_t envs, int dims, bool deterministic,
                                          bool optional_outputs, Wrong wrong) {
  const Stream stream(device);
  const PaddedInput<float> mean = random_input(stream, agents, envs * dims, 3, 71, -1.0f, 1.0f);
  const PaddedInput<float> log_std = random_input(stream, agents, dims, 2, 72, -1.0f, 0.5f);
  const DeviceBuffer<float> low = upload(stream, random_floats(dims, 73, -1.2f, -0.6f));
  const DeviceBuffer<float> high = upload(stream, random_floats(dims, 74, 0.6f, 1.2f));
  const AgentSeeds agent_seeds(stream, agents, 2000, 13, 5, 2);
  PaddedOutput<float> actions(stream, agents, envs * dims, 3, 75), logprob(stream, agents, envs, 2, 76);
  PaddedOutput<float> env_actions(stream, agents, envs * dims, 1, 77);
  // Agent k's counter is its TrainState's iteration, read with TrainState's stride.
  const rl::TrainState* state = agent_seeds.state.data();
  const rl::BatchedActionDraw draw{
      agent_seeds.seeds.data(), {&state->iteration, sizeof(rl::TrainState) / sizeof(std::int64_t)}, 6, 4, 9};
  const auto optional = [&](rl::PerAgent<float> view) { return optional_outputs ? view : rl::PerAgent<float>{}; };
  rl::sample_gaussian_actions_batched(stream, agents, mean.view(), log_std.view(), envs, dims, low.data(), high.data(),
                                      draw, deterministic, optional(actions.view()), optional(logprob.view()),
                                      env_actions.view());
  for (int k = 0; k < agents; ++k) {
    const rl::ActionDraw solo{agent_seeds.seed_of(source_agent(k, Wrong::kSeed, wrong, agents)),
                              &state[source_agent(k, Wrong::kIteration, wrong, agents)].iteration, draw.draws_per_count,
                              draw.draw, draw.first_env};
    rl::sample_gaussian_actions(stream, mean.at(k), log_std.at(k), envs, dims, low.data(), high.data(), solo,
                                deterministic, optional_outputs ? actions.single_at(k) : nullptr,
                                optional_outputs ? logprob.single_at(k) : nullptr, env_actions.single_at(k));
  }
  return agents_equal_in_all(
      {actions.equal(stream, agents), logprob.equal(stream, agents), env_actions.equal(stream, agents)});
}

// The checks each test runs on its device: K = 1 and 3 for every case, and K = 3 with each wrong input,
// which must fail for every agent.
inline void check_batched_gather(Device device) {
  // batch, minibatch size: one odd minibatch in a partial tile, several minibatches, over the CPU's fork.
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes{{37, 37}, {600, 150}, {999, 333}, {4100, 1025}};
  for (const int action_dim : {0, 2})
    for (const auto& [batch, size] : sizes) {
      INFO("batch " << batch << ", minibatch size " << size << ", action_dim " << action_dim);
      CHECK(agents_matching_gather(device, 1, batch, size, action_dim, Wrong::kNothing) == 1);
      CHECK(agents_matching_gather(device, 3, batch, size, action_dim, Wrong::kNothing) == 3);
    }
  CHECK(agents_matching_gather(device, 3, 600, 150, 0, Wrong::kSeed) == 0);
  CHECK(agents_matching_gather(device, 3, 600, 150, 2, Wrong::kIteration) == 0);
}

inline void check_batched_loss(Device device) {
  for (const int num_actions : {2, 5})
    for (const std::int64_t size : {37, 256, 4099}) {
      INFO("minibatch size " << size << ", " << num_actions << " actions");
      CHECK(agents_matching_loss(device, 1, size, num_actions, Wrong::kNothing) == 1);
      CHECK(agents_matching_loss(device, 3, size, num_actions, Wrong::kNothing) == 3);
    }
  CHECK(agents_matching_loss(device, 3, 37, 5, Wrong::kScalars) == 0);
}

inline void check_batched_gaussian_loss(Device device) {
  for (const int dims : {1, 3})
    for (const std::int64_t size : {37, 4099}) {
      INFO("minibatch size " << size << ", " << dims << " dimensions");
      CHECK(agents_matching_gaussian_loss(device, 1, size, dims, Wrong::kNothing) == 1);
      CHECK(agents_matching_gaussian_loss(device, 3, size, dims, Wrong::kNothing) == 3);
    }
  CHECK(agents_matching_gaussian_loss(device, 3, 37, 3, Wrong::kScalars) == 0);
}

inline void check_batched_gaussian_draws(Device device) {
  for (const int dims : {1, 2, 3})
    for (const std::int64_t envs : {37, 4099}) {
      INFO(envs << " environments, " << dims << " dimensions");
      CHECK(agents_matching_gaussian_draws(device, 1, envs, dims, false, true, Wrong::kNothing) == 1);
      CHECK(agents_matching_gaussian_draws(device, 3, envs, dims, false, true, Wrong::kNothing) == 3);
    }
  CHECK(agents_matching_gaussian_draws(device, 3, 37, 3, false, false, Wrong::kNothing) == 3);
  CHECK(agents_matching_gaussian_draws(device, 3, 37, 3, true, true, Wrong::kNothing) == 3);  // the means
  CHECK(agents_matching_gaussian_draws(device, 3, 37, 3, false, true, Wrong::kSeed) == 0);
  CHECK(agents_matching_gaussian_draws(device, 3, 37, 3, false, true, Wrong::kIteration) == 0);
}

// Every case above on `device`, one section each.
inline void check_batched_loss_pieces(Device device) {
  SECTION("the gather takes each agent's rows from its own seed and iteration") { check_batched_gather(device); }
  SECTION("the categorical PPO loss gives each agent its own loss, gradient and sums") { check_batched_loss(device); }
  SECTION("the Gaussian PPO loss gives each agent its own loss, gradients and sums") {
    check_batched_gaussian_loss(device);
  }
  SECTION("Gaussian draws follow each agent's means, log std, seed and counter") {
    check_batched_gaussian_draws(device);
  }
}

}  // namespace surge::testing
