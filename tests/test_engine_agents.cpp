// One engine of K agents (Engine::num_agents) against K engines of one agent each: agent k's environments
// must step, reset, draw and count episodes exactly as an engine of N environments with agent k's seed and
// physics, in every scenario, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"

using surge::ActionView;
using surge::Device;
using surge::DeviceBuffer;
using surge::Engine;
using surge::EngineAgent;
using surge::PhysicsConfig;
using surge::ScenarioSpec;
using surge::Span;
using surge::Stream;

namespace {

// What a run wrote and left, by name, as bytes: each part compared on its own so a failure names it.
using Trace = std::vector<std::pair<std::string, std::vector<std::byte>>>;

template <class T>
void record(Trace& trace, const std::string& name, Span<T> view, const Stream& stream) {
  const std::vector<std::remove_const_t<T>> host = surge::to_host(view, stream);
  const auto* bytes = reinterpret_cast<const std::byte*>(host.data());
  auto it = trace.begin();
  while (it != trace.end() && it->first != name) ++it;
  if (it == trace.end()) it = trace.insert(trace.end(), {name, {}});
  it->second.insert(it->second.end(), bytes, bytes + host.size() * sizeof(T));
}

void check_same(const Trace& actual, const Trace& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t p = 0; p < actual.size(); ++p) {
    INFO(actual[p].first);
    REQUIRE(actual[p].first == expected[p].first);
    CHECK(actual[p].second == expected[p].second);
  }
}

bool same(const Trace& a, const Trace& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p] != b[p]) return false;
  return true;
}

// A deterministic action of environment i of agent k at step t, the same whichever engine holds the agent.
std::uint64_t mix(std::uint64_t t, std::uint64_t agent, std::uint64_t i) {
  std::uint64_t x = (t << 40) ^ (agent << 20) ^ i;
  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 32);
}

// The three agents' physics: the defaults; one parameter at 1.5 times its default; the same parameter drawn
// from [0.5, 2] times its default at every reset (CartPole: masspole ~ U(0.05, 0.2)).
std::vector<PhysicsConfig> agents_physics(const ScenarioSpec& spec) {
  const char* varied = spec.name == "cartpole"                  ? "masspole"
                       : spec.name == "mountain_car"            ? "force"
                       : spec.name == "acrobot"                 ? "link_mass_1"
                       : spec.name == "pendulum"                ? "mass"
                       : spec.name == "mountain_car_continuous" ? "power"
                                                                : "";
  const int j = spec.param_index(varied);
  REQUIRE(j >= 0);
  std::vector<PhysicsConfig> physics(3, PhysicsConfig::defaults(spec));
  physics[1].value[j] = spec.round_param(1.5 * physics[1].value[j]);
  physics[2].randomized[j] = 1;
  physics[2].low[j] = spec.round_param(0.5 * physics[2].value[j]);
  physics[2].high[j] = spec.round_param(2.0 * physics[2].value[j]);
  return physics;
}

// Resets `engine` (agents first_agent .. first_agent + K - 1 of the test), records every agent's state, then
// steps it `steps` times with mix()'s actions, recording each step's outputs and, at the end, the engine's
// state and episode statistics. One trace per agent of the engine.
std::vector<Trace> run(Engine& engine, std::int64_t first_agent, std::int64_t steps, const Stream& stream) {
  const ScenarioSpec& spec = engine.spec();
  const Device device = engine.device();
  const bool discrete = spec.action_kind == surge::ActionKind::Discrete;
  const std::int64_t agents = engine.num_agents(), n = engine.envs_per_agent(), all = engine.num_envs();
  const std::int64_t obs_dim = spec.obs_dim, action_dim = discrete ? 0 : spec.action_dim;
  DeviceBuffer<std::int32_t> discrete_actions(device, discrete ? all : 0);
  DeviceBuffer<float> continuous_actions(device, all * action_dim);
  DeviceBuffer<float> obs(device, all * obs_dim), final_obs(device, all * obs_dim), reward(device, all);
  DeviceBuffer<std::uint8_t> terminated(device, all), truncated(device, all);
  std::vector<Trace> traces(static_cast<std::size_t>(agents));
  const auto record_state = [&](const std::string& when) {
    for (std::int64_t k = 0; k < agents; ++k) {
      Trace& trace = traces[static_cast<std::size_t>(k)];
      record(trace, when + " states", engine.agent_states(k), stream);
      const surge::TensorView params = engine.agent_params(k);
      REQUIRE(params.shape[0] == n);
      record(trace, when + " params",
             Span<std::byte>{static_cast<std::byte*>(params.data),
                             params.numel() * static_cast<std::int64_t>(surge::dtype_size(params.dtype)), device},
             stream);
      record(trace, when + " rng_offsets", engine.agent_rows(engine.rng_offsets(), k), stream);
      record(trace, when + " episode_steps", engine.agent_rows(engine.episode_steps(), k), stream);
      record(trace, when + " episode_returns", engine.agent_rows(engine.episode_returns(), k), stream);
    }
  };
  engine.reset(stream);
  engine.observe(obs.span(), stream);
  for (std::int64_t k = 0; k < agents; ++k)
    record(traces[static_cast<std::size_t>(k)], "reset obs", engine.agent_rows(obs.span(), k), stream);
  record_state("reset");
  for (std::int64_t t = 0; t < steps; ++t) {
    std::vector<std::int32_t> host_discrete(discrete_actions.size());
    std::vector<float> host_continuous(continuous_actions.size());
    for (std::int64_t e = 0; e < all; ++e) {
      const std::uint64_t word = mix(t, first_agent + e / n, e % n);
      if (discrete) host_discrete[e] = static_cast<std::int32_t>(word % spec.num_actions);
      for (std::int64_t d = 0; d < action_dim; ++d) {
        const float unit = static_cast<float>((word >> (8 * d)) & 0xffffff) / 16777216.0f;
        host_continuous[e * action_dim + d] = spec.action_low[d] + (spec.action_high[d] - spec.action_low[d]) * unit;
      }
    }
    surge::from_host(discrete_actions.span(), host_discrete, stream);
    surge::from_host(continuous_actions.span(), host_continuous, stream);
    surge::zero_bytes(final_obs.data(), device, final_obs.span().bytes(), stream);
    engine.step(ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
                {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
    for (std::int64_t k = 0; k < agents; ++k) {
      Trace& trace = traces[static_cast<std::size_t>(k)];
      record(trace, "obs", engine.agent_rows(obs.span(), k), stream);
      record(trace, "final_obs", engine.agent_rows(final_obs.span(), k), stream);
      record(trace, "reward", engine.agent_rows(reward.span(), k), stream);
      record(trace, "terminated", engine.agent_rows(terminated.span(), k), stream);
      record(trace, "truncated", engine.agent_rows(truncated.span(), k), stream);
    }
  }
  record_state("end");
  DeviceBuffer<double> stats(device, agents * surge::kEpisodeStatsWidth);
  engine.reduce_episode_stats(stats.span(), stream);
  for (std::int64_t k = 0; k < agents; ++k) {
    const Span<double> row = stats.span().slice(k * surge::kEpisodeStatsWidth, surge::kEpisodeStatsWidth);
    CHECK(surge::to_host(row, stream)[0] > 0);  // every agent ended episodes, so resets ran inside the steps
    record(traces[static_cast<std::size_t>(k)], "episode stats", row, stream);
  }
  return traces;
}

// Steps past every scenario's time limit, so that each ends episodes (and resets) inside the run.
std::int64_t steps_for(const ScenarioSpec& spec) { return std::max<std::int64_t>(300, spec.max_episode_steps + 20); }

const std::vector<std::uint64_t> kSeeds = {11, 4, 2026};

}  // namespace

TEST_CASE("each agent of an engine of three steps as an engine of its own seed and physics", "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  for (const std::string& name : surge::scenario_names()) {
    const ScenarioSpec& spec = surge::scenario_spec(name);
    const std::vector<PhysicsConfig> physics = agents_physics(spec);
    for (const std::int64_t n : {std::int64_t{5}, std::int64_t{64}}) {
      INFO(name << ", N = " << n);
      std::vector<EngineAgent> agents;
      for (std::size_t k = 0; k < 3; ++k) agents.push_back({kSeeds[k], physics[k]});
      const auto engine = surge::make_engine(name, cpu, n, agents);
      REQUIRE(engine->num_agents() == 3);
      REQUIRE(engine->num_envs() == 3 * n);
      const std::vector<Trace> together = run(*engine, 0, steps_for(spec), stream);
      for (std::int64_t k = 0; k < 3; ++k) {
        INFO("agent " << k);
        CHECK(engine->agent_seed(k) == kSeeds[k]);
        const auto alone = surge::make_engine(name, cpu, n, kSeeds[k], physics[k]);
        const std::vector<Trace> expected = run(*alone, k, steps_for(spec), stream);
        check_same(together[k], expected[0]);
      }
    }
  }
}

TEST_CASE("agents whose seeds are swapped no longer match the engines of their own seeds", "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics(3, PhysicsConfig::defaults(surge::scenario_spec(name)));
  const std::vector<EngineAgent> swapped = {{kSeeds[1], physics[0]}, {kSeeds[0], physics[1]}, {kSeeds[2], physics[2]}};
  const auto engine = surge::make_engine(name, cpu, 64, swapped);
  const std::vector<Trace> together = run(*engine, 0, 300, stream);
  for (std::int64_t k = 0; k < 3; ++k) {
    const auto alone = surge::make_engine(name, cpu, 64, kSeeds[k], physics[k]);
    const std::vector<Trace> expected = run(*alone, k, 300, stream);
    INFO("agent " << k);
    if (k == 2)
      CHECK(same(together[k], expected[0]));
    else
      CHECK_FALSE(same(together[k], expected[0]));
  }
}

TEST_CASE("an engine of three agents reduces each agent's episode statistics as its own engine", "[engine_agents]") {
  // 4099 envs per agent: more than the CPU reduction's 64 chunks hold evenly, and past the size where it forks.
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics = agents_physics(surge::scenario_spec(name));
  const std::int64_t n = 4099;
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kSeeds[k], physics[k]});
  const auto engine = surge::make_engine(name, cpu, n, agents);
  DeviceBuffer<std::int32_t> actions(cpu, 3 * n);
  surge::StepBuffers out(cpu, 3 * n, engine->spec().obs_dim);
  std::vector<std::unique_ptr<Engine>> alone;
  std::vector<surge::StepBuffers> alone_out;
  for (std::int64_t k = 0; k < 3; ++k) {
    alone.push_back(surge::make_engine(name, cpu, n, kSeeds[k], physics[k]));
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
    CHECK(surge::to_host(engine->agent_rows(out.obs.span(), k), stream) ==
          surge::to_host(alone_out[k].obs.span(), stream));
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
    for (std::size_t k = 0; k < 3; ++k) agents.push_back({kSeeds[k], physics[k]});
    const auto engine = surge::make_engine(name, cpu, n, agents);
    const std::int64_t all = 3 * n;
    DeviceBuffer<float> obs(cpu, steps * all * spec.obs_dim), reward(cpu, steps * all);
    DeviceBuffer<std::uint8_t> terminated(cpu, steps * all), truncated(cpu, steps * all);
    engine->rollout_random(steps, {obs.span(), reward.span(), terminated.span(), truncated.span()}, stream);
    for (std::int64_t k = 0; k < 3; ++k) {
      INFO("agent " << k);
      const auto alone = surge::make_engine(name, cpu, n, kSeeds[k], physics[k]);
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
      CHECK(surge::to_host(engine->agent_states(k), stream) == surge::to_host(alone->states(), stream));
    }
  }
}

TEST_CASE("the engine's buffer table holds a physics table and a seed per agent", "[engine_agents]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics = agents_physics(surge::scenario_spec(name));
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kSeeds[k], physics[k]});
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
    const auto alone = surge::make_engine(name, cpu, 5, kSeeds[k], physics[k]);
    const std::vector<std::byte> own =
        surge::to_host(alone->buffers().bytes_of(alone->buffers().table().find("engine.physics")), stream);
    REQUIRE(tables.size() == 3 * own.size());
    CHECK(std::memcmp(tables.data() + k * own.size(), own.data(), own.size()) == 0);
    CHECK(std::memcmp(tables.data() + ((k + 1) % 3) * own.size(), own.data(), own.size()) != 0);
  }
  const surge::MemoryPlan plan = surge::engine_memory_plan(name, cpu, 5, 3);
  CHECK(plan.allocated_bytes() == engine->device_bytes());
}
