#pragma once
// The batched observation normalisation and reward scaling launchers (rl/batched_kernels.hpp,
// rl/normalization.cu) against their per-agent twins on one device, shared by the CPU and the GPU test. A
// case runs a few calls of K agents once batched and once per agent on slices of copies of the same state,
// then counts the agents whose every output (with the padding between agents) is equal bit for bit. Every
// agent has its own clips, gamma, samples and flags; with `shift` > 0 agent k's expected outputs are made
// from agent k + shift's inputs and scalars (mod K): then no agent may match.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/agent_hyper.hpp"
#include "rl/batched_kernels.hpp"
#include "rl/normalization.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "tests/support/batched_bookkeeping_cases.hpp"
#include "tests/support/batched_kernel_cases.hpp"

namespace surge::testing {

// distinct_hyper's scalars with clips that bind for some values and differ per agent.
inline std::vector<rl::AgentHyper> normalization_hyper(int agents) {
  std::vector<rl::AgentHyper> hyper = distinct_hyper(agents);
  for (int k = 0; k < agents; ++k) {
    hyper[static_cast<std::size_t>(k)].obs_clip = 1.5 + 0.75 * k;
    hyper[static_cast<std::size_t>(k)].reward_clip = 0.6 + 0.3 * k;
  }
  return hyper;
}

// K agents' starting moments of dim values (mean 0, var 1, count 1e-4) at `stride` apart, -9 between them.
inline std::vector<double> initial_moments(int agents, int dim, std::int64_t stride) {
  std::vector<double> moments(static_cast<std::size_t>(agents * stride), -9.0);
  for (int k = 0; k < agents; ++k)
    for (std::int64_t i = 0; i < rl::moments_size(dim); ++i)
      moments[static_cast<std::size_t>(k * stride + i)] =
          i < dim ? 0.0 : (i < 2 * dim ? 1.0 : rl::kMomentsInitialCount);
  return moments;
}

// Scratch for the batched launcher's reductions and for the per-agent ones'.
struct NormalizationScratch {
  DeviceBuffer<double> batched, single;
  NormalizationScratch(Device device, int agents)
      : batched(device, rl::normalization_batched_scratch_doubles(device, agents) + 1),
        single(device, rl::normalization_scratch_doubles(device) + 1) {}
};

// Three updates of K agents' observation moments over `count` samples of `dim` values (agent k's offset and
// scale its own), each followed by normalising the samples in place and the ended rows of a second buffer.
inline int agents_matching_observations(Device device, int agents, std::int64_t count, int dim, int shift) {
  const Stream stream(device);
  const std::int64_t sample_stride = count * dim + 3, moments_stride = rl::moments_size(dim) + 2,
                     sums_stride = 2 * rl::kMaxNormalizedDim + 1, flag_stride = count + 5;
  const DeviceBuffer<rl::AgentHyper> hyper = upload(stream, normalization_hyper(agents));
  Twin<double> moments(stream, initial_moments(agents, dim, moments_stride));
  Twin<double> sums(stream, std::vector<double>(static_cast<std::size_t>(agents * sums_stride), -3.0));
  const NormalizationScratch scratch(device, agents);
  AgentsStillEqual equal(agents);
  for (std::uint64_t seed = 300; seed < 330; seed += 10) {
    const float call = static_cast<float>(seed - 300) / 10.0f;
    std::vector<float> values = random_floats(agents * sample_stride, seed, -1.0f, 1.0f);
    for (int k = 0; k < agents; ++k)  // agent k's observations around 5k - 4, of scale 1 + k, later wider
      for (std::int64_t i = 0; i < count * dim; ++i) {
        float& x = values[static_cast<std::size_t>(k * sample_stride + i)];
        x = (5.0f * k - 4.0f) + (1.0f + k) * (1.0f + 2.0f * call) * x;
      }
    const DeviceBuffer<float> samples = upload(stream, values);
    Twin<float> rows(stream, values);
    Twin<float> finals(stream, random_floats(agents * sample_stride, seed + 1, -30.0f, 30.0f));
    std::vector<std::uint8_t> terminated_host, truncated_host;
    random_episode_ends(agents, count, flag_stride, seed + 2, terminated_host, truncated_host);
    const DeviceBuffer<std::uint8_t> terminated = upload(stream, terminated_host),
                                     truncated = upload(stream, truncated_host);

    rl::update_moments_batched(stream, agents, {samples.data(), sample_stride}, count, dim,
                               {moments.batched.data(), moments_stride}, {sums.batched.data(), sums_stride},
                               scratch.batched.data());
    rl::normalize_rows_batched(stream, agents, {rows.batched.data(), sample_stride}, count, dim,
                               {moments.batched.data(), moments_stride}, hyper.data());
    rl::normalize_rows_batched(stream, agents, {finals.batched.data(), sample_stride}, count, dim,
                               {moments.batched.data(), moments_stride}, hyper.data(), {terminated.data(), flag_stride},
                               {truncated.data(), flag_stride});
    for (int k = 0; k < agents; ++k) {
      const int in = shifted(k, shift, agents);
      double* const own_moments = moments.single.data() + k * moments_stride;
      rl::update_moments(stream, samples.data() + in * sample_stride, count, dim, own_moments,
                         sums.single.data() + k * sums_stride, scratch.single.data());
      float* const own_rows = rows.single.data() + k * sample_stride;
      if (in != k)  // the shifted agent's samples, normalised in agent k's place
        copy_bytes(own_rows, device, samples.data() + in * sample_stride, device,
                   static_cast<std::size_t>(count * dim) * sizeof(float), stream);
      rl::normalize_rows(stream, own_rows, count, dim, own_moments, hyper.data(), in);
      rl::normalize_rows(stream, finals.single.data() + k * sample_stride, count, dim, own_moments, hyper.data(), in,
                         terminated.data() + in * flag_stride, truncated.data() + in * flag_stride);
    }
    equal.keep({moments.equal(stream, agents, moments_stride), sums.equal(stream, agents, sums_stride),
                rows.equal(stream, agents, sample_stride), finals.equal(stream, agents, sample_stride)});
  }
  return equal.count();
}

// Three calls of K agents' reward scaling over T x N rollouts (accumulators carried, episodes ending at
// different steps per agent, each agent's own gamma and clip).
inline int agents_matching_rewards(Device device, int agents, std::int64_t steps, std::int64_t envs, int shift) {
  const Stream stream(device);
  const std::int64_t slots = steps * envs;
  const std::int64_t reward_stride = slots + 3, flag_stride = slots + 6, accumulator_stride = envs + 1,
                     scaled_stride = slots + 2, moments_stride = rl::moments_size(1) + 1, sums_stride = 2 * steps + 3;
  const DeviceBuffer<rl::AgentHyper> hyper = upload(stream, normalization_hyper(agents));
  Twin<double> moments(stream, initial_moments(agents, 1, moments_stride));
  Twin<float> accumulator(stream, random_floats(agents * accumulator_stride, 41, -2.0f, 2.0f));
  Twin<float> scaled(stream, std::vector<float>(static_cast<std::size_t>(agents * scaled_stride), -5.0f));
  Twin<double> sums(stream, std::vector<double>(static_cast<std::size_t>(agents * sums_stride), -4.0));
  const NormalizationScratch scratch(device, agents);
  AgentsStillEqual equal(agents);
  for (int call = 0; call < 3; ++call) {
    const std::uint64_t seed = 400 + 10 * static_cast<std::uint64_t>(call);
    std::vector<float> rewards = random_floats(agents * reward_stride, seed, -1.0f, 1.0f);
    for (int k = 0; k < agents; ++k)  // agent k's rewards of scale 1 + 3k, some large enough to clip
      for (std::int64_t s = 0; s < slots; ++s) rewards[static_cast<std::size_t>(k * reward_stride + s)] *= 1.0f + 3 * k;
    const DeviceBuffer<float> reward = upload(stream, rewards);
    std::vector<std::uint8_t> terminated_host, truncated_host;
    random_episode_ends(agents, slots, flag_stride, seed + 1, terminated_host, truncated_host);
    const DeviceBuffer<std::uint8_t> terminated = upload(stream, terminated_host),
                                     truncated = upload(stream, truncated_host);
    rl::scale_rewards_batched(stream, agents, steps, envs, hyper.data(), {reward.data(), reward_stride},
                              {terminated.data(), flag_stride}, {truncated.data(), flag_stride},
                              {accumulator.batched.data(), accumulator_stride}, {scaled.batched.data(), scaled_stride},
                              {moments.batched.data(), moments_stride}, {sums.batched.data(), sums_stride},
                              scratch.batched.data());
    for (int k = 0; k < agents; ++k) {
      const int in = shifted(k, shift, agents);
      rl::scale_rewards(stream, steps, envs, hyper.data(), in, reward.data() + in * reward_stride,
                        terminated.data() + in * flag_stride, truncated.data() + in * flag_stride,
                        accumulator.single.data() + k * accumulator_stride, scaled.single.data() + k * scaled_stride,
                        moments.single.data() + k * moments_stride, sums.single.data() + k * sums_stride,
                        scratch.single.data());
    }
    equal.keep({moments.equal(stream, agents, moments_stride), accumulator.equal(stream, agents, accumulator_stride),
                scaled.equal(stream, agents, scaled_stride), sums.equal(stream, agents, sums_stride)});
  }
  return equal.count();
}

// K = 1 and 3 for dims 1, 4 and kMaxNormalizedDim, sample counts under and over the CPU's 4096-element fork;
// K = 3 shifted must fail for every agent.
inline void check_batched_observation_normalization(Device device) {
  for (const int dim : {1, 4, rl::kMaxNormalizedDim}) {
    INFO("dim " << dim);
    check_agents_match({37, 1, 5003}, 1, [&](int agents, std::int64_t count, int shift) {
      return agents_matching_observations(device, agents, count, dim, shift);
    });
  }
}

inline void check_batched_reward_scaling(Device device) {  // 9 steps of `envs` environments
  check_agents_match({13, 1, 4099}, 1, [&](int agents, std::int64_t envs, int shift) {
    return agents_matching_rewards(device, agents, 9, envs, shift);
  });
}

}  // namespace surge::testing
