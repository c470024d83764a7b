// The CUDA backend against its CPU twin, on the same seed: Gymnasium's transitions through
// transition(), stepped trajectories, random actions, episode statistics and the fused
// rollout_random(). Runs only where a usable GPU exists (the GPU test main reports a skip otherwise).
//
// Why trajectories are compared per environment only up to its first disagreement on a flag:
// the device's sinf/cosf and its fused multiply-adds round differently from the host's, so the
// states differ in their last bits. That is harmless until a state sits within those bits of a
// termination threshold: then one backend ends the episode and the other does not, and from there
// the two environments live different episodes (one resets, the other goes on), which no tolerance
// can compare. So each environment is compared step by step, rewards and flags exactly, until its
// flags first disagree; such divergences must stay rare (a flag flip needs a state within rounding
// of a threshold).
// Observations are compared within 1e-4 + 1e-4*|ref| over the first kComparedEpisodeSteps steps of
// every episode. Resets are bit-identical on both backends, so differences start from zero in each
// episode, but the upright pole is unstable: a difference grows by about 8% per step (e^(4/s * 0.02 s)),
// so a last-bit difference stays far inside the tolerance for 50 steps (x54) and would not for the
// rare random-action episode that lasts 150 (x1e5).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/randomized_physics.hpp"

using surge::ActionView;
using surge::Device;
using surge::DeviceBuffer;
using surge::Engine;
using surge::Stream;

namespace {

constexpr int kObsDim = 4;
const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

bool close(float value, float ref) { return std::fabs(value - ref) <= 1e-4f + 1e-4f * std::fabs(ref); }

// What one step wrote, copied to the host.
struct StepRecord {
  std::vector<float> obs, reward, final_obs;        // [N][obs_dim], [N], [N][obs_dim] (empty if not written)
  std::vector<std::uint8_t> terminated, truncated;  // [N]
};

constexpr std::int64_t kComparedEpisodeSteps = 50;

// Compares the CPU and CUDA records of a run step by step, per environment, until the env's flags disagree.
class TrajectoryComparison {
 public:
  explicit TrajectoryComparison(std::int64_t n)
      : n_(n), diverged_at_(static_cast<std::size_t>(n), -1), episode_step_(static_cast<std::size_t>(n), 0) {}

  void add(std::int64_t t, const StepRecord& cpu, const StepRecord& cuda) {
    for (std::int64_t i = 0; i < n_; ++i) {
      if (diverged_at_[i] >= 0) continue;
      if (cpu.terminated[i] != cuda.terminated[i] || cpu.truncated[i] != cuda.truncated[i]) {
        diverged_at_[i] = t;
        continue;
      }
      ++flags_compared_;
      bool same = cpu.reward[i] == cuda.reward[i];
      const bool ended = cpu.terminated[i] || cpu.truncated[i];
      episode_step_[i] += 1;
      // After an end, obs holds the new episode's first observation: always within the compared window.
      const bool compare_obs = ended || episode_step_[i] <= kComparedEpisodeSteps;
      if (compare_obs) {
        for (int k = 0; k < kObsDim; ++k) same &= close(cuda.obs[i * kObsDim + k], cpu.obs[i * kObsDim + k]);
        ++obs_compared_;
      }
      if (ended && !cpu.final_obs.empty() && episode_step_[i] <= kComparedEpisodeSteps)
        for (int k = 0; k < kObsDim; ++k)
          same &= close(cuda.final_obs[i * kObsDim + k], cpu.final_obs[i * kObsDim + k]);
      if (ended) {
        ++endings_;
        episode_step_[i] = 0;
      }
      if (!same && failures_++ < 5)
        UNSCOPED_INFO("step " << t << ", env " << i << ": CUDA obs (" << cuda.obs[i * 4] << ", " << cuda.obs[i * 4 + 1]
                              << ", " << cuda.obs[i * 4 + 2] << ", " << cuda.obs[i * 4 + 3] << ") against the CPU's ("
                              << cpu.obs[i * 4] << ", " << cpu.obs[i * 4 + 1] << ", " << cpu.obs[i * 4 + 2] << ", "
                              << cpu.obs[i * 4 + 3] << "), reward " << cuda.reward[i] << " against " << cpu.reward[i]);
    }
  }

  bool diverged(std::int64_t i) const { return diverged_at_[i] >= 0; }
  std::int64_t diverged_count() const {
    std::int64_t count = 0;
    for (auto t : diverged_at_) count += t >= 0;
    return count;
  }
  void check(std::int64_t steps) const {
    INFO(flags_compared_ << " env-steps compared on flags, " << obs_compared_ << " on observations, " << endings_
                         << " episode endings among them, " << diverged_count() << " envs diverged on a flag");
    CHECK(failures_ == 0);
    // Most of the run was compared, and it went through many resets.
    CHECK(flags_compared_ > n_ * steps * 9 / 10);
    CHECK(obs_compared_ > n_ * steps * 6 / 10);
    CHECK(endings_ > n_);
    CHECK(diverged_count() * 100 <= n_);
  }

 private:
  std::int64_t n_;
  std::vector<std::int64_t> diverged_at_;   // [N] first step whose flags disagree, or -1
  std::vector<std::int64_t> episode_step_;  // [N] steps into the current episode, counted from the flags
  std::int64_t flags_compared_ = 0, obs_compared_ = 0, endings_ = 0, failures_ = 0;
};

// One engine with its step buffers on its device.
struct Side {
  Stream stream;
  std::unique_ptr<Engine> engine;
  DeviceBuffer<std::int32_t> actions;
  DeviceBuffer<float> obs, reward, final_obs;
  DeviceBuffer<std::uint8_t> terminated, truncated;

  Side(Device device, std::int64_t n, std::uint64_t seed, const surge::PhysicsConfig& physics)
      : stream(device),
        engine(surge::make_engine("cartpole", device, n, seed, physics)),
        actions(device, n),
        obs(device, n * kObsDim),
        reward(device, n),
        final_obs(device, n * kObsDim),
        terminated(device, n),
        truncated(device, n) {}

  StepRecord step(const std::vector<std::int32_t>& host_actions) {
    surge::from_host(actions.span(), host_actions, stream);
    engine->step(ActionView{actions.cspan(), {}},
                 {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
    return {surge::to_host(obs.cspan(), stream), surge::to_host(reward.cspan(), stream),
            surge::to_host(final_obs.cspan(), stream), surge::to_host(terminated.cspan(), stream),
            surge::to_host(truncated.cspan(), stream)};
  }
};

// Per-env engine counters must agree exactly where the env never diverged.
void compare_counters(Side& cpu, Side& cuda, const TrajectoryComparison& comparison) {
  const auto steps_cpu = surge::to_host(cpu.engine->episode_steps(), cpu.stream);
  const auto steps_cuda = surge::to_host(cuda.engine->episode_steps(), cuda.stream);
  const auto returns_cpu = surge::to_host(cpu.engine->episode_returns(), cpu.stream);
  const auto returns_cuda = surge::to_host(cuda.engine->episode_returns(), cuda.stream);
  const auto offsets_cpu = surge::to_host(cpu.engine->rng_offsets(), cpu.stream);
  const auto offsets_cuda = surge::to_host(cuda.engine->rng_offsets(), cuda.stream);
  std::int64_t differing = 0;
  for (std::size_t i = 0; i < steps_cpu.size(); ++i) {
    if (comparison.diverged(static_cast<std::int64_t>(i))) continue;
    differing +=
        steps_cpu[i] != steps_cuda[i] || returns_cpu[i] != returns_cuda[i] || offsets_cpu[i] != offsets_cuda[i];
  }
  CHECK(differing == 0);

  const surge::EpisodeStats stats_cpu = cpu.engine->episode_stats(cpu.stream);
  const surge::EpisodeStats stats_cuda = cuda.engine->episode_stats(cuda.stream);
  INFO("episodes: CPU " << stats_cpu.episodes << ", CUDA " << stats_cuda.episodes);
  CHECK(stats_cpu.episodes > 0);
  if (comparison.diverged_count() == 0) {
    // Integer-valued sums: the device reduction must give them exactly.
    CHECK(stats_cuda.episodes == stats_cpu.episodes);
    CHECK(stats_cuda.return_sum == stats_cpu.return_sum);
    CHECK(stats_cuda.length_sum == stats_cpu.length_sum);
  } else {
    // A diverged env may finish a different number of episodes, but not more than one per step.
    const double slack = static_cast<double>(comparison.diverged_count()) * 200.0;
    CHECK(std::fabs(stats_cuda.episodes - stats_cpu.episodes) <= slack);
  }
}

}  // namespace

TEST_CASE("CUDA transition() reproduces every golden CartPole transition", "[gpu][golden]") {
  const std::vector<std::string> names = {"x", "x_dot", "theta", "theta_dot"};
  const surge::testing::GoldenSet golden = surge::testing::load_golden("cartpole", names, kObsDim);
  const std::int64_t n = golden.rows;
  Stream stream(kCuda);
  auto engine = surge::make_engine("cartpole", kCuda, n, 1);
  const std::vector<float> states(golden.state.begin(), golden.state.end());
  DeviceBuffer<float> states_in(kCuda, n * 4), next_states(kCuda, n * 4), obs(kCuda, n * kObsDim), reward(kCuda, n);
  DeviceBuffer<std::uint8_t> terminated(kCuda, n);
  DeviceBuffer<std::int32_t> actions(kCuda, n);
  surge::from_host(states_in.span(), states, stream);
  surge::from_host(actions.span(), golden.discrete_actions(), stream);
  engine->transition(states_in.cspan(), ActionView{actions.cspan(), {}}, next_states.span(), obs.span(), reward.span(),
                     terminated.span(), stream);
  const auto next_host = surge::to_host(next_states.cspan(), stream);
  const auto obs_host = surge::to_host(obs.cspan(), stream);
  const auto reward_host = surge::to_host(reward.cspan(), stream);
  const auto terminated_host = surge::to_host(terminated.cspan(), stream);
  std::int64_t mismatches = 0;
  for (std::int64_t row = 0; row < n; ++row) {
    bool ok = reward_host[row] == golden.reward[row] && terminated_host[row] == golden.terminated[row];
    for (int k = 0; k < 4; ++k) {
      ok &= surge::testing::within_golden_tolerance(next_host[row * 4 + k], golden.next_state[row * 4 + k]);
      ok &= surge::testing::within_golden_tolerance(obs_host[row * 4 + k], golden.obs[row * 4 + k]);
    }
    if (!ok && mismatches++ < 5) UNSCOPED_INFO("row " << row + 1 << " differs from Gymnasium");
  }
  CHECK(mismatches == 0);
}

TEST_CASE("CUDA resets, parameters and random actions equal the CPU's bit for bit", "[gpu][rng]") {
  const std::int64_t n = 10000;
  Side cpu(kCpu, n, 42, surge::testing::randomized_physics()), cuda(kCuda, n, 42, surge::testing::randomized_physics());
  // Resets use only Philox integers and one multiply-add per draw: no transcendental functions.
  CHECK(surge::to_host(cuda.engine->states(), cuda.stream) == surge::to_host(cpu.engine->states(), cpu.stream));
  CHECK(surge::params_to_host(*cuda.engine, cuda.stream) == surge::params_to_host(*cpu.engine, cpu.stream));
  for (int draw = 0; draw < 3; ++draw) {
    cpu.engine->random_actions(cpu.actions.span(), {}, cpu.stream);
    cuda.engine->random_actions(cuda.actions.span(), {}, cuda.stream);
    CHECK(surge::to_host(cuda.actions.cspan(), cuda.stream) == surge::to_host(cpu.actions.cspan(), cpu.stream));
  }
}

TEST_CASE("CUDA and CPU step the same trajectories from the same seed", "[gpu][trajectory]") {
  const std::int64_t n = 4096;
  const std::int64_t steps = 200;
  Side cpu(kCpu, n, 2024, surge::testing::randomized_physics()),
      cuda(kCuda, n, 2024, surge::testing::randomized_physics());
  std::mt19937 action_source(7);
  std::vector<std::int32_t> actions(static_cast<std::size_t>(n));
  TrajectoryComparison comparison(n);
  for (std::int64_t t = 0; t < steps; ++t) {
    for (auto& a : actions) a = static_cast<std::int32_t>(action_source() & 1u);
    const StepRecord on_cpu = cpu.step(actions);
    const StepRecord on_cuda = cuda.step(actions);
    comparison.add(t, on_cpu, on_cuda);
  }
  comparison.check(steps);
  compare_counters(cpu, cuda, comparison);
}

TEST_CASE("CUDA rollout_random() follows the CPU's", "[gpu][rollout]") {
  const std::int64_t n = 4096;
  const std::int64_t steps = 200;
  Side cpu(kCpu, n, 99, surge::testing::randomized_physics()), cuda(kCuda, n, 99, surge::testing::randomized_physics());
  auto run = [&](Side& side) {
    const Device device = side.engine->device();
    DeviceBuffer<float> obs(device, steps * n * kObsDim), reward(device, steps * n);         // [T][N][obs_dim], [T][N]
    DeviceBuffer<std::uint8_t> terminated(device, steps * n), truncated(device, steps * n);  // [T][N]
    side.engine->rollout_random(steps, {obs.span(), reward.span(), terminated.span(), truncated.span()}, side.stream);
    return StepRecord{surge::to_host(obs.cspan(), side.stream),
                      surge::to_host(reward.cspan(), side.stream),
                      {},
                      surge::to_host(terminated.cspan(), side.stream),
                      surge::to_host(truncated.cspan(), side.stream)};
  };
  const StepRecord all_cpu = run(cpu), all_cuda = run(cuda);
  TrajectoryComparison comparison(n);
  auto slice = [&](const StepRecord& all, std::int64_t t) {
    StepRecord one;
    one.obs.assign(all.obs.begin() + t * n * kObsDim, all.obs.begin() + (t + 1) * n * kObsDim);
    one.reward.assign(all.reward.begin() + t * n, all.reward.begin() + (t + 1) * n);
    one.terminated.assign(all.terminated.begin() + t * n, all.terminated.begin() + (t + 1) * n);
    one.truncated.assign(all.truncated.begin() + t * n, all.truncated.begin() + (t + 1) * n);
    return one;
  };
  for (std::int64_t t = 0; t < steps; ++t) comparison.add(t, slice(all_cpu, t), slice(all_cuda, t));
  comparison.check(steps);
  compare_counters(cpu, cuda, comparison);
}
