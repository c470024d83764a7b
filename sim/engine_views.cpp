#include "sim/engine_views.hpp"

#include <string>

namespace surge {

namespace {

void check_size(std::int64_t size, std::int64_t expected, const char* name) {
  SURGE_CHECK(size == expected,
              std::string(name) + " holds " + std::to_string(size) + " elements, not " + std::to_string(expected));
}

}  // namespace

std::vector<NamedTensorView> step_tensor_views(const ScenarioSpec& spec, const StepViews& out) {
  const std::int64_t n = out.reward.size;
  const std::int64_t obs_dim = spec.obs_dim;
  check_size(out.obs.size, n * obs_dim, "step obs");
  check_size(out.terminated.size, n, "step terminated");
  check_size(out.truncated.size, n, "step truncated");
  std::vector<NamedTensorView> views = {{"obs", TensorView::of(out.obs, {n, obs_dim})},
                                        {"reward", TensorView::of(out.reward, {n})},
                                        {"terminated", TensorView::of(out.terminated, {n})},
                                        {"truncated", TensorView::of(out.truncated, {n})}};
  if (!out.final_obs.empty()) {
    check_size(out.final_obs.size, n * obs_dim, "step final_obs");
    views.push_back({"final_obs", TensorView::of(out.final_obs, {n, obs_dim})});
  }
  return views;
}

TensorView action_tensor_view(const ScenarioSpec& spec, const ActionView& actions) {
  if (spec.action_kind == ActionKind::Discrete) return TensorView::of(actions.discrete, {actions.discrete.size});
  const std::int64_t dim = spec.action_dim;
  SURGE_CHECK(dim > 0 && actions.continuous.size % dim == 0, "continuous actions are not [N][action_dim]");
  return TensorView::of(actions.continuous, {actions.continuous.size / dim, dim});
}

std::vector<NamedTensorView> engine_state_views(Engine& engine) {
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t n = engine.num_envs();
  return {{"states", TensorView::of(engine.states(), {n, static_cast<std::int64_t>(spec.state_dim)})},
          {"params", engine.params()},
          {"episode_steps", TensorView::of(engine.episode_steps(), {n})},
          {"episode_returns", TensorView::of(engine.episode_returns(), {n})},
          {"rng_offsets", TensorView::of(engine.rng_offsets(), {n})}};
}

}  // namespace surge
