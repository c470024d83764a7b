#pragma once
// Shaped views of what an Engine reads and writes, for handing to foreign tensor libraries
// (interop/): the step outputs, the actions and the engine's own per-environment state.
#include <cstdint>
#include <vector>

#include "sim/engine.hpp"
#include "sim/tensor_view.hpp"

namespace surge {

// Owned buffers for stepping an engine outside a rollout (examples, interop, tests): discrete actions
// and everything step() writes, each on `device`.
struct StepBuffers {
  DeviceBuffer<std::int32_t> actions;                // [N] (discrete scenarios)
  DeviceBuffer<float> obs, final_obs;                // [N][obs_dim]
  DeviceBuffer<float> reward;                        // [N]
  DeviceBuffer<std::uint8_t> terminated, truncated;  // [N]

  StepBuffers(Device device, std::int64_t n, int obs_dim)
      : actions(device, n),
        obs(device, n * obs_dim),
        final_obs(device, n * obs_dim),
        reward(device, n),
        terminated(device, n),
        truncated(device, n) {}
  StepViews views() const { return {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}; }
  ActionView action_view() const { return {actions.cspan(), {}}; }
};

// The buffers step() writes: "obs" [N][obs_dim], "reward" [N], "terminated" [N], "truncated" [N] (flags
// as uint8 0/1) and, when `out` has one, "final_obs" [N][obs_dim]. N is out.reward.size.
std::vector<NamedTensorView> step_tensor_views(const ScenarioSpec& spec, const StepViews& out);
// The actions step() reads: int32 [N] for a discrete scenario, float32 [N][action_dim] for a continuous one.
TensorView action_tensor_view(const ScenarioSpec& spec, const ActionView& actions);
// The engine's own state: "states" [N][state_dim], "params" [N][param_count] (float32, or float64 where
// the scenario keeps its parameters so), "episode_steps" [N] (int32),
// "episode_returns" [N] and "rng_offsets" [N] (uint64). Valid while the engine lives.
std::vector<NamedTensorView> engine_state_views(Engine& engine);

}  // namespace surge
