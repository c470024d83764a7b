#pragma once
// What the interop tests export: the buffers one engine step reads and writes, the engine's own state
// and a network's parameters and gradients, as named views.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/param_table.hpp"
#include "rl/rollout.hpp"
#include "sim/engine.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/tensor_view.hpp"

namespace surge::testing {

struct StepBuffers {
  DeviceBuffer<std::int32_t> actions;               // [N] (discrete scenarios)
  DeviceBuffer<float> obs, final_obs;               // [N][obs_dim]
  DeviceBuffer<float> reward;                       // [N]
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

// Every view a discrete engine's user can export: step outputs, actions, engine state, rollout fields,
// parameters and gradients, with prefixed names.
inline constexpr std::size_t kStepAndEngineViews = 5 + 1 + 5;
inline constexpr std::size_t kRolloutViews = 11;
inline std::vector<NamedTensorView> every_exported_view(Engine& engine, const StepBuffers& step,
                                                        const rl::RolloutStorage& rollout,
                                                        const rl::ParamTable& table, Span<float> params,
                                                        Span<float> grads) {
  std::vector<NamedTensorView> views;
  const ScenarioSpec& spec = engine.spec();
  for (const NamedTensorView& field : rollout.tensor_views()) views.push_back({"rollout." + field.name, field.view});
  for (const NamedTensorView& field : step_tensor_views(spec, step.views())) views.push_back({"step." + field.name, field.view});
  views.push_back({"actions", action_tensor_view(spec, step.action_view())});
  for (const NamedTensorView& field : engine_state_views(engine)) views.push_back({"engine." + field.name, field.view});
  for (const NamedTensorView& field : table.tensor_views(params)) views.push_back({"params." + field.name, field.view});
  for (const NamedTensorView& field : table.tensor_views(grads)) views.push_back({"grads." + field.name, field.view});
  return views;
}

}  // namespace surge::testing
