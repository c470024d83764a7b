#pragma once
// An engine of K agents stepping into per-agent buffers at a distance (ActionView and StepViews::agent_stride_bytes,
// Engine::observe_agents): K replicas of one agent's rollout layout in a BufferArena, as a batched learner holds
// them. The traces it writes are run()'s (tests/support/engine_agents_cases.hpp), so each agent compares bit for
// bit with the contiguous layout's rows and with its engine alone; test_engine_agents (CPU) and
// test_engine_agents_gpu (CUDA) run the checks.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "tests/support/engine_agents_cases.hpp"

namespace surge::testing {

// One agent's rollout of T steps, and `pad` bytes no view holds: the layout each replica of the arena holds.
struct AgentRollout {
  Slot<float> obs;  // [T+1][N][obs_dim]: the reset's observation, then each step's
  Slot<float> final_obs, reward, continuous;
  Slot<std::int32_t> discrete;
  Slot<std::uint8_t> terminated, truncated, pad;

  AgentRollout(BufferTable& table, const ScenarioSpec& spec, std::int64_t steps, std::int64_t n,
               std::int64_t pad_bytes) {
    const bool discrete_actions = spec.action_kind == ActionKind::Discrete;
    obs = table.add<float>("rollout.obs", {(steps + 1) * n * spec.obs_dim}, "[T+1][N][obs_dim]", "observations");
    discrete = table.add<std::int32_t>("rollout.discrete", {discrete_actions ? steps * n : 0}, "[T][N]", "actions");
    pad = table.add<std::uint8_t>("rollout.pad", {pad_bytes}, "[pad]", "bytes no view holds");
    reward = table.add<float>("rollout.reward", {steps * n}, "[T][N]", "rewards");
    terminated = table.add<std::uint8_t>("rollout.terminated", {steps * n}, "[T][N]", "terminated flags");
    truncated = table.add<std::uint8_t>("rollout.truncated", {steps * n}, "[T][N]", "truncated flags");
    final_obs = table.add<float>("rollout.final_obs", {steps * n * spec.obs_dim}, "[T][N][obs_dim]", "final obs");
    continuous = table.add<float>("rollout.continuous", {discrete_actions ? 0 : steps * n * spec.action_dim},
                                  "[T][N][action_dim]", "actions");
  }
};

inline constexpr std::uint8_t kUntouched = 0xa5;

// run() with every view at a per-agent distance: agent k's actions, observations and step outputs in replica k of
// an arena of K replicas of AgentRollout, stepped with the arena's replica stride (`stride_change` added to it
// for the outputs). Checks that the bytes outside every entry of every replica (the padding) stay untouched.
// With `agent_ranges` each step is Engine::step_agents for agents 1 to K-1, an empty range, then agent 0.
inline std::vector<Trace> run_strided(Engine& engine, std::int64_t first_agent, std::int64_t steps,
                                      const Stream& stream, std::int64_t pad_bytes = 1000, bool agent_ranges = false) {
  const ScenarioSpec& spec = engine.spec();
  const Device device = engine.device();
  const int agents = static_cast<int>(engine.num_agents());
  const std::int64_t n = engine.envs_per_agent(), obs_width = n * spec.obs_dim;
  const std::int64_t action_width = spec.action_kind == ActionKind::Discrete ? n : n * spec.action_dim;
  BufferTable table;
  const AgentRollout b(table, spec, steps, n, pad_bytes);
  const BufferArena arena(device, std::move(table), stream, agents);
  const auto stride = static_cast<std::int64_t>(arena.replica_stride_bytes());
  REQUIRE(stride >= static_cast<std::int64_t>(arena.table().bytes()));
  // Everything untouched but the final observations, which a step writes only where an episode ended (run()
  // zeroes them before each step).
  const Span<std::byte> all{arena.bytes_of(0).data, stride * agents, device};  // rollout.obs starts the table
  from_host(all, std::vector<std::byte>(all.bytes(), std::byte{kUntouched}), stream);
  for (int k = 0; k < agents; ++k)
    zero_bytes(arena.data(b.final_obs, k), device, arena.at(b.final_obs, k).bytes(), stream);
  // mix()'s actions, agent k's in its own replica.
  std::vector<std::int32_t> discrete;
  std::vector<float> continuous;
  for (std::int64_t t = 0; t < steps; ++t) {
    mix_actions(engine, first_agent, t, discrete, continuous);
    for (int k = 0; k < agents; ++k) {
      if (!discrete.empty())
        from_host(arena.at(b.discrete, k).slice(t * n, n),
                  std::vector<std::int32_t>(discrete.begin() + k * n, discrete.begin() + (k + 1) * n), stream);
      else
        from_host(
            arena.at(b.continuous, k).slice(t * action_width, action_width),
            std::vector<float>(continuous.begin() + k * action_width, continuous.begin() + (k + 1) * action_width),
            stream);
    }
  }
  std::vector<Trace> traces(static_cast<std::size_t>(agents));
  engine.reset(stream);
  engine.observe_agents(arena.at(b.obs, 0).slice(0, obs_width), stride, stream);
  for (int k = 0; k < agents; ++k)
    record(traces[static_cast<std::size_t>(k)], "reset obs", arena.at(b.obs, k).slice(0, obs_width), stream);
  record_state(traces, engine, "reset", stream);
  const auto step = [&](std::int64_t t) {
    const bool discrete_actions = spec.action_kind == ActionKind::Discrete;
    const ActionView actions{
        discrete_actions ? arena.at(b.discrete, 0).slice(t * n, n) : Span<std::int32_t>{},
        discrete_actions ? Span<float>{} : arena.at(b.continuous, 0).slice(t * action_width, action_width), stride};
    const StepViews out{arena.at(b.obs, 0).slice((t + 1) * obs_width, obs_width),
                        arena.at(b.reward, 0).slice(t * n, n),
                        arena.at(b.terminated, 0).slice(t * n, n),
                        arena.at(b.truncated, 0).slice(t * n, n),
                        arena.at(b.final_obs, 0).slice(t * obs_width, obs_width),
                        stride};
    if (!agent_ranges) return engine.step(actions, out, stream);
    engine.step_agents(1, agents - 1, actions, out, stream);
    engine.step_agents(agents, 0, actions, out, stream);
    engine.step_agents(0, 1, actions, out, stream);
  };
  for (std::int64_t t = 0; t < steps; ++t) step(t);
  // Every step's outputs of agent k, as run() records them step after step.
  for (int k = 0; k < agents; ++k) {
    Trace& trace = traces[static_cast<std::size_t>(k)];
    record(trace, "obs", arena.at(b.obs, k).slice(obs_width, steps * obs_width), stream);
    record(trace, "final_obs", arena.at(b.final_obs, k), stream);
    record(trace, "reward", arena.at(b.reward, k), stream);
    record(trace, "terminated", arena.at(b.terminated, k), stream);
    record(trace, "truncated", arena.at(b.truncated, k), stream);
  }
  record_end(traces, engine, stream);
  // The padding: every byte outside the entries of every replica.
  std::vector<std::uint8_t> padding(static_cast<std::size_t>(all.size), 1);
  for (int k = 0; k < agents; ++k)
    for (const BufferEntry& entry : arena.table().entries())
      if (entry.name != "rollout.pad")
        for (std::size_t i = 0; i < entry.bytes(); ++i) padding[k * stride + entry.offset + i] = 0;
  const std::vector<std::byte> bytes = to_host(all, stream);
  std::int64_t touched = 0, checked = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    checked += padding[i];
    touched += padding[i] && bytes[i] != std::byte{kUntouched};
  }
  CHECK(checked >= agents * pad_bytes);
  CHECK(touched == 0);
  return traces;
}

// For CartPole and Acrobot (discrete) and Pendulum (continuous), three agents of N = 5 and N = 64 environments
// with different seeds and physics (one randomised) stepping into per-agent buffers at a padded distance: each
// agent's trace equals that agent's rows of the contiguous layout and its engine alone's, alone in the strided
// layout too (one agent: the engine's own kernel), and stepped in ranges of agents (Engine::step_agents); the next
// agent's trace differs. A range outside the agents is refused.
inline void check_agents_step_at_a_distance(Device device) {
  Stream stream(device);
  for (const std::string name : {"cartpole", "acrobot", "pendulum"}) {
    const ScenarioSpec& spec = scenario_spec(name);
    const std::vector<EngineAgent> agents = test_agents(spec);
    for (const std::int64_t n : {std::int64_t{5}, std::int64_t{64}}) {
      INFO(name << ", N = " << n);
      const auto strided_engine = make_engine(name, device, n, agents);
      const std::vector<Trace> strided = run_strided(*strided_engine, 0, steps_for(spec), stream);
      const auto engine = make_engine(name, device, n, agents);
      const std::vector<Trace> rows = run(*engine, 0, steps_for(spec), stream);
      for (std::int64_t k = 0; k < 3; ++k) {
        INFO("agent " << k);
        check_same(strided[k], rows[k]);
        CHECK_FALSE(same(strided[k], rows[(k + 1) % 3]));
        const auto alone = make_engine(name, device, n, agents[k].seed, agents[k].physics);
        check_same(strided[k], run(*alone, k, steps_for(spec), stream)[0]);
        const auto alone_strided = make_engine(name, device, n, agents[k].seed, agents[k].physics);
        check_same(run_strided(*alone_strided, k, steps_for(spec), stream, 3)[0], strided[k]);
      }
      // Engine::step_agents: the agents stepped in two ranges and an empty one write the same bytes.
      const auto ranged_engine = make_engine(name, device, n, agents);
      const std::vector<Trace> ranged = run_strided(*ranged_engine, 0, steps_for(spec), stream, 1000, true);
      for (std::int64_t k = 0; k < 3; ++k) {
        INFO("agent " << k << ", stepped in ranges");
        check_same(ranged[k], strided[k]);
        CHECK_FALSE(same(ranged[k], strided[(k + 1) % 3]));
      }
      CHECK_THROWS_AS(ranged_engine->step_agents(2, 2, {}, {}, stream), Error);
      CHECK_THROWS_AS(ranged_engine->step_agents(-1, 1, {}, {}, stream), Error);
    }
  }
}

}  // namespace surge::testing
