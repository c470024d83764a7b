// VecEnv on the CPU backend: same-step auto-reset (truncation at 500 against termination),
// final_obs, the per-env accumulators and episode statistics, determinism, and the fused
// rollout_random() path against random_actions() + step().
#include <omp.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenarios/cartpole.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/randomized_physics.hpp"

using surge::ActionView;
using surge::CartPole;
using surge::Device;
using surge::DeviceBuffer;
using surge::Engine;
using surge::Stream;
using surge::testing::randomized_physics;

namespace {

constexpr int kObsDim = CartPole::kObsDim;
constexpr float kFinalObsSentinel = -777.0f;  // what final_obs holds where no episode has ended

// Physics under which nothing moves far enough to terminate within an episode.
surge::PhysicsConfig frozen_physics() {
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
  physics.value[spec.param_index("tau")] = 1e-6f;
  return physics;
}

// The buffers one step() writes, on the CPU, plus the action buffer.
struct StepBuffers {
  std::int64_t n;
  DeviceBuffer<std::int32_t> actions;                // [N]
  DeviceBuffer<float> obs;                           // [N][obs_dim]
  DeviceBuffer<float> reward;                        // [N]
  DeviceBuffer<std::uint8_t> terminated, truncated;  // [N]
  DeviceBuffer<float> final_obs;                     // [N][obs_dim]

  explicit StepBuffers(std::int64_t num_envs)
      : n(num_envs),
        actions(Device::cpu(), n),
        obs(Device::cpu(), n * kObsDim),
        reward(Device::cpu(), n),
        terminated(Device::cpu(), n),
        truncated(Device::cpu(), n),
        final_obs(Device::cpu(), n * kObsDim) {
    std::fill(final_obs.data(), final_obs.data() + n * kObsDim, kFinalObsSentinel);
  }
  surge::StepViews views() {
    return {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()};
  }
  void step_random(Engine& engine, const Stream& stream) {
    engine.random_actions(actions.span(), {}, stream);
    engine.step(ActionView{actions.cspan(), {}}, views(), stream);
  }
  void step_with(Engine& engine, std::int32_t action, const Stream& stream) {
    std::fill(actions.data(), actions.data() + n, action);
    engine.step(ActionView{actions.cspan(), {}}, views(), stream);
  }
};

// The state a fresh reset number `reset_count` (0 = the one at construction) gives env i under
// default (not randomised) physics: four uniform draws from the env's reset stream.
CartPole::State expected_reset_state(std::uint64_t seed, std::int64_t i, std::uint64_t reset_count) {
  surge::Rng rng(seed, surge::rng_subsequence(surge::RngPurpose::EnvReset, static_cast<std::uint64_t>(i)),
                 4 * reset_count);
  CartPole::State state;
  CartPole::Params unused{};
  CartPole::reset(state, unused, rng);
  return state;
}

bool inside_reset_bounds(const float* obs) {
  for (int k = 0; k < kObsDim; ++k)
    if (!(obs[k] >= -0.05f && obs[k] < 0.05f)) return false;
  return true;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  // memcmp must not see the null data() of an empty vector, even for zero bytes.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
std::vector<T> host(surge::Span<T> view, const Stream& stream) {
  return surge::to_host(view, stream);
}

// [T][N] rollout buffers on the CPU, for rollout_random() to write.
struct RolloutBuffers {
  std::int64_t n, obs_dim;
  DeviceBuffer<float> obs, reward;                   // [T][N][obs_dim], [T][N]
  DeviceBuffer<std::uint8_t> terminated, truncated;  // [T][N]
  RolloutBuffers(std::int64_t steps, std::int64_t num_envs, std::int64_t obs_size)
      : n(num_envs),
        obs_dim(obs_size),
        obs(Device::cpu(), steps * n * obs_dim),
        reward(Device::cpu(), steps * n),
        terminated(Device::cpu(), steps * n),
        truncated(Device::cpu(), steps * n) {}
  // Steps t0 .. t0 + count - 1.
  surge::RolloutViews slice(std::int64_t t0, std::int64_t count) {
    return surge::RolloutViews{obs.span().slice(t0 * n * obs_dim, count * n * obs_dim),
                               reward.span().slice(t0 * n, count * n), terminated.span().slice(t0 * n, count * n),
                               truncated.span().slice(t0 * n, count * n)};
  }
};

// The outputs of single steps, appended in order: what a rollout of the same steps must hold.
struct StepHistory {
  std::vector<float> obs, reward;
  std::vector<std::uint8_t> terminated, truncated;
  void append(const float* step_obs, const float* step_reward, const std::uint8_t* step_terminated,
              const std::uint8_t* step_truncated, std::int64_t n, std::int64_t obs_dim) {
    obs.insert(obs.end(), step_obs, step_obs + n * obs_dim);
    reward.insert(reward.end(), step_reward, step_reward + n);
    terminated.insert(terminated.end(), step_terminated, step_terminated + n);
    truncated.insert(truncated.end(), step_truncated, step_truncated + n);
  }
  void check_same_bits_as(RolloutBuffers& rollout, const Stream& stream) const {
    CHECK(same_bits(host(rollout.obs.span(), stream), obs));
    CHECK(same_bits(host(rollout.reward.span(), stream), reward));
    CHECK(same_bits(host(rollout.terminated.span(), stream), terminated));
    CHECK(same_bits(host(rollout.truncated.span(), stream), truncated));
  }
};

// `steps` steps of a CartPole engine of n envs under random actions, through step(), in order.
StepHistory step_randomly(Engine& engine, std::int64_t n, std::int64_t steps, const Stream& stream) {
  StepBuffers buffers(n);
  StepHistory history;
  for (std::int64_t t = 0; t < steps; ++t) {
    buffers.step_random(engine, stream);
    history.append(buffers.obs.data(), buffers.reward.data(), buffers.terminated.data(), buffers.truncated.data(), n,
                   kObsDim);
  }
  return history;
}

// Two engines that ran the same steps by different paths hold the same state, bit for bit: states,
// parameters, episode counters and accumulators, stream positions and finished-episode statistics.
void check_same_engine_state(surge::Engine& a, surge::Engine& b, const Stream& stream) {
  CHECK(same_bits(host(a.states(), stream), host(b.states(), stream)));
  CHECK(same_bits(surge::params_to_host(a, stream), surge::params_to_host(b, stream)));
  CHECK(same_bits(host(a.episode_steps(), stream), host(b.episode_steps(), stream)));
  CHECK(same_bits(host(a.episode_returns(), stream), host(b.episode_returns(), stream)));
  CHECK(same_bits(host(a.rng_offsets(), stream), host(b.rng_offsets(), stream)));
  const surge::EpisodeStats a_stats = a.episode_stats(stream), b_stats = b.episode_stats(stream);
  CHECK(a_stats.episodes == b_stats.episodes);
  CHECK(a_stats.return_sum == b_stats.return_sum);
  CHECK(a_stats.length_sum == b_stats.length_sum);
}

}  // namespace

TEST_CASE("episodes that nothing ends are truncated at exactly step 500", "[vec_env][auto_reset]") {
  const std::int64_t n = 64;
  const std::uint64_t seed = 5;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto engine = surge::make_engine("cartpole", cpu, n, seed, frozen_physics());
  StepBuffers buffers(n);

  std::vector<float> last_obs;
  for (int t = 1; t < CartPole::kMaxEpisodeSteps; ++t) {
    buffers.step_random(*engine, stream);
    for (std::int64_t i = 0; i < n; ++i) {
      REQUIRE(buffers.terminated.data()[i] == 0);
      REQUIRE(buffers.truncated.data()[i] == 0);
      REQUIRE(buffers.reward.data()[i] == 1.0f);
    }
    if (t == CartPole::kMaxEpisodeSteps - 1) last_obs.assign(buffers.obs.data(), buffers.obs.data() + n * kObsDim);
  }
  // No episode ended: final_obs untouched, accumulators at 499, nothing tallied.
  for (std::int64_t k = 0; k < n * kObsDim; ++k) REQUIRE(buffers.final_obs.data()[k] == kFinalObsSentinel);
  for (std::int32_t steps : host(engine->episode_steps(), stream)) REQUIRE(steps == 499);
  for (float episode_return : host(engine->episode_returns(), stream)) REQUIRE(episode_return == 499.0f);
  CHECK(engine->episode_stats(stream).episodes == 0);

  // Step 500: every episode is truncated, none terminated.
  const std::vector<float> params = host(engine->params().span<float>(), stream);
  buffers.step_random(*engine, stream);
  for (std::int64_t i = 0; i < n; ++i) {
    INFO("env " << i);
    CHECK(buffers.truncated.data()[i] == 1);
    CHECK(buffers.terminated.data()[i] == 0);
    CHECK(buffers.reward.data()[i] == 1.0f);
    // final_obs is the state after the 500th step, from the last observation of the episode.
    CartPole::State state{last_obs[i * 4], last_obs[i * 4 + 1], last_obs[i * 4 + 2], last_obs[i * 4 + 3]};
    CartPole::Params p;
    std::memcpy(&p, &params[i * CartPole::kParams.size()], sizeof p);
    CartPole::step(state, p, buffers.actions.data()[i]);
    float expected_final[kObsDim];
    CartPole::observe(state, expected_final);
    const float* final_obs = buffers.final_obs.data() + i * kObsDim;
    const float* obs = buffers.obs.data() + i * kObsDim;
    for (int k = 0; k < kObsDim; ++k) CHECK(final_obs[k] == expected_final[k]);
    // obs is the first observation of the next episode: the env's second reset draw.
    CHECK(inside_reset_bounds(obs));
    const CartPole::State reset_state = expected_reset_state(seed, i, 1);
    CHECK(obs[0] == reset_state.x);
    CHECK(obs[1] == reset_state.x_dot);
    CHECK(obs[2] == reset_state.theta);
    CHECK(obs[3] == reset_state.theta_dot);
    CHECK(std::memcmp(obs, final_obs, sizeof expected_final) != 0);
  }
  CHECK(same_bits(host(engine->states(), stream),
                  std::vector<float>(buffers.obs.data(), buffers.obs.data() + n * kObsDim)));
  for (std::int32_t steps : host(engine->episode_steps(), stream)) CHECK(steps == 0);
  for (float episode_return : host(engine->episode_returns(), stream)) CHECK(episode_return == 0.0f);
  for (std::uint64_t offset : host(engine->rng_offsets(), stream)) CHECK(offset == 8);
  surge::EpisodeStats stats = engine->episode_stats(stream);
  CHECK(stats.episodes == n);
  CHECK(stats.return_sum == 500.0 * n);
  CHECK(stats.length_sum == 500.0 * n);
  CHECK(stats.mean_return() == 500.0);
  CHECK(stats.mean_length() == 500.0);

  // The new episodes count from zero; the finished ones stay tallied until cleared.
  std::fill(buffers.final_obs.data(), buffers.final_obs.data() + n * kObsDim, kFinalObsSentinel);
  for (int t = 1; t <= 3; ++t) buffers.step_random(*engine, stream);
  for (std::int32_t steps : host(engine->episode_steps(), stream)) CHECK(steps == 3);
  for (float episode_return : host(engine->episode_returns(), stream)) CHECK(episode_return == 3.0f);
  for (std::int64_t k = 0; k < n * kObsDim; ++k) REQUIRE(buffers.final_obs.data()[k] == kFinalObsSentinel);
  CHECK(engine->episode_stats(stream).episodes == n);
  engine->clear_episode_stats(stream);
  stats = engine->episode_stats(stream);
  CHECK(stats.episodes == 0);
  CHECK(stats.return_sum == 0);
  CHECK(stats.length_sum == 0);
}

TEST_CASE("a pole past its threshold terminates, earns 1 and resets in the same step", "[vec_env][auto_reset]") {
  const std::int64_t n = 8, ending = 3;
  const std::uint64_t seed = 11;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto engine = surge::make_engine("cartpole", cpu, n, seed);
  StepBuffers buffers(n);
  const int steps_before = 5;
  for (int t = 0; t < steps_before; ++t) buffers.step_with(*engine, t % 2, stream);
  for (std::int64_t k = 0; k < n * kObsDim; ++k) REQUIRE(buffers.final_obs.data()[k] == kFinalObsSentinel);
  REQUIRE(engine->episode_stats(stream).episodes == 0);

  // Put env 3 at x = 2.39 moving right at 1 m/s: the next Euler step takes x to 2.41 > 2.4.
  std::vector<float> states = host(engine->states(), stream);
  states[ending * 4 + 0] = 2.39f;
  states[ending * 4 + 1] = 1.0f;
  surge::from_host(engine->states(), states, stream);
  buffers.step_with(*engine, 1, stream);

  for (std::int64_t i = 0; i < n; ++i) {
    INFO("env " << i);
    CHECK(buffers.reward.data()[i] == 1.0f);
    CHECK(buffers.truncated.data()[i] == 0);
    const float* final_obs = buffers.final_obs.data() + i * kObsDim;
    const float* obs = buffers.obs.data() + i * kObsDim;
    if (i == ending) {
      CHECK(buffers.terminated.data()[i] == 1);
      CHECK(final_obs[0] == 2.39f + 0.02f * 1.0f);
      CHECK(final_obs[0] > CartPole::kXThreshold);
      CHECK(inside_reset_bounds(obs));
      const CartPole::State reset_state = expected_reset_state(seed, i, 1);
      CHECK(obs[0] == reset_state.x);
      CHECK(obs[3] == reset_state.theta_dot);
    } else {
      CHECK(buffers.terminated.data()[i] == 0);
      for (int k = 0; k < kObsDim; ++k) CHECK(final_obs[k] == kFinalObsSentinel);
    }
  }
  const std::vector<std::int32_t> steps = host(engine->episode_steps(), stream);
  const std::vector<float> returns = host(engine->episode_returns(), stream);
  for (std::int64_t i = 0; i < n; ++i) {
    CHECK(steps[i] == (i == ending ? 0 : steps_before + 1));
    CHECK(returns[i] == (i == ending ? 0.0f : steps_before + 1.0f));
  }
  const surge::EpisodeStats stats = engine->episode_stats(stream);
  CHECK(stats.episodes == 1);
  CHECK(stats.return_sum == steps_before + 1);
  CHECK(stats.length_sum == steps_before + 1);
}

TEST_CASE("the same seed gives the same trajectory, bit for bit", "[vec_env][determinism]") {
  const std::int64_t n = 300;
  const int steps = 300;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto run = [&](std::uint64_t seed) {
    auto engine = surge::make_engine("cartpole", cpu, n, seed, randomized_physics());
    StepBuffers buffers(n);
    std::vector<float> obs, rewards, final_obs;
    std::vector<std::uint8_t> flags;
    std::vector<std::int32_t> actions;
    for (int t = 0; t < steps; ++t) {
      buffers.step_random(*engine, stream);
      obs.insert(obs.end(), buffers.obs.data(), buffers.obs.data() + n * kObsDim);
      rewards.insert(rewards.end(), buffers.reward.data(), buffers.reward.data() + n);
      flags.insert(flags.end(), buffers.terminated.data(), buffers.terminated.data() + n);
      flags.insert(flags.end(), buffers.truncated.data(), buffers.truncated.data() + n);
      actions.insert(actions.end(), buffers.actions.data(), buffers.actions.data() + n);
    }
    final_obs.assign(buffers.final_obs.data(), buffers.final_obs.data() + n * kObsDim);
    const surge::EpisodeStats stats = engine->episode_stats(stream);
    return std::make_tuple(obs, rewards, flags, actions, final_obs, stats.episodes, stats.return_sum);
  };
  const auto a = run(1234), b = run(1234), c = run(1235);
  CHECK(same_bits(std::get<0>(a), std::get<0>(b)));
  CHECK(same_bits(std::get<1>(a), std::get<1>(b)));
  CHECK(same_bits(std::get<2>(a), std::get<2>(b)));
  CHECK(same_bits(std::get<3>(a), std::get<3>(b)));
  CHECK(same_bits(std::get<4>(a), std::get<4>(b)));
  CHECK(std::get<5>(a) == std::get<5>(b));
  CHECK(std::get<6>(a) == std::get<6>(b));
  // Episodes ended along the way, so the comparison went through resets.
  CHECK(std::get<5>(a) > n);

  // Another seed: other initial states, other actions, other trajectories almost everywhere.
  const auto& obs_a = std::get<0>(a);
  const auto& obs_c = std::get<0>(c);
  std::size_t differing = 0;
  for (std::size_t k = 0; k < obs_a.size(); ++k) differing += obs_a[k] != obs_c[k];
  CHECK(differing > obs_a.size() * 9 / 10);
  const auto& actions_a = std::get<3>(a);
  const auto& actions_c = std::get<3>(c);
  std::size_t differing_actions = 0;
  for (std::size_t k = 0; k < actions_a.size(); ++k) differing_actions += actions_a[k] != actions_c[k];
  CHECK(differing_actions > actions_a.size() / 3);
  CHECK(differing_actions < actions_a.size() * 2 / 3);
}

TEST_CASE("rollout_random() equals random_actions() + step() bit for bit", "[vec_env][rollout]") {
  struct Case {
    const char* name;
    surge::PhysicsConfig physics;
    std::int64_t n, first_steps, second_steps;  // rollout_random is called twice, to check it resumes exactly
  };
  const Case cases[] = {
      {"randomised pole mass: many terminations", randomized_physics(), 257, 150, 250},
      {"frozen physics: truncation at 500", frozen_physics(), 257, 300, 220},
      // Past kStreamingRolloutBytes, with aligned rows: the outputs leave in streaming stores.
      {"a rollout larger than the caches", randomized_physics(), 2048, 800, 900},
  };
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  for (const Case& c : cases) {
    INFO(c.name);
    const std::int64_t steps = c.first_steps + c.second_steps, n = c.n;
    const std::int64_t bytes_per_step = n * (kObsDim * 4 + 4 + 2);  // obs, reward and both flags
    CHECK((std::min(c.first_steps, c.second_steps) * bytes_per_step >= surge::kStreamingRolloutBytes) == (n == 2048));
    auto fused = surge::make_engine("cartpole", cpu, n, 77, c.physics);
    auto stepped = surge::make_engine("cartpole", cpu, n, 77, c.physics);

    RolloutBuffers rollout(steps, n, kObsDim);
    fused->rollout_random(c.first_steps, rollout.slice(0, c.first_steps), stream);
    fused->rollout_random(c.second_steps, rollout.slice(c.first_steps, c.second_steps), stream);

    const StepHistory history = step_randomly(*stepped, n, steps, stream);
    history.check_same_bits_as(rollout, stream);
    // Both leave the engines in the same state.
    check_same_engine_state(*fused, *stepped, stream);
    const surge::EpisodeStats stepped_stats = stepped->episode_stats(stream);
    // Each case went through the ending it is named for.
    std::int64_t terminations = 0, truncations = 0;
    for (auto f : history.terminated) terminations += f;
    for (auto f : history.truncated) truncations += f;
    CHECK(terminations + truncations == static_cast<std::int64_t>(stepped_stats.episodes));
    if (c.physics.any_randomized()) {
      CHECK(terminations > n);
    } else {
      CHECK(terminations == 0);
      CHECK(truncations == n);
    }
  }
}

TEST_CASE("rollout_random() in calls of one step and of none, over a partial tile of 36 lanes", "[vec_env][rollout]") {
  // 100 envs: a whole tile and one of 36 lanes (two groups of 16 and four left over). The outputs are filled
  // with 0xff bytes first, so that a row left unwritten cannot pass; every call's last rows must have left
  // before it returns, the calls of one step and of none included.
  const std::int64_t n = 100, calls[] = {1, 0, 33, 1, 31, 0, 2};
  std::int64_t steps = 0;
  for (std::int64_t c : calls) steps += c;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  for (const surge::PhysicsConfig& physics : {randomized_physics(), frozen_physics()}) {
    auto fused = surge::make_engine("cartpole", cpu, n, 13, physics);
    auto stepped = surge::make_engine("cartpole", cpu, n, 13, physics);
    RolloutBuffers rollout(steps, n, kObsDim);
    std::memset(rollout.obs.data(), 0xff, sizeof(float) * static_cast<std::size_t>(steps * n * kObsDim));
    std::memset(rollout.reward.data(), 0xff, sizeof(float) * static_cast<std::size_t>(steps * n));
    std::memset(rollout.terminated.data(), 0xff, static_cast<std::size_t>(steps * n));
    std::memset(rollout.truncated.data(), 0xff, static_cast<std::size_t>(steps * n));
    std::int64_t t0 = 0;
    for (std::int64_t c : calls) {
      fused->rollout_random(c, rollout.slice(t0, c), stream);
      t0 += c;
    }
    step_randomly(*stepped, n, steps, stream).check_same_bits_as(rollout, stream);
    check_same_engine_state(*fused, *stepped, stream);
  }
}

TEST_CASE("rollout_random() steps a pole set beyond the small-angle range as step() does", "[vec_env][rollout]") {
  // The fused rollout takes SmallAngleTrig's sine and cosine only in tiles whose every |theta| allows it.
  // Env 70 starts at theta = 3 (its polynomial there is off by about 3e-4), spinning back at -145 rad/s:
  // the Euler step takes theta to 0.1, inside the threshold, so the episode goes on and its theta_dot,
  // computed from sin 3 and cos 3, is observed. Its tile (envs 64 to 127) must take LaneTrig.
  const std::int64_t n = 130, odd_one = 70, steps = 3;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto fused = surge::make_engine("cartpole", cpu, n, 5);
  auto stepped = surge::make_engine("cartpole", cpu, n, 5);
  std::vector<float> states = host(fused->states(), stream);
  states[odd_one * 4 + 2] = 3.0f;
  states[odd_one * 4 + 3] = -145.0f;
  REQUIRE(!surge::SmallAngleTrig::covers(CartPole::step_angle(CartPole::State{0.0f, 0.0f, 3.0f, -145.0f})));
  surge::from_host(fused->states(), states, stream);
  surge::from_host(stepped->states(), states, stream);

  RolloutBuffers rollout(steps, n, kObsDim);
  fused->rollout_random(steps, rollout.slice(0, steps), stream);
  const StepHistory history = step_randomly(*stepped, n, steps, stream);
  CHECK(history.terminated[odd_one] == 0);  // the first step's theta_dot is observed
  CHECK(std::abs(history.obs[odd_one * kObsDim + 2] - 0.1f) < 1e-5f);
  history.check_same_bits_as(rollout, stream);
  check_same_engine_state(*fused, *stepped, stream);
}

TEST_CASE("rollout_random() resets a tile's lanes side by side as step() resets each env", "[vec_env][rollout]") {
  // Default physics: CartPole's resets go through the tile-wide pass, but for the tiles a guard sends to the
  // one-lane path: env 3's masspole is not the table's (a reset must restore it) and env 70's reset stream is
  // two words into a Philox block. Envs 128 to 202 have neither (the last tile's 11 lanes: a group of eight
  // and a tail); there, a lane that ends a third episode within one chunk of 32 steps finds its reset block
  // not drawn ahead and takes the one-lane path. Two calls of 300 and 210 steps, the second mid-episode.
  const std::int64_t n = 203, first_steps = 300, second_steps = 210, steps = first_steps + second_steps;
  const std::int64_t odd_params = 3, odd_stream = 70, plain_tiles = 128;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto fused = surge::make_engine("cartpole", cpu, n, 9);
  auto stepped = surge::make_engine("cartpole", cpu, n, 9);
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  const std::int64_t masspole = spec.param_index("masspole"), param_count = spec.param_count();
  std::vector<double> params = surge::params_to_host(*fused, stream);
  const double table_masspole = params[odd_params * param_count + masspole];
  params[odd_params * param_count + masspole] = 0.2;
  std::vector<std::uint64_t> offsets = host(fused->rng_offsets(), stream);
  offsets[odd_stream] += 2;
  for (Engine* engine : {fused.get(), stepped.get()}) {
    surge::params_from_host(*engine, params, stream);
    surge::from_host(engine->rng_offsets(), offsets, stream);
  }

  RolloutBuffers rollout(steps, n, kObsDim);
  fused->rollout_random(first_steps, rollout.slice(0, first_steps), stream);
  fused->rollout_random(second_steps, rollout.slice(first_steps, second_steps), stream);
  const StepHistory history = step_randomly(*stepped, n, steps, stream);
  history.check_same_bits_as(rollout, stream);
  check_same_engine_state(*fused, *stepped, stream);

  // Each guard's case happened: env 3 reset, which put the table's masspole back; env 70's stream is still
  // two words into a block, four words a reset on.
  CHECK(surge::params_to_host(*fused, stream)[odd_params * param_count + masspole] == table_masspole);
  std::int64_t odd_stream_episodes = 0;
  for (std::int64_t t = 0; t < steps; ++t)
    odd_stream_episodes += history.terminated[t * n + odd_stream] | history.truncated[t * n + odd_stream];
  CHECK(odd_stream_episodes > 0);
  CHECK(host(fused->rng_offsets(), stream)[odd_stream] ==
        offsets[odd_stream] + 4 * static_cast<std::uint64_t>(odd_stream_episodes));
  // And in the plain tiles some lane ended three episodes or more within one chunk.
  int most_in_a_chunk = 0;
  for (const auto& [call_start, call_steps] : {std::pair{std::int64_t{0}, first_steps}, {first_steps, second_steps}})
    for (std::int64_t chunk = call_start; chunk < call_start + call_steps; chunk += 32)
      for (std::int64_t i = plain_tiles; i < n; ++i) {
        int ended = 0;
        for (std::int64_t t = chunk; t < std::min(chunk + 32, call_start + call_steps); ++t)
          ended += history.terminated[t * n + i] | history.truncated[t * n + i];
        most_in_a_chunk = std::max(most_in_a_chunk, ended);
      }
  CHECK(most_in_a_chunk >= 3);
}

TEST_CASE("rollout_random() equals random_actions() + step() bit for bit in every scenario", "[vec_env][rollout]") {
  // 131 envs: two whole CPU tiles of 64 lanes and a partial one; 611 + 400 steps: past every time limit
  // (MountainCarContinuous's 999 included), in two calls whose second starts mid-way through the
  // action streams' Philox blocks and mid-way through the fused rollout's chunk of steps. Every parameter
  // is randomised by +-10%, so that each path draws it at every reset, in the scenario's own type.
  const std::int64_t n = 131, first_steps = 611, second_steps = 400, steps = first_steps + second_steps;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  for (const std::string& name : surge::scenario_names()) {
    INFO(name);
    const surge::ScenarioSpec& spec = surge::scenario_spec(name);
    const bool discrete = spec.action_kind == surge::ActionKind::Discrete;
    const std::int64_t obs_dim = spec.obs_dim, action_dim = discrete ? 0 : spec.action_dim;
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    for (int j = 0; j < spec.param_count(); ++j) {
      physics.randomized[j] = 1;
      physics.low[j] = spec.round_param(0.9 * physics.value[j]);
      physics.high[j] = spec.round_param(1.1 * physics.value[j]);
    }
    auto fused = surge::make_engine(name, cpu, n, 5, physics);
    auto stepped = surge::make_engine(name, cpu, n, 5, physics);

    RolloutBuffers rollout(steps, n, obs_dim);
    fused->rollout_random(first_steps, rollout.slice(0, first_steps), stream);
    fused->rollout_random(second_steps, rollout.slice(first_steps, second_steps), stream);

    DeviceBuffer<std::int32_t> discrete_actions(cpu, discrete ? n : 0);          // [N]
    DeviceBuffer<float> continuous_actions(cpu, n * action_dim);                 // [N][action_dim]
    DeviceBuffer<float> step_obs(cpu, n * obs_dim), step_reward(cpu, n);         // [N][obs_dim], [N]
    DeviceBuffer<std::uint8_t> step_terminated(cpu, n), step_truncated(cpu, n);  // [N]
    StepHistory history;
    for (std::int64_t t = 0; t < steps; ++t) {
      stepped->random_actions(discrete_actions.span(), continuous_actions.span(), stream);
      stepped->step(
          ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
          surge::StepViews{step_obs.span(), step_reward.span(), step_terminated.span(), step_truncated.span(), {}},
          stream);
      history.append(step_obs.data(), step_reward.data(), step_terminated.data(), step_truncated.data(), n, obs_dim);
    }
    history.check_same_bits_as(rollout, stream);
    check_same_engine_state(*fused, *stepped, stream);
    const surge::EpisodeStats stepped_stats = stepped->episode_stats(stream);
    CHECK(stepped_stats.episodes >= n);  // every env ended at least one episode
    // The action streams continue where both left them.
    DeviceBuffer<std::int32_t> fused_discrete(cpu, discrete ? n : 0);
    DeviceBuffer<float> fused_continuous(cpu, n * action_dim);
    fused->random_actions(fused_discrete.span(), fused_continuous.span(), stream);
    stepped->random_actions(discrete_actions.span(), continuous_actions.span(), stream);
    CHECK(same_bits(host(fused_discrete.span(), stream), host(discrete_actions.span(), stream)));
    CHECK(same_bits(host(fused_continuous.span(), stream), host(continuous_actions.span(), stream)));
  }
}

TEST_CASE("stepping and episode statistics do not depend on the OpenMP thread count", "[vec_env][threads]") {
  // Large enough that parallel_for and parallel_reduce take their OpenMP paths.
  const std::int64_t n = 6000;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const int threads_before = omp_get_max_threads();
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    auto engine = surge::make_engine("cartpole", cpu, n, 3, randomized_physics());
    StepBuffers buffers(n);
    for (int t = 0; t < 40; ++t) buffers.step_random(*engine, stream);
    const surge::EpisodeStats stats = engine->episode_stats(stream);
    return std::make_tuple(host(engine->states(), stream), stats.episodes, stats.return_sum, stats.length_sum);
  };
  const auto one = run(1), two = run(2), three = run(3);
  omp_set_num_threads(threads_before);
  CHECK(same_bits(std::get<0>(one), std::get<0>(two)));
  CHECK(same_bits(std::get<0>(one), std::get<0>(three)));
  CHECK(std::get<1>(one) > 0);
  CHECK(std::get<1>(one) == std::get<1>(two));
  CHECK(std::get<2>(one) == std::get<2>(two));
  CHECK(std::get<3>(one) == std::get<3>(two));
  CHECK(std::get<1>(one) == std::get<1>(three));
  CHECK(std::get<2>(one) == std::get<2>(three));
  CHECK(std::get<3>(one) == std::get<3>(three));
}
