#pragma once
// One engine of K agents against K engines of one agent each, on either backend: the traces both write and
// the checks test_engine_agents (CPU) and test_engine_agents_gpu (CUDA) run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"

namespace surge::testing {

// What a run wrote and left, by name, as bytes: each part compared on its own so a failure names it.
using Trace = std::vector<std::pair<std::string, std::vector<std::byte>>>;

template <class T>
void record(Trace& trace, const std::string& name, Span<T> view, const Stream& stream) {
  const std::vector<std::remove_const_t<T>> host = to_host(view, stream);
  const auto* bytes = reinterpret_cast<const std::byte*>(host.data());
  auto it = trace.begin();
  while (it != trace.end() && it->first != name) ++it;
  if (it == trace.end()) it = trace.insert(trace.end(), {name, {}});
  it->second.insert(it->second.end(), bytes, bytes + host.size() * sizeof(T));
}

inline void check_same(const Trace& actual, const Trace& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t p = 0; p < actual.size(); ++p) {
    INFO(actual[p].first);
    REQUIRE(actual[p].first == expected[p].first);
    const bool same_bytes = actual[p].second == expected[p].second;  // not the bytes: a failure would print them
    CHECK(same_bytes);
  }
}

inline bool same(const Trace& a, const Trace& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p] != b[p]) return false;
  return true;
}

// A deterministic action of environment i of agent k at step t, the same whichever engine holds the agent.
inline std::uint64_t mix(std::uint64_t t, std::uint64_t agent, std::uint64_t i) {
  std::uint64_t x = (t << 40) ^ (agent << 20) ^ i;
  x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 32);
}

// The three agents' physics: the defaults; one parameter at 1.5 times its default; the same parameter drawn
// from [0.5, 2] times its default at every reset (CartPole: masspole ~ U(0.05, 0.2)).
inline std::vector<PhysicsConfig> agents_physics(const ScenarioSpec& spec) {
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

// mix()'s actions of step t for every environment of `engine` (agents first_agent .. first_agent + K - 1 of the
// test), [K*N] (discrete) or [K*N][action_dim] (continuous; the other vector stays empty).
inline void mix_actions(const Engine& engine, std::int64_t first_agent, std::int64_t t,
                        std::vector<std::int32_t>& discrete, std::vector<float>& continuous) {
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t all = engine.num_envs(), n = engine.envs_per_agent();
  const std::int64_t action_dim = spec.action_kind == ActionKind::Discrete ? 0 : spec.action_dim;
  discrete.assign(action_dim == 0 ? all : 0, 0);
  continuous.assign(all * action_dim, 0.0f);
  for (std::int64_t e = 0; e < all; ++e) {
    const std::uint64_t word = mix(t, first_agent + e / n, e % n);
    if (action_dim == 0) discrete[e] = static_cast<std::int32_t>(word % spec.num_actions);
    for (std::int64_t d = 0; d < action_dim; ++d) {
      const float unit = static_cast<float>((word >> (8 * d)) & 0xffffff) / 16777216.0f;
      continuous[e * action_dim + d] = spec.action_low[d] + (spec.action_high[d] - spec.action_low[d]) * unit;
    }
  }
}

// Every agent's state, each into its trace, its parts named after `when`.
inline void record_state(std::vector<Trace>& traces, Engine& engine, const std::string& when, const Stream& stream) {
  for (std::int64_t k = 0; k < engine.num_agents(); ++k) {
    Trace& trace = traces[static_cast<std::size_t>(k)];
    record(trace, when + " states", engine.agent_states(k), stream);
    const TensorView params = engine.agent_params(k);
    REQUIRE(params.shape[0] == engine.envs_per_agent());
    record(trace, when + " params",
           Span<std::byte>{static_cast<std::byte*>(params.data),
                           params.numel() * static_cast<std::int64_t>(dtype_size(params.dtype)), engine.device()},
           stream);
    record(trace, when + " rng_offsets", engine.agent_rows(engine.rng_offsets(), k), stream);
    record(trace, when + " episode_steps", engine.agent_rows(engine.episode_steps(), k), stream);
    record(trace, when + " episode_returns", engine.agent_rows(engine.episode_returns(), k), stream);
  }
}

// The end of a run: every agent's state and episode statistics, each of which must have ended episodes.
inline void record_end(std::vector<Trace>& traces, Engine& engine, const Stream& stream) {
  record_state(traces, engine, "end", stream);
  const std::int64_t agents = engine.num_agents();
  DeviceBuffer<double> stats(engine.device(), agents * kEpisodeStatsWidth);
  engine.reduce_episode_stats(stats.span(), stream);
  for (std::int64_t k = 0; k < agents; ++k) {
    const Span<double> row = stats.span().slice(k * kEpisodeStatsWidth, kEpisodeStatsWidth);
    CHECK(to_host(row, stream)[0] > 0);  // every agent ended episodes, so resets ran inside the steps
    record(traces[static_cast<std::size_t>(k)], "episode stats", row, stream);
  }
}

// Resets `engine` (agents first_agent .. first_agent + K - 1 of the test), records every agent's state, then
// steps it `steps` times with mix()'s actions, recording each step's outputs and, at the end, the engine's
// state and episode statistics. One trace per agent of the engine.
inline std::vector<Trace> run(Engine& engine, std::int64_t first_agent, std::int64_t steps, const Stream& stream) {
  const ScenarioSpec& spec = engine.spec();
  const Device device = engine.device();
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  const std::int64_t agents = engine.num_agents(), all = engine.num_envs();
  const std::int64_t obs_dim = spec.obs_dim, action_dim = discrete ? 0 : spec.action_dim;
  DeviceBuffer<std::int32_t> discrete_actions(device, discrete ? all : 0);
  DeviceBuffer<float> continuous_actions(device, all * action_dim);
  DeviceBuffer<float> obs(device, all * obs_dim), final_obs(device, all * obs_dim), reward(device, all);
  DeviceBuffer<std::uint8_t> terminated(device, all), truncated(device, all);
  std::vector<Trace> traces(static_cast<std::size_t>(agents));
  engine.reset(stream);
  engine.observe(obs.span(), stream);
  for (std::int64_t k = 0; k < agents; ++k)
    record(traces[static_cast<std::size_t>(k)], "reset obs", engine.agent_rows(obs.span(), k), stream);
  record_state(traces, engine, "reset", stream);
  std::vector<std::int32_t> host_discrete;
  std::vector<float> host_continuous;
  for (std::int64_t t = 0; t < steps; ++t) {
    mix_actions(engine, first_agent, t, host_discrete, host_continuous);
    from_host(discrete_actions.span(), host_discrete, stream);
    from_host(continuous_actions.span(), host_continuous, stream);
    zero_bytes(final_obs.data(), device, final_obs.span().bytes(), stream);
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
  record_end(traces, engine, stream);
  return traces;
}

// Steps past every scenario's time limit, so that each ends episodes (and resets) inside the run.
inline std::int64_t steps_for(const ScenarioSpec& spec) {
  return std::max<std::int64_t>(300, spec.max_episode_steps + 20);
}

inline const std::vector<std::uint64_t> kAgentSeeds = {11, 4, 2026};

// The test's three agents of a scenario: kAgentSeeds with agents_physics.
inline std::vector<EngineAgent> test_agents(const ScenarioSpec& spec) {
  const std::vector<PhysicsConfig> physics = agents_physics(spec);
  std::vector<EngineAgent> agents;
  for (std::size_t k = 0; k < 3; ++k) agents.push_back({kAgentSeeds[k], physics[k]});
  return agents;
}

// For every scenario, three agents of N = 5 and N = 64 environments with different seeds and physics (one
// randomised): each agent's trace equals that of an engine of its own seed and physics.
inline void check_agents_step_as_engines_alone(Device device) {
  Stream stream(device);
  for (const std::string& name : scenario_names()) {
    const ScenarioSpec& spec = scenario_spec(name);
    const std::vector<EngineAgent> agents = test_agents(spec);
    for (const std::int64_t n : {std::int64_t{5}, std::int64_t{64}}) {
      INFO(name << ", N = " << n);
      const auto engine = make_engine(name, device, n, agents);
      REQUIRE(engine->num_agents() == 3);
      REQUIRE(engine->num_envs() == 3 * n);
      const std::vector<Trace> together = run(*engine, 0, steps_for(spec), stream);
      for (std::int64_t k = 0; k < 3; ++k) {
        INFO("agent " << k);
        CHECK(engine->agent_seed(k) == kAgentSeeds[k]);
        const auto alone = make_engine(name, device, n, kAgentSeeds[k], agents[k].physics);
        const std::vector<Trace> expected = run(*alone, k, steps_for(spec), stream);
        check_same(together[k], expected[0]);
      }
    }
  }
}

// Agents 0 and 1 with each other's seeds differ from the engines of their own seeds; agent 2 still matches.
inline void check_swapped_seeds_differ(Device device) {
  Stream stream(device);
  const std::string name = "cartpole";
  const std::vector<PhysicsConfig> physics(3, PhysicsConfig::defaults(scenario_spec(name)));
  const std::vector<EngineAgent> swapped = {
      {kAgentSeeds[1], physics[0]}, {kAgentSeeds[0], physics[1]}, {kAgentSeeds[2], physics[2]}};
  const auto engine = make_engine(name, device, 64, swapped);
  const std::vector<Trace> together = run(*engine, 0, 300, stream);
  for (std::int64_t k = 0; k < 3; ++k) {
    const auto alone = make_engine(name, device, 64, kAgentSeeds[k], physics[k]);
    const std::vector<Trace> expected = run(*alone, k, 300, stream);
    INFO("agent " << k);
    if (k == 2)
      CHECK(same(together[k], expected[0]));
    else
      CHECK_FALSE(same(together[k], expected[0]));
  }
}

}  // namespace surge::testing
