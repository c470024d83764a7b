#pragma once
// The batched learner's launchers (rl/batched_kernels.hpp) against their per-agent twins on one device,
// shared by the CPU and the GPU test. Each case runs the batched launcher once over K agents and the
// per-agent launcher K times on agent slices of a copy of the same inputs, then counts the agents whose
// results are equal bit for bit. With `shift` > 0 agent k's expected result is made with agent
// k + shift's scalars or seed (mod K): every agent's scalars differ, so then no agent may match.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "rl/adam.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/batched_kernels.hpp"
#include "rl/categorical.hpp"
#include "rl/gae.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::testing {

template <class T>
DeviceBuffer<T> upload(const Stream& stream, const std::vector<T>& host) {
  DeviceBuffer<T> buffer(stream.device(), static_cast<std::int64_t>(host.size()));
  from_host(buffer.span(), host, stream);
  return buffer;
}

template <class T>
std::vector<T> download(const Stream& stream, const DeviceBuffer<T>& buffer) {
  return to_host(buffer.cspan(), stream);
}

// Per agent: whether its `count` elements at k * stride are the same bits in `got` and `want`.
template <class T>
std::vector<bool> agents_equal(const Stream& stream, int agents, std::int64_t stride, std::int64_t count,
                               const DeviceBuffer<T>& got, const DeviceBuffer<T>& want) {
  const std::vector<T> a = download(stream, got), b = download(stream, want);
  std::vector<bool> equal(static_cast<std::size_t>(agents));
  for (int k = 0; k < agents; ++k)
    equal[static_cast<std::size_t>(k)] =
        std::memcmp(&a[static_cast<std::size_t>(k * stride)], &b[static_cast<std::size_t>(k * stride)],
                    static_cast<std::size_t>(count) * sizeof(T)) == 0;
  return equal;
}

// The agents equal in every one of `outputs`.
inline int agents_equal_in_all(std::initializer_list<std::vector<bool>> outputs) {
  int matching = 0;
  for (std::size_t k = 0; k < outputs.begin()->size(); ++k) {
    bool all = true;
    for (const std::vector<bool>& equal : outputs) all = all && equal[k];
    matching += all;
  }
  return matching;
}

inline std::vector<float> random_floats(std::int64_t count, std::uint64_t seed, float low, float high) {
  Rng rng(seed, 7, 0);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& x : values) x = rng.uniform(low, high);
  return values;
}

// Agent k's scalars differ from every other agent's in each field a case reads.
inline std::vector<rl::AgentHyper> distinct_hyper(int agents) {
  std::vector<rl::AgentHyper> hyper(static_cast<std::size_t>(agents));
  for (int k = 0; k < agents; ++k) {
    rl::AgentHyper& h = hyper[static_cast<std::size_t>(k)];
    h.learning_rate = 2.5e-4 * (k + 1);
    h.anneal_lr = k % 2 == 0 ? 1.0 : 0.0;
    h.gamma = 0.99 - 0.02 * k;
    h.gae_lambda = 0.95 - 0.05 * k;
    h.max_grad_norm = 0.5 + 0.25 * k;
    h.adam_eps = 1e-5 * (k + 1);
    h.target_kl = 0.01 * (k + 1);
  }
  return hyper;
}

inline int shifted(int agent, int shift, int agents) { return (agent + shift) % agents; }

// The sums of squares (one segment per agent, padded strides) against gradient_norm_sq_reference, which is
// parallel_reduce itself: agent k's total is compared with that of agent k + shift's gradients.
inline int agents_matching_gradient_norms(Device device, int agents, std::int64_t count, int shift) {
  const Stream stream(device);
  const std::int64_t stride = count + 5;
  const DeviceBuffer<float> grads = upload(stream, random_floats(agents * stride, 1, -2.0f, 2.0f));
  DeviceBuffer<double> scratch(device, rl::batched_reduce_scratch_doubles(device, agents, 1) + 1);
  DeviceBuffer<double> batched(device, 2 * agents), single(device, agents);
  rl::gradient_norm_sq_batched(stream, agents, {grads.data(), stride}, count, scratch.data(), batched.data(), 2);
  for (int k = 0; k < agents; ++k)
    rl::gradient_norm_sq_reference(stream, {grads.data() + k * stride, count, device}, scratch.data(),
                                   single.data() + k);
  const std::vector<double> got = download(stream, batched), want = download(stream, single);
  int matching = 0;
  for (int k = 0; k < agents; ++k)
    matching +=
        std::memcmp(&got[2 * k], &want[static_cast<std::size_t>(shifted(k, shift, agents))], sizeof(double)) == 0;
  return matching;
}

// A width-4 segmented reduction: explained_variance_sums per agent.
inline int agents_matching_explained_variance(Device device, int agents, std::int64_t slots, int shift) {
  const Stream stream(device);
  const std::int64_t stride = slots + 3;
  const DeviceBuffer<float> returns = upload(stream, random_floats(agents * stride, 2, -5.0f, 5.0f));
  const DeviceBuffer<float> value = upload(stream, random_floats(agents * stride, 3, -5.0f, 5.0f));
  DeviceBuffer<double> scratch(device, rl::batched_reduce_scratch_doubles(device, agents, 4) + 1);
  DeviceBuffer<double> batched(device, 4 * agents), single(device, 4 * agents);
  rl::explained_variance_sums_batched(stream, agents, slots, {returns.data(), stride}, {value.data(), stride},
                                      scratch.data(), batched.data());
  for (int k = 0; k < agents; ++k)
    rl::explained_variance_sums(stream, slots, returns.data() + k * stride, value.data() + k * stride, scratch.data(),
                                single.data() + 4 * k);
  const std::vector<double> got = download(stream, batched), want = download(stream, single);
  int matching = 0;
  for (int k = 0; k < agents; ++k)
    matching += std::memcmp(&got[4 * static_cast<std::size_t>(k)],
                            &want[4 * static_cast<std::size_t>(shifted(k, shift, agents))], 4 * sizeof(double)) == 0;
  return matching;
}

// GAE over K rollouts of T steps and N environments, each agent with its own gamma and lambda.
inline int agents_matching_gae(Device device, int agents, std::int64_t steps, std::int64_t envs, int shift) {
  const Stream stream(device);
  const std::int64_t slots = steps * envs, stride = slots + envs;  // one [T+1][N] stride serves every field
  std::vector<std::uint8_t> terminated(static_cast<std::size_t>(agents * stride)), truncated(terminated.size());
  Rng rng(5, 0, 0);
  for (std::size_t s = 0; s < terminated.size(); ++s) {
    const float u = rng.uniform();
    terminated[s] = (u < 0.08f || (u >= 0.16f && u < 0.20f)) ? 1 : 0;
    truncated[s] = (u >= 0.08f && u < 0.20f) ? 1 : 0;
  }
  const DeviceBuffer<rl::AgentHyper> hyper = upload(stream, distinct_hyper(agents));
  const DeviceBuffer<float> reward = upload(stream, random_floats(agents * stride, 6, -1.0f, 2.0f));
  const DeviceBuffer<float> value = upload(stream, random_floats(agents * stride, 7, -3.0f, 3.0f));
  const DeviceBuffer<float> final_value = upload(stream, random_floats(agents * stride, 8, -3.0f, 3.0f));
  const DeviceBuffer<std::uint8_t> term = upload(stream, terminated), trunc = upload(stream, truncated);
  DeviceBuffer<float> adv(device, agents * stride), ret(device, agents * stride);
  DeviceBuffer<float> adv_single(device, agents * stride), ret_single(device, agents * stride);
  const rl::GaeBatch batch{{reward.data(), stride}, {term.data(), stride},        {trunc.data(), stride},
                           {value.data(), stride},  {final_value.data(), stride}, {adv.data(), stride},
                           {ret.data(), stride}};
  rl::compute_gae_batched(stream, agents, steps, envs, hyper.data(), batch);
  for (int k = 0; k < agents; ++k) {
    const std::int64_t at = k * stride;
    rl::compute_gae(stream, steps, envs, hyper.data(), shifted(k, shift, agents), reward.data() + at, term.data() + at,
                    trunc.data() + at, value.data() + at, final_value.data() + at, adv_single.data() + at,
                    ret_single.data() + at);
  }
  return agents_equal_in_all({agents_equal(stream, agents, stride, slots, adv, adv_single),
                              agents_equal(stream, agents, stride, slots, ret, ret_single)});
}

// Three Adam steps of K agents: learning rates, clip norms and eps differ; agent 1 (of 3) is frozen on the
// second step; step 1 clips some agents and not others.
inline int agents_matching_adam(Device device, int agents, std::int64_t count, int shift) {
  const Stream stream(device);
  const std::int64_t stride = count + 11;
  const rl::AdamConfig config;
  const DeviceBuffer<rl::AgentHyper> hyper = upload(stream, distinct_hyper(agents));
  const std::vector<float> start = random_floats(agents * stride, 9, -1.0f, 1.0f);
  DeviceBuffer<float> params = upload(stream, start), params_single = upload(stream, start);
  DeviceBuffer<float> m = upload(stream, std::vector<float>(start.size(), 0.0f)),
                      m_single = upload(stream, download(stream, m));
  DeviceBuffer<float> v = upload(stream, download(stream, m)), v_single = upload(stream, download(stream, m));
  std::vector<rl::OptimizerScalars> initial(static_cast<std::size_t>(agents), rl::OptimizerScalars{});
  for (int k = 0; k < agents; ++k) initial[static_cast<std::size_t>(k)].learning_rate = 1e-3 * (k + 1);
  DeviceBuffer<rl::OptimizerScalars> scalars = upload(stream, initial), scalars_single = upload(stream, initial);
  DeviceBuffer<double> scratch(device, rl::batched_reduce_scratch_doubles(device, agents, 1) + 1);
  for (int step = 0; step < 3; ++step) {
    const float scale = step == 0 ? 0.05f : 1.0f;
    const DeviceBuffer<float> grads = upload(stream, random_floats(agents * stride, 10 + step, -scale, scale));
    if (step == 1 && agents > 1) {
      std::vector<rl::OptimizerScalars> host = download(stream, scalars);
      host[1].frozen = 1.0;
      from_host(scalars.span(), host, stream);
      host = download(stream, scalars_single);
      host[1].frozen = 1.0;
      from_host(scalars_single.span(), host, stream);
    }
    const rl::AdamBatch batch{{params.data(), stride}, {grads.data(), stride}, {m.data(), stride}, {v.data(), stride}};
    rl::adam_step_batched(stream, config, agents, hyper.data(), batch, count, scalars.data(), scratch.data());
    for (int k = 0; k < agents; ++k) {
      const std::int64_t at = k * stride;
      rl::adam_step(stream, config, hyper.data(), shifted(k, shift, agents), {params_single.data() + at, count, device},
                    {grads.data() + at, count, device}, {m_single.data() + at, count, device},
                    {v_single.data() + at, count, device}, scalars_single.data() + k, scratch.data());
    }
  }
  return agents_equal_in_all({agents_equal(stream, agents, stride, stride, params, params_single),
                              agents_equal(stream, agents, stride, stride, m, m_single),
                              agents_equal(stream, agents, stride, stride, v, v_single),
                              agents_equal(stream, agents, 1, 1, scalars, scalars_single)});
}

// begin_iteration, then two end_epochs whose last minibatches' KL straddles the agents' target KLs.
inline int agents_matching_iteration_bookkeeping(Device device, int agents, int shift) {
  const Stream stream(device);
  const DeviceBuffer<rl::AgentHyper> hyper = upload(stream, distinct_hyper(agents));
  std::vector<rl::TrainState> states(static_cast<std::size_t>(agents), rl::TrainState{});
  std::vector<rl::OptimizerScalars> optimizers(static_cast<std::size_t>(agents), rl::OptimizerScalars{});
  for (int k = 0; k < agents; ++k) {
    states[static_cast<std::size_t>(k)].iteration = 3 + k;
    states[static_cast<std::size_t>(k)].epochs_applied = 7;
    optimizers[static_cast<std::size_t>(k)].frozen = 1.0;
  }
  const std::int64_t minibatch = 64, terms_stride = rl::kLossTermCount + 1;
  std::vector<double> terms(static_cast<std::size_t>(agents * terms_stride), 0.0);
  for (int k = 0; k < agents; ++k)  // mean KL 0.015 * (k + 1): above agent k's target 0.01 * (k + 1), under k+1's
    terms[static_cast<std::size_t>(k * terms_stride + rl::kApproxKl)] = 0.015 * (k + 1) * minibatch;
  const DeviceBuffer<double> last_terms = upload(stream, terms);
  DeviceBuffer<rl::TrainState> state = upload(stream, states), state_single = upload(stream, states);
  DeviceBuffer<rl::OptimizerScalars> optimizer = upload(stream, optimizers),
                                     optimizer_single = upload(stream, optimizers);
  const std::int64_t iterations = 10;
  rl::begin_iteration_batched(stream, agents, hyper.data(), state.data(), optimizer.data(), iterations);
  for (int epoch = 0; epoch < 2; ++epoch)
    rl::end_epoch_batched(stream, agents, hyper.data(), state.data(), optimizer.data(),
                          {last_terms.data(), terms_stride}, minibatch);
  for (int k = 0; k < agents; ++k) {
    const int scalars_of = shifted(k, shift, agents);
    rl::begin_iteration(stream, hyper.data(), scalars_of, state_single.data() + k, optimizer_single.data() + k,
                        iterations);
    for (int epoch = 0; epoch < 2; ++epoch)
      rl::end_epoch(stream, hyper.data(), scalars_of, state_single.data() + k, optimizer_single.data() + k,
                    last_terms.data() + k * terms_stride, minibatch);
  }
  return agents_equal_in_all({agents_equal(stream, agents, 1, 1, state, state_single),
                              agents_equal(stream, agents, 1, 1, optimizer, optimizer_single)});
}

// Categorical draws of K agents, each from its own seed and its own counter (the TrainState's iteration,
// read with TrainState's stride), against sample_actions with a solo run's ActionDraw.
inline int agents_matching_actions(Device device, int agents, std::int64_t envs, bool greedy, int shift) {
  const Stream stream(device);
  constexpr int kActions = 5;
  const std::int64_t stride = envs * kActions + 2, out_stride = envs + 1;
  const DeviceBuffer<float> logits = upload(stream, random_floats(agents * stride, 12, -2.0f, 2.0f));
  std::vector<std::uint64_t> seed_values(static_cast<std::size_t>(agents));
  std::vector<rl::TrainState> states(static_cast<std::size_t>(agents), rl::TrainState{});
  for (int k = 0; k < agents; ++k) {
    seed_values[static_cast<std::size_t>(k)] = 1000 + 17 * static_cast<std::uint64_t>(k);
    states[static_cast<std::size_t>(k)].iteration = 2 + k;
  }
  const DeviceBuffer<std::uint64_t> seeds = upload(stream, seed_values);
  const DeviceBuffer<rl::TrainState> state = upload(stream, states);
  DeviceBuffer<std::int32_t> actions(device, agents * out_stride), actions_single(device, agents * out_stride);
  DeviceBuffer<float> logprob(device, agents * out_stride), logprob_single(device, agents * out_stride);
  const std::int64_t counter_stride = sizeof(rl::TrainState) / sizeof(std::int64_t);
  rl::BatchedActionDraw draw;
  draw.seeds = seeds.data();
  draw.draw_counter = {&state.data()->iteration, counter_stride};
  draw.draws_per_count = 8;
  draw.draw = 3;
  draw.first_env = 4;
  rl::sample_actions_batched(stream, agents, {logits.data(), stride}, envs, kActions, draw, greedy,
                             {actions.data(), out_stride}, {logprob.data(), out_stride});
  for (int k = 0; k < agents; ++k) {
    rl::ActionDraw solo;
    solo.seed = seed_values[static_cast<std::size_t>(shifted(k, shift, agents))];
    solo.draw_counter = &state.data()[k].iteration;
    solo.draws_per_count = draw.draws_per_count;
    solo.draw = draw.draw;
    solo.first_env = draw.first_env;
    rl::sample_actions(stream, logits.data() + k * stride, envs, kActions, solo, greedy,
                       actions_single.data() + k * out_stride, logprob_single.data() + k * out_stride);
  }
  return agents_equal_in_all({agents_equal(stream, agents, out_stride, envs, actions, actions_single),
                              agents_equal(stream, agents, out_stride, envs, logprob, logprob_single)});
}

// The checks each test runs on its device: K = 1 and 3 for every size (odd, some over the CPU's 4096-element
// fork), and K = 3 with agents shifted by `shift` on the first size, which must fail for every agent.
// matching(agents, size, shift) is one of the counts above.
template <class Matching>
void check_agents_match(std::initializer_list<std::int64_t> sizes, int shift, Matching matching) {
  for (const std::int64_t size : sizes) {
    INFO("size " << size);
    CHECK(matching(1, size, 0) == 1);
    CHECK(matching(3, size, 0) == 3);
  }
  CHECK(matching(3, *sizes.begin(), shift) == 0);
}

inline void check_batched_gradient_norms(Device device) {
  check_agents_match({301, 1, 63, 4099, 100003}, 1, [&](int agents, std::int64_t count, int shift) {
    return agents_matching_gradient_norms(device, agents, count, shift);
  });
}

inline void check_batched_explained_variance(Device device) {
  check_agents_match({640, 5, 4097}, 2, [&](int agents, std::int64_t slots, int shift) {
    return agents_matching_explained_variance(device, agents, slots, shift);
  });
}

inline void check_batched_gae(Device device) {  // 9 steps of `envs` environments
  check_agents_match({13, 4099}, 1, [&](int agents, std::int64_t envs, int shift) {
    return agents_matching_gae(device, agents, 9, envs, shift);
  });
}

inline void check_batched_adam(Device device) {
  check_agents_match({301, 7, 5001}, 1, [&](int agents, std::int64_t count, int shift) {
    return agents_matching_adam(device, agents, count, shift);
  });
}

inline void check_batched_iteration_bookkeeping(Device device) {
  CHECK(agents_matching_iteration_bookkeeping(device, 1, 0) == 1);
  CHECK(agents_matching_iteration_bookkeeping(device, 3, 0) == 3);
  CHECK(agents_matching_iteration_bookkeeping(device, 3, 1) == 0);
}

inline void check_batched_actions(Device device) {
  check_agents_match({37, 1, 4099}, 1, [&](int agents, std::int64_t envs, int shift) {
    return agents_matching_actions(device, agents, envs, false, shift);
  });
  CHECK(agents_matching_actions(device, 3, 37, true, 0) == 3);  // greedy: the argmax, no seed read
}

}  // namespace surge::testing
