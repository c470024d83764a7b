// The pixel-observation frame store (scenarios/pixel_obs.hpp) against references it does not share
// code with: every stored frame equals render_states of the engine's states after the step; every
// stack, final stack and gathered minibatch equals FrameStackObservation's stacks (padding "reset")
// kept per environment on the host, across auto-resets, truncations and iterations; final frames are
// drawn from the state before the reset (CartPole: its final_obs is its state) under the parameters the
// episode ran with, even where the reset redrew them.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "tests/support/pixel_stacks.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

struct Case {
  std::string scenario;
  FrameSize size;
  int stack;
  std::int64_t num_steps, iterations;
  bool randomized;  // CartPole's pole length and mass drawn at each reset
};

// The final state of each environment whose episode ended, from the engine's own outputs: CartPole's
// final observation is its state; otherwise the engine's pure transition from the states before the
// step (exact where parameters are not redrawn).
std::vector<float> final_states(Engine& engine, const std::vector<float>& before, const ActionView& actions,
                                const std::vector<float>& final_obs, const Stream& stream) {
  const ScenarioSpec& spec = engine.spec();
  if (spec.name == "cartpole") return final_obs;
  const std::int64_t n = engine.num_envs();
  DeviceBuffer<float> next(Device::cpu(), n * spec.state_dim), obs(Device::cpu(), n * spec.obs_dim),
      reward(Device::cpu(), n);
  DeviceBuffer<std::uint8_t> terminated(Device::cpu(), n);
  engine.transition({before.data(), static_cast<std::int64_t>(before.size()), Device::cpu()}, actions, next.span(),
                    obs.span(), reward.span(), terminated.span(), stream);
  return to_host(next.cspan(), stream);
}

std::vector<std::uint8_t> draw(const std::string& scenario, const std::vector<float>& states,
                               const std::vector<double>& params, std::int64_t n, FrameSize size) {
  std::vector<std::uint8_t> frames(static_cast<std::size_t>(n * size.bytes()));
  render_states(scenario, states.data(), params.data(), n, size, frames.data());
  return frames;
}

void run_case(const Case& c) {
  INFO(c.scenario << " " << c.size.width << "x" << c.size.height << "x" << c.size.channels << " stack " << c.stack);
  const Device cpu = Device::cpu();
  const ScenarioSpec& spec = scenario_spec(c.scenario);
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  if (c.randomized)
    for (const char* name : {"length", "masspole"}) {
      const int j = spec.param_index(name);
      physics.randomized[j] = 1, physics.low[j] = 0.5 * physics.value[j], physics.high[j] = 2.0 * physics.value[j];
    }
  const std::int64_t n = 6, frame_bytes = c.size.bytes(), stack_bytes = frame_bytes * c.stack;
  auto engine = make_engine(c.scenario, cpu, n, 11, physics);
  Stream stream(cpu);
  PixelFrameStore store(*engine, c.num_steps, c.size, c.stack);
  store.begin(stream);
  ReferenceStacks reference(n, c.size, c.stack);
  {
    const std::vector<std::uint8_t> first =
        draw(c.scenario, to_host(engine->states(), stream), params_to_host(*engine, stream), n, c.size);
    for (std::int64_t e = 0; e < n; ++e) reference.reset(e, frame_of(first, e, frame_bytes));
  }
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  DeviceBuffer<std::int32_t> discrete_actions(cpu, discrete ? n : 0);
  DeviceBuffer<float> continuous_actions(cpu, discrete ? 0 : n * spec.action_dim);
  DeviceBuffer<float> obs(cpu, n * spec.obs_dim), reward(cpu, n), final_obs(cpu, n * spec.obs_dim);
  DeviceBuffer<std::uint8_t> terminated(cpu, n), truncated(cpu, n), stacks(cpu, n * stack_bytes);
  const StepViews out{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()};
  const ActionView actions{discrete_actions.cspan(), continuous_actions.cspan()};
  std::mt19937_64 pick(3);
  std::int64_t ended = 0, truncations = 0, redrawn = 0;
  for (std::int64_t iteration = 0; iteration < c.iterations; ++iteration) {
    std::vector<Frame> expected(static_cast<std::size_t>(c.num_steps * n));  // [T][N] stacks
    for (std::int64_t t = 0; t < c.num_steps; ++t) {
      for (std::int64_t e = 0; e < n; ++e) expected[t * n + e] = reference.current(e);
      store.gather_row(t, stacks.span(), stream);
      const std::vector<std::uint8_t> row_stacks = to_host(stacks.cspan(), stream);
      for (std::int64_t e = 0; e < n; ++e) REQUIRE(frame_of(row_stacks, e, stack_bytes) == expected[t * n + e]);

      engine->random_actions(discrete_actions.span(), continuous_actions.span(), stream);
      const std::vector<float> before = to_host(engine->states(), stream);
      const std::vector<double> params_before = params_to_host(*engine, stream);
      store.step(t, actions, out, stream);
      const std::vector<std::uint8_t> done_terminated = to_host(terminated.cspan(), stream);
      const std::vector<std::uint8_t> done_truncated = to_host(truncated.cspan(), stream);
      const std::vector<double> params_after = params_to_host(*engine, stream);
      const std::vector<std::uint8_t> now =
          draw(c.scenario, to_host(engine->states(), stream), params_after, n, c.size);
      const std::vector<std::uint8_t> stored(store.frames(t + 1), store.frames(t + 1) + n * frame_bytes);
      REQUIRE(stored == now);  // frames are the engine's states after the step, auto-reset included

      const std::vector<std::uint8_t> finals =
          draw(c.scenario, final_states(*engine, before, actions, to_host(final_obs.cspan(), stream), stream),
               params_before, n, c.size);
      store.gather_final(t, stacks.span(), stream);
      const std::vector<std::uint8_t> final_stacks = to_host(stacks.cspan(), stream);
      for (std::int64_t e = 0; e < n; ++e) {
        const bool episode_ended = done_terminated[e] || done_truncated[e];
        const Frame returned =
            reference.step(e, episode_ended ? frame_of(finals, e, frame_bytes) : frame_of(now, e, frame_bytes),
                           episode_ended, frame_of(now, e, frame_bytes));
        if (!episode_ended) continue;
        ++ended;
        truncations += done_truncated[e];
        for (int j = 0; j < spec.param_count(); ++j)
          redrawn += params_before[e * spec.param_count() + j] != params_after[e * spec.param_count() + j] ? 1 : 0;
        REQUIRE(frame_of(final_stacks, e, stack_bytes) == returned);
      }
    }
    // A shuffled minibatch of this iteration's rows, gathered by flat index t * N + env.
    std::vector<std::int64_t> indices(static_cast<std::size_t>(c.num_steps * n));
    for (std::size_t k = 0; k < indices.size(); ++k) indices[k] = static_cast<std::int64_t>(k);
    std::shuffle(indices.begin(), indices.end(), pick);
    indices.resize(indices.size() / 3);
    DeviceBuffer<std::uint8_t> batch(cpu, static_cast<std::int64_t>(indices.size()) * stack_bytes);
    store.gather({indices.data(), static_cast<std::int64_t>(indices.size()), cpu}, batch.span(), stream);
    const std::vector<std::uint8_t> gathered = to_host(batch.cspan(), stream);
    for (std::size_t k = 0; k < indices.size(); ++k)
      REQUIRE(frame_of(gathered, static_cast<std::int64_t>(k), stack_bytes) ==
              expected[static_cast<std::size_t>(indices[k])]);
    store.next_iteration(stream);
  }
  // The run crossed what it was meant to: many resets, and where asked truncations or redrawn parameters.
  CHECK(ended >= n);
  if (c.scenario == "pendulum") CHECK(truncations == ended);
  if (c.randomized) CHECK(redrawn > 0);
}

}  // namespace

TEST_CASE("pixel stacks follow FrameStackObservation across resets, truncations and iterations", "[pixels]") {
  run_case({"cartpole", {16, 12, 3}, 4, 24, 4, true});
  run_case({"cartpole", {9, 9, 1}, 1, 8, 6, false});
  run_case({"cartpole", {11, 7, 1}, 3, 3, 30, false});  // a stack as long as the rollout
  run_case({"pendulum", {10, 10, 1}, 4, 100, 5, false});
  run_case({"acrobot", {8, 8, 3}, 2, 50, 11, false});
}

TEST_CASE("the frame store keeps each frame once, and its plan says how much that saves", "[pixels]") {
  const ScenarioSpec& spec = scenario_spec("cartpole");
  const std::int64_t t = 128, n = 4096;
  const FrameSize size{84, 84, 1};
  const PixelMemoryPlan plan = PixelFrameStore::plan(spec, t, n, size, 4);
  CHECK(plan.frame_bytes == 84 * 84);
  CHECK(plan.stacked_bytes == (t + 2) * n * 4 * 84 * 84);
  // The frames [T+4][N] and one final frame per environment, plus flags and the step's snapshot.
  CHECK(plan.store_bytes >= (t + 5) * n * 84 * 84);
  CHECK(plan.store_bytes < (t + 5) * n * 84 * 84 + n * 1024);
  CHECK(plan.saving() > 3.8);
  auto engine = make_engine("cartpole", Device::cpu(), 3, 1);
  PixelFrameStore store(*engine, 10, {5, 4, 3}, 2);
  CHECK(store.device_bytes() == static_cast<std::size_t>(PixelFrameStore::plan(spec, 10, 3, {5, 4, 3}, 2).store_bytes));
}

TEST_CASE("nonsensical pixel shapes are refused as bad input", "[pixels]") {
  CHECK_THROWS_AS(check_pixel_shape(128, {0, 84, 1}, 4), InputError);
  CHECK_THROWS_AS(check_pixel_shape(128, {84, 5000, 1}, 4), InputError);
  CHECK_THROWS_AS(check_pixel_shape(128, {84, 84, 2}, 4), InputError);
  CHECK_THROWS_AS(check_pixel_shape(128, {84, 84, 1}, 0), InputError);
  CHECK_THROWS_WITH(check_pixel_shape(3, {84, 84, 1}, 4), Catch::Contains("frame_stack 4"));
  CHECK_NOTHROW(check_pixel_shape(4, {84, 84, 3}, 4));
}
