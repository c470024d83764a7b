// The engine's physics table: a device buffer (engine.physics) that the step, reset and rollout kernels read,
// which holds the config's ranges, which Engine::set_physics rewrites between steps, and which the memory
// plan lists.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/buffer_table.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "tests/support/randomized_physics.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/test_physics_table_trainer.hpp"

using surge::Device;
using surge::DeviceBuffer;
using surge::Engine;
using surge::PhysicsConfig;
using surge::Stream;

namespace {

// engine.physics as the host reads it: value, low, high and the randomised flags, each [params], widened to
// double (exactly) from the scenario's parameter type.
struct TableOnHost {
  std::vector<double> value, low, high, randomized;
};

TableOnHost read_table(const Engine& engine, const Stream& stream) {
  const surge::BufferArena& arena = engine.buffers();
  const int index = arena.table().find("engine.physics");
  REQUIRE(index >= 0);
  const std::vector<std::byte> bytes = surge::to_host(arena.bytes_of(index), stream);
  const std::size_t count = engine.spec().params.size();
  std::vector<double> fields(4 * count);
  if (engine.spec().param_dtype == surge::DType::Float64) {
    REQUIRE(bytes.size() == fields.size() * sizeof(double));
    std::memcpy(fields.data(), bytes.data(), bytes.size());
  } else {
    std::vector<float> narrow(fields.size());
    REQUIRE(bytes.size() == narrow.size() * sizeof(float));
    std::memcpy(narrow.data(), bytes.data(), bytes.size());
    std::copy(narrow.begin(), narrow.end(), fields.begin());
  }
  const auto part = [&](std::size_t k) {
    return std::vector<double>(fields.begin() + static_cast<std::ptrdiff_t>(k * count),
                               fields.begin() + static_cast<std::ptrdiff_t>((k + 1) * count));
  };
  return {part(0), part(1), part(2), part(3)};
}

// The table `physics` should give, each value as the scenario holds it.
void check_table_holds(const Engine& engine, const PhysicsConfig& physics, const Stream& stream) {
  const surge::ScenarioSpec& spec = engine.spec();
  const TableOnHost table = read_table(engine, stream);
  for (std::size_t j = 0; j < spec.params.size(); ++j) {
    INFO(spec.name << " parameter " << spec.params[j].name);
    CHECK(table.value[j] == spec.round_param(physics.value[j]));
    CHECK(table.low[j] == spec.round_param(physics.low[j]));
    CHECK(table.high[j] == spec.round_param(physics.high[j]));
    CHECK(table.randomized[j] == (physics.randomized[j] ? 1.0 : 0.0));
  }
}

// Every parameter drawn from a range of its own around its default.
PhysicsConfig every_parameter_randomized(const surge::ScenarioSpec& spec) {
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  for (std::size_t j = 0; j < spec.params.size(); ++j) {
    physics.randomized[j] = 1;
    physics.low[j] = physics.value[j] * 0.9 + 0.01;
    physics.high[j] = physics.value[j] * 1.3 + 0.02;
  }
  return physics;
}

// CartPole's pole mass narrowed to the single value `mass`, still drawn at every reset.
PhysicsConfig masspole_fixed_by_range(float mass) {
  PhysicsConfig physics = surge::testing::randomized_physics();
  const int masspole = surge::scenario_spec("cartpole").param_index("masspole");
  physics.low[masspole] = mass;
  physics.high[masspole] = mass;
  return physics;
}

// One CartPole engine's random steps, taken one step() at a time or in rollout_random() calls, with what
// the last call's steps ended (any episode end of an env since `mark_start()`).
struct CartPoleRun {
  std::int64_t n;
  std::unique_ptr<Engine> engine;
  DeviceBuffer<std::int32_t> actions;
  DeviceBuffer<float> obs, reward;
  DeviceBuffer<std::uint8_t> terminated, truncated;
  std::vector<std::uint8_t> ended_since_mark;  // [N]

  CartPoleRun(std::int64_t num_envs, std::uint64_t seed, const PhysicsConfig& physics, std::int64_t max_steps)
      : n(num_envs),
        engine(surge::make_engine("cartpole", Device::cpu(), num_envs, seed, physics)),
        actions(Device::cpu(), n),
        obs(Device::cpu(), max_steps * n * 4),
        reward(Device::cpu(), max_steps * n),
        terminated(Device::cpu(), max_steps * n),
        truncated(Device::cpu(), max_steps * n),
        ended_since_mark(static_cast<std::size_t>(n), 0) {}

  void mark_start() { std::fill(ended_since_mark.begin(), ended_since_mark.end(), 0); }
  void note_ends(std::int64_t steps) {
    for (std::int64_t k = 0; k < steps * n; ++k)
      ended_since_mark[static_cast<std::size_t>(k % n)] |= terminated.data()[k] | truncated.data()[k];
  }
  void step(std::int64_t steps, const Stream& stream) {
    for (std::int64_t t = 0; t < steps; ++t) {
      engine->random_actions(actions.span(), {}, stream);
      engine->step(surge::ActionView{actions.cspan(), {}},
                   {obs.span().slice(t * n * 4, n * 4),
                    reward.span().slice(t * n, n),
                    terminated.span().slice(t * n, n),
                    truncated.span().slice(t * n, n),
                    {}},
                   stream);
    }
    stream.synchronize();
    note_ends(steps);
  }
  void rollout(std::int64_t steps, const Stream& stream) {
    engine->rollout_random(steps,
                           {obs.span().slice(0, steps * n * 4), reward.span().slice(0, steps * n),
                            terminated.span().slice(0, steps * n), truncated.span().slice(0, steps * n)},
                           stream);
    stream.synchronize();
    note_ends(steps);
  }
  std::vector<double> params(const Stream& stream) { return surge::params_to_host(*engine, stream); }
  std::vector<float> states(const Stream& stream) { return surge::to_host(engine->states(), stream); }
};

}  // namespace

TEST_CASE("engine.physics holds exactly the config's ranges, and set_physics rewrites them", "[physics_table]") {
  Stream stream(Device::cpu());
  for (const std::string name : {"cartpole", "acrobot", "pendulum"}) {
    const surge::ScenarioSpec& spec = surge::scenario_spec(name);
    INFO(name);
    const PhysicsConfig defaults = PhysicsConfig::defaults(spec);
    auto engine = surge::make_engine(name, Device::cpu(), 8, 1, defaults);

    const surge::BufferEntry& entry = engine->buffers().table()[engine->buffers().table().find("engine.physics")];
    CHECK(entry.dtype == spec.param_dtype);
    CHECK(entry.value_dims() == std::vector<std::int64_t>{1, 4 * spec.param_count()});
    CHECK_FALSE(entry.saved());  // the run's config rebuilds it
    check_table_holds(*engine, defaults, stream);

    const PhysicsConfig ranges = every_parameter_randomized(spec);
    engine->set_physics(ranges, stream);
    check_table_holds(*engine, ranges, stream);
    CHECK(engine->physics().low == ranges.low);
    CHECK(engine->physics().randomized == ranges.randomized);
  }
}

TEST_CASE("a physics config that makes no sense is refused and the table stays", "[physics_table]") {
  Stream stream(Device::cpu());
  const PhysicsConfig physics = surge::testing::randomized_physics();
  auto engine = surge::make_engine("cartpole", Device::cpu(), 4, 1, physics);
  PhysicsConfig reversed = physics;
  const int masspole = engine->spec().param_index("masspole");
  reversed.low[masspole] = 0.3;
  reversed.high[masspole] = 0.2;
  CHECK_THROWS_AS(engine->set_physics(reversed, stream), surge::InputError);
  check_table_holds(*engine, physics, stream);
  CHECK(engine->physics().low == physics.low);
}

TEST_CASE("a range narrowed between steps is what every later reset draws; the rest steps the same",
          "[physics_table]") {
  Stream stream(Device::cpu());
  constexpr std::int64_t n = 200, steps = 40;
  const int masspole = surge::scenario_spec("cartpole").param_index("masspole");
  const float narrowed = 0.125f;
  for (const bool fused : {false, true}) {
    INFO((fused ? "rollout_random()" : "step()"));
    // `changed` has its range narrowed after the first steps; `unchanged` keeps the wide range.
    CartPoleRun changed(n, 7, surge::testing::randomized_physics(), steps);
    CartPoleRun unchanged(n, 7, surge::testing::randomized_physics(), steps);
    const auto advance = [&](CartPoleRun& run) { fused ? run.rollout(steps, stream) : run.step(steps, stream); };
    advance(changed);
    advance(unchanged);
    changed.engine->set_physics(masspole_fixed_by_range(narrowed), stream);
    changed.mark_start();
    unchanged.mark_start();
    advance(changed);
    advance(unchanged);
    REQUIRE(changed.ended_since_mark == unchanged.ended_since_mark);

    const std::vector<double> changed_params = changed.params(stream), unchanged_params = unchanged.params(stream);
    const std::vector<float> changed_states = changed.states(stream), unchanged_states = unchanged.states(stream);
    int reset = 0, differs = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double mass = changed_params[static_cast<std::size_t>(i * 6 + masspole)];
      const double before = unchanged_params[static_cast<std::size_t>(i * 6 + masspole)];
      if (changed.ended_since_mark[static_cast<std::size_t>(i)]) {
        ++reset;
        CHECK(mass == static_cast<double>(narrowed));
        differs += before != mass ? 1 : 0;
      } else {
        // Nothing reset this env since the table changed: it stepped exactly as it would have.
        CHECK(mass == before);
        CHECK(std::memcmp(&changed_states[static_cast<std::size_t>(i * 4)],
                          &unchanged_states[static_cast<std::size_t>(i * 4)], 4 * sizeof(float)) == 0);
      }
    }
    CHECK(reset > n / 2);  // random actions end a CartPole episode within about 20 steps
    CHECK(differs == reset);
    CHECK(reset < n);  // and some envs did not reset: the second branch above ran
  }
}

TEST_CASE("rollout_random() follows set_physics as step() does, fixed values changed included", "[physics_table]") {
  // A changed fixed value leaves the lanes' parameters unlike the table's until each lane resets: the CPU
  // rollout must then reset lane by lane, as step() does, not a tile at a time.
  Stream stream(Device::cpu());
  constexpr std::int64_t n = 130, steps = 48;
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  PhysicsConfig heavier = PhysicsConfig::defaults(spec);
  heavier.value[spec.param_index("masspole")] = 0.3;
  heavier.value[spec.param_index("length")] = 0.7;
  const PhysicsConfig sequence[] = {heavier, surge::testing::randomized_physics(), PhysicsConfig::defaults(spec)};
  CartPoleRun by_rollout(n, 11, PhysicsConfig::defaults(spec), steps);
  CartPoleRun by_step(n, 11, PhysicsConfig::defaults(spec), steps);
  for (const PhysicsConfig& physics : sequence) {
    by_rollout.rollout(steps, stream);
    by_step.step(steps, stream);
    CHECK(std::memcmp(by_rollout.obs.data(), by_step.obs.data(), steps * n * 4 * sizeof(float)) == 0);
    CHECK(std::memcmp(by_rollout.reward.data(), by_step.reward.data(), steps * n * sizeof(float)) == 0);
    CHECK(std::memcmp(by_rollout.terminated.data(), by_step.terminated.data(), steps * n) == 0);
    CHECK(by_rollout.params(stream) == by_step.params(stream));
    by_rollout.engine->set_physics(physics, stream);
    by_step.engine->set_physics(physics, stream);
  }
  by_rollout.rollout(steps, stream);
  by_step.step(steps, stream);
  CHECK(by_rollout.params(stream) == by_step.params(stream));
  CHECK(by_rollout.states(stream) == by_step.states(stream));
  CHECK(surge::to_host(by_rollout.engine->rng_offsets(), stream) ==
        surge::to_host(by_step.engine->rng_offsets(), stream));
}

TEST_CASE("surge train --dry-run lists engine.physics in the memory plan", "[physics_table][cli]") {
  for (const std::string name : {"cartpole", "acrobot"}) {
    const surge::testing::Result run =
        surge::testing::run_surge("train --scenario " + name + " --dry-run --device cpu");
    INFO(run.output());
    REQUIRE(run.exit_code == 0);
    const std::size_t at = run.out.find("engine.physics");
    REQUIRE(at != std::string::npos);
    const std::string line = run.out.substr(at, run.out.find('\n', at) - at);
    CHECK(line.find("[1][4][params]") != std::string::npos);
  }
}

TEST_CASE("a trainer's iterations draw resets from the physics table set between them", "[physics_table]") {
  surge::testing::check_iterations_follow_set_physics(Device::cpu());
}
