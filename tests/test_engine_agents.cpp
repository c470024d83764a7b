// One engine of K agents (Engine::num_agents) against K engines of one agent each, on the CPU: agent k's
// environments must step, reset, draw and count episodes exactly as an engine of N environments with agent k's
// seed and physics, in every scenario, bit for bit.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/engine_views.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "tests/support/engine_agents_cases.hpp"
#include "tests/support/engine_strided_cases.hpp"

using surge::Device;
using surge::DeviceBuffer;
using surge::Engine;
using surge::EngineAgent;
using surge::PhysicsConfig;
using surge::ScenarioSpec;
using surge::Stream;
using surge::testing::agents_physics;
using surge::testing::kAgentSeeds;

TEST_CASE("each agent of an engine of three steps as an engine of its own seed and physics", "[engine_agents]") {
  surge::testing::check_agents_step_as_engines_alone(Device::cpu());
}

TEST_CASE("agents whose seeds are swapped no longer match the engines of their own seeds", "[engine_agents]") {
  surge::testing::check_swapped_seeds_differ(Device::cpu());
}

TEST_CASE("an engine of three agents reduces each agent's episode statistics as its own engine", "[engine_agents]") {
  // 4099 envs per agent: more than the CPU reduction's 64 chunks hold evenly, and past the size where it forks.
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics = agents_physics(surge::scenario_spec(name));
  const std::int64_t n = 4099;
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kAgentSeeds[k], physics[k]});
  const auto engine = surge::make_engine(name, cpu, n, agents);
  DeviceBuffer<std::int32_t> actions(cpu, 3 * n);
  surge::StepBuffers out(cpu, 3 * n, engine->spec().obs_dim);
  std::vector<std::unique_ptr<Engine>> alone;
  std::vector<surge::StepBuffers> alone_out;
  for (std::int64_t k = 0; k < 3; ++k) {
    alone.push_back(surge::make_engine(name, cpu, n, kAgentSeeds[k], physics[k]));
    alone_out.emplace_back(cpu, n, engine->spec().obs_dim);
  }
  for (int t = 0; t < 60; ++t) {
    engine->random_actions(out.actions.span(), {}, stream);
    engine->step(out.action_view(), out.views(), stream);
    for (std::int64_t k = 0; k < 3; ++k) {
      alone[k]->random_actions(alone_out[k].actions.span(), {}, stream);
      alone[k]->step(alone_out[k].action_view(), alone_out[k].views(), stream);
    }
  }
  const std::vector<surge::EpisodeStats> stats = engine->agent_episode_stats(stream);
  REQUIRE(stats.size() == 3);
  for (std::int64_t k = 0; k < 3; ++k) {
    INFO("agent " << k);
    const surge::EpisodeStats expected = alone[k]->episode_stats(stream);
    CHECK(expected.episodes > 0);
    CHECK(std::memcmp(&stats[k], &expected, sizeof expected) == 0);
    const bool same_obs = surge::to_host(engine->agent_rows(out.obs.span(), k), stream) ==
                          surge::to_host(alone_out[k].obs.span(), stream);
    CHECK(same_obs);
  }
  CHECK(std::memcmp(&stats[0], &stats[1], sizeof stats[0]) != 0);  // the agents did differ
}

TEST_CASE("rollout_random of an engine of three agents equals each agent's fused rollout alone", "[engine_agents]") {
  // Several agents take the plain steps (the fused tiles number streams by the rollout's column); one agent
  // alone takes the fused tile path: the two must agree.
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::int64_t n = 70, steps = 250;
  for (const std::string& name : surge::scenario_names()) {
    INFO(name);
    const ScenarioSpec& spec = surge::scenario_spec(name);
    const std::vector<PhysicsConfig> physics = agents_physics(spec);
    std::vector<EngineAgent> agents;
    for (std::size_t k = 0; k < 3; ++k) agents.push_back({kAgentSeeds[k], physics[k]});
    const auto engine = surge::make_engine(name, cpu, n, agents);
    const std::int64_t all = 3 * n;
    DeviceBuffer<float> obs(cpu, steps * all * spec.obs_dim), reward(cpu, steps * all);
    DeviceBuffer<std::uint8_t> terminated(cpu, steps * all), truncated(cpu, steps * all);
    engine->rollout_random(steps, {obs.span(), reward.span(), terminated.span(), truncated.span()}, stream);
    for (std::int64_t k = 0; k < 3; ++k) {
      INFO("agent " << k);
      const auto alone = surge::make_engine(name, cpu, n, kAgentSeeds[k], physics[k]);
      DeviceBuffer<float> alone_obs(cpu, steps * n * spec.obs_dim), alone_reward(cpu, steps * n);
      DeviceBuffer<std::uint8_t> alone_terminated(cpu, steps * n), alone_truncated(cpu, steps * n);
      alone->rollout_random(
          steps, {alone_obs.span(), alone_reward.span(), alone_terminated.span(), alone_truncated.span()}, stream);
      bool obs_same = true, reward_same = true, flags_same = true;
      for (std::int64_t t = 0; t < steps; ++t) {
        const std::int64_t row = t * all + k * n, alone_row = t * n;
        obs_same = obs_same && std::memcmp(obs.data() + row * spec.obs_dim, alone_obs.data() + alone_row * spec.obs_dim,
                                           n * spec.obs_dim * sizeof(float)) == 0;
        reward_same =
            reward_same && std::memcmp(reward.data() + row, alone_reward.data() + alone_row, n * sizeof(float)) == 0;
        flags_same = flags_same && std::memcmp(terminated.data() + row, alone_terminated.data() + alone_row, n) == 0 &&
                     std::memcmp(truncated.data() + row, alone_truncated.data() + alone_row, n) == 0;
      }
      CHECK(obs_same);
      CHECK(reward_same);
      CHECK(flags_same);
      const bool same_states =
          surge::to_host(engine->agent_states(k), stream) == surge::to_host(alone->states(), stream);
      CHECK(same_states);
    }
  }
}

TEST_CASE("the engine's buffer table holds a physics table and a seed per agent", "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics = agents_physics(surge::scenario_spec(name));
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kAgentSeeds[k], physics[k]});
  const auto engine = surge::make_engine(name, cpu, 5, agents);
  const surge::BufferArena& arena = engine->buffers();
  const int physics_index = arena.table().find("engine.physics");
  REQUIRE(physics_index >= 0);
  CHECK(arena.table()[physics_index].shape == "[K][4][params]");
  CHECK(arena.table()[physics_index].dims == std::vector<std::int64_t>{3});
  const int seeds_index = arena.table().find("engine.seeds");
  REQUIRE(seeds_index >= 0);
  CHECK(arena.table()[seeds_index].dims == std::vector<std::int64_t>{3});
  const std::vector<std::byte> tables = surge::to_host(arena.bytes_of(physics_index), stream);
  // Agent k's rows are the table of an engine of its physics alone; the memory plan lists them all.
  for (std::int64_t k = 0; k < 3; ++k) {
    INFO("agent " << k);
    const auto alone = surge::make_engine(name, cpu, 5, kAgentSeeds[k], physics[k]);
    const std::vector<std::byte> own =
        surge::to_host(alone->buffers().bytes_of(alone->buffers().table().find("engine.physics")), stream);
    REQUIRE(tables.size() == 3 * own.size());
    CHECK(std::memcmp(tables.data() + k * own.size(), own.data(), own.size()) == 0);
    CHECK(std::memcmp(tables.data() + ((k + 1) % 3) * own.size(), own.data(), own.size()) != 0);
  }
  const surge::MemoryPlan plan = surge::engine_memory_plan(name, cpu, 5, 3);
  CHECK(plan.allocated_bytes() == engine->device_bytes());
}

TEST_CASE("set_agent_physics rewrites one agent's table, as set_physics does its engine's", "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const ScenarioSpec& spec = surge::scenario_spec(name);
  const std::vector<PhysicsConfig> physics = agents_physics(spec);
  const std::int64_t n = 64;
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kAgentSeeds[k], physics[k]});
  const auto engine = surge::make_engine(name, cpu, n, agents);
  surge::StepBuffers out(cpu, 3 * n, spec.obs_dim);
  std::vector<std::unique_ptr<Engine>> alone;
  std::vector<surge::StepBuffers> alone_out;
  for (std::int64_t k = 0; k < 3; ++k) {
    alone.push_back(surge::make_engine(name, cpu, n, kAgentSeeds[k], physics[k]));
    alone_out.emplace_back(cpu, n, spec.obs_dim);
  }
  PhysicsConfig heavier = physics[2];  // masspole ~ U(0.3, 0.6) from here on
  const int masspole = spec.param_index("masspole");
  heavier.low[masspole] = spec.round_param(0.3);
  heavier.high[masspole] = spec.round_param(0.6);
  for (int t = 0; t < 200; ++t) {
    if (t == 40) {
      engine->set_agent_physics(1, heavier, stream);
      alone[1]->set_physics(heavier, stream);
    }
    engine->random_actions(out.actions.span(), {}, stream);
    engine->step(out.action_view(), out.views(), stream);
    for (std::int64_t k = 0; k < 3; ++k) {
      alone[k]->random_actions(alone_out[k].actions.span(), {}, stream);
      alone[k]->step(alone_out[k].action_view(), alone_out[k].views(), stream);
    }
  }
  CHECK(engine->agent_physics(1).high[masspole] == heavier.high[masspole]);
  CHECK(engine->agent_physics(0).value == physics[0].value);
  const std::vector<double> all_params = surge::params_to_host(*engine, stream);  // [3N][params]
  for (std::int64_t k = 0; k < 3; ++k) {
    INFO("agent " << k);
    const std::int64_t row = n * spec.param_count();
    const bool same_params = surge::params_to_host(*alone[k], stream) ==
                             std::vector<double>(all_params.begin() + k * row, all_params.begin() + (k + 1) * row);
    CHECK(same_params);
    const bool same_states =
        surge::to_host(engine->agent_states(k), stream) == surge::to_host(alone[k]->states(), stream);
    CHECK(same_states);
  }
}

TEST_CASE("an engine of agents refuses no agents and an agent's senseless physics", "[engine_agents]") {
  const Device cpu = Device::cpu();
  const ScenarioSpec& spec = surge::scenario_spec("cartpole");
  CHECK_THROWS_AS(surge::make_engine("cartpole", cpu, 8, std::vector<EngineAgent>{}), surge::InputError);
  PhysicsConfig negative = PhysicsConfig::defaults(spec);
  negative.value[spec.param_index("masspole")] = -1.0;
  const std::vector<EngineAgent> agents = {{1, PhysicsConfig::defaults(spec)}, {2, negative}};
  CHECK_THROWS_WITH(surge::make_engine("cartpole", cpu, 8, agents), Catch::Contains("masspole"));
}

TEST_CASE("agents stepping into buffers at a per-agent distance write the bytes of the contiguous rows",
          "[engine_agents]") {
  surge::testing::check_agents_step_at_a_distance(Device::cpu());
}

TEST_CASE("observe_agents writes observe's rows at a per-agent distance; a wrong stride is refused",
          "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  for (const std::string name : {"cartpole", "pendulum"}) {
    INFO(name);
    const ScenarioSpec& spec = surge::scenario_spec(name);
    const std::int64_t n = 7, part = n * spec.obs_dim, stride = (part + 5) * 4;  // 5 floats of padding
    const auto engine = surge::make_engine(name, cpu, n, surge::testing::test_agents(spec));
    surge::StepBuffers rows(cpu, 3 * n, spec.obs_dim);
    DeviceBuffer<float> continuous(cpu, 3 * n * spec.action_dim);
    for (int t = 0; t < 30; ++t) {  // away from the reset states
      engine->random_actions(rows.actions.span(), continuous.span(), stream);
      engine->step({rows.actions.cspan(), continuous.cspan()}, rows.views(), stream);
    }
    const std::vector<float> padded(3 * stride / 4, -7.0f);
    DeviceBuffer<float> apart(cpu, 3 * stride / 4);
    surge::from_host(apart.span(), padded, stream);
    engine->observe(rows.obs.span(), stream);
    engine->observe_agents(apart.span().slice(0, part), stride, stream);
    const std::vector<float> all = surge::to_host(rows.obs.span(), stream),
                             written = surge::to_host(apart.span(), stream);
    for (std::int64_t k = 0; k < 3; ++k) {
      INFO("agent " << k);
      CHECK(std::memcmp(written.data() + k * stride / 4, all.data() + k * part, part * sizeof(float)) == 0);
      CHECK(std::memcmp(written.data() + k * stride / 4, all.data() + ((k + 1) % 3) * part, part * sizeof(float)) != 0);
      for (std::int64_t i = part; i < stride / 4; ++i) CHECK(written[k * stride / 4 + i] == -7.0f);  // padding
    }
    // A stride below agent 0's part, not a multiple of a float, or negative; a view of every agent's rows with a
    // stride; actions at a distance where only step() takes them.
    const surge::Span<float> agent0 = apart.span().slice(0, part);
    CHECK_THROWS_WITH(engine->observe_agents(agent0, part * 4 - 4, stream), Catch::Contains("apart"));
    CHECK_THROWS_WITH(engine->observe_agents(agent0, stride + 2, stream), Catch::Contains("apart"));
    CHECK_THROWS(engine->observe_agents(agent0, -stride, stream));
    CHECK_THROWS(engine->observe_agents(rows.obs.span(), 3 * stride, stream));
    surge::StepViews views = rows.views();
    views.agent_stride_bytes = n * 4 - 4;  // the uint8 flags' parts fit, the floats' do not
    views.obs = views.obs.slice(0, part);
    views.final_obs = {};
    views.reward = views.reward.slice(0, n);
    views.terminated = views.terminated.slice(0, n);
    views.truncated = views.truncated.slice(0, n);
    CHECK_THROWS_WITH(engine->step({rows.actions.cspan(), continuous.cspan()}, views, stream),
                      Catch::Contains("apart"));
    surge::ActionView actions{rows.actions.cspan(), continuous.cspan(), 4};
    CHECK_THROWS(engine->transition(engine->states(), actions, engine->states(), rows.obs.span(), rows.reward.span(),
                                    rows.terminated.span(), stream));
  }
}
