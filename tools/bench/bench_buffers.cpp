#include "tools/bench/bench_buffers.hpp"

#include <algorithm>

#include "scenarios/registry.hpp"

namespace surge::cli {
namespace {

bool is_discrete(const ScenarioSpec& spec) { return spec.action_kind == ActionKind::Discrete; }

}  // namespace

EnvBenchBuffers::EnvBenchBuffers(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps,
                                 bool step_mode)
    : obs(device, steps * num_envs * spec.obs_dim),
      reward(device, steps * num_envs),
      terminated(device, steps * num_envs),
      truncated(device, steps * num_envs),
      discrete_actions(device, step_mode && is_discrete(spec) ? num_envs : 0),
      continuous_actions(device, step_mode && !is_discrete(spec) ? num_envs * spec.action_dim : 0) {}

MemoryPlan EnvBenchBuffers::plan(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps,
                                 bool step_mode) {
  MemoryPlan plan(device);
  plan.add<float>("rollout.obs", "[T][N][obs_dim]", steps * num_envs * spec.obs_dim)
      .add<float>("rollout.reward", "[T][N]", steps * num_envs)
      .add<std::uint8_t>("rollout.terminated", "[T][N]", steps * num_envs)
      .add<std::uint8_t>("rollout.truncated", "[T][N]", steps * num_envs)
      .add<std::int32_t>("actions.discrete", "[N]", step_mode && is_discrete(spec) ? num_envs : 0)
      .add<float>("actions.continuous", "[N][action_dim]",
                  step_mode && !is_discrete(spec) ? num_envs * spec.action_dim : 0);
  return plan;
}

std::size_t EnvBenchBuffers::bytes() const {
  return obs.bytes() + reward.bytes() + terminated.bytes() + truncated.bytes() + discrete_actions.bytes() +
         continuous_actions.bytes();
}

std::size_t bench_copy_bytes(const ScenarioSpec& spec, std::int64_t num_envs, std::int64_t steps) {
  // As many bytes as the rollout writes, within [64 MiB, 2 GiB]: large enough to reach full bandwidth.
  const std::size_t rollout = static_cast<std::size_t>(steps * num_envs) * rollout_bytes_per_env_step(spec);
  return std::clamp<std::size_t>(rollout, std::size_t(64) << 20, std::size_t(2) << 30);
}

MemoryPlan bench_env_memory_plan(const ScenarioSpec& spec, Device device, std::int64_t num_envs, std::int64_t steps,
                                 bool step_mode) {
  MemoryPlan plan = engine_memory_plan(spec.name, device, num_envs);
  plan.append(EnvBenchBuffers::plan(spec, device, num_envs, steps, step_mode));
  const std::int64_t copy_elements = static_cast<std::int64_t>(bench_copy_bytes(spec, num_envs, steps) / sizeof(float));
  plan.add<float>("copy_bandwidth.source", "[bytes/4]", copy_elements)
      .add<float>("copy_bandwidth.target", "[bytes/4]", copy_elements);
  return plan;
}

}  // namespace surge::cli
