#pragma once
// What the interop tests export: the buffers one engine step reads and writes, the engine's own state
// and a network's parameters and gradients, as named views.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/param_table.hpp"
#include "rl/rollout.hpp"
#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/tensor_view.hpp"

namespace surge::testing {

// Every view a discrete engine's user can export: step outputs, actions, engine state, rollout fields,
// parameters and gradients, with prefixed names.
inline constexpr std::size_t kStepAndEngineViews = 5 + 1 + 5;
inline constexpr std::size_t kRolloutViews = 11;
inline std::vector<NamedTensorView> every_exported_view(Engine& engine, const StepBuffers& step,
                                                        const rl::RolloutStorage& rollout, const rl::ParamTable& table,
                                                        Span<float> params, Span<float> grads) {
  std::vector<NamedTensorView> views;
  const ScenarioSpec& spec = engine.spec();
  for (const NamedTensorView& field : rollout.tensor_views()) views.push_back({"rollout." + field.name, field.view});
  for (const NamedTensorView& field : step_tensor_views(spec, step.views()))
    views.push_back({"step." + field.name, field.view});
  views.push_back({"actions", action_tensor_view(spec, step.action_view())});
  for (const NamedTensorView& field : engine_state_views(engine)) views.push_back({"engine." + field.name, field.view});
  for (const NamedTensorView& field : table.tensor_views(params)) views.push_back({"params." + field.name, field.view});
  for (const NamedTensorView& field : table.tensor_views(grads)) views.push_back({"grads." + field.name, field.view});
  return views;
}

// A CartPole engine with its step buffers, a rollout of 3 steps and a default network's parameters and
// gradients: all that every_exported_view() exports, owned together.
struct ExportedFields {
  std::unique_ptr<Engine> engine;
  StepBuffers step;
  rl::RolloutStorage rollout;
  rl::ActorCritic net;
  DeviceBuffer<float> params, grads;  // [net.table().total()]

  ExportedFields(Device device, std::int64_t n, std::uint64_t seed)
      : engine(make_engine("cartpole", device, n, seed)),
        step(device, n, engine->spec().obs_dim),
        rollout(device, 3, n, engine->spec().obs_dim),
        net(engine->spec().obs_dim, engine->spec().num_actions, rl::NetworkConfig{}),
        params(device, net.table().total()),
        grads(device, net.table().total()) {}
  std::vector<NamedTensorView> views() {
    return every_exported_view(*engine, step, rollout, net.table(), params.span(), grads.span());
  }
  // How many views() returns.
  std::size_t view_count() const {
    return kStepAndEngineViews + kRolloutViews + 2 * static_cast<std::size_t>(net.table().count());
  }
};

}  // namespace surge::testing
