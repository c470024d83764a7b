#include "interop/python/src/vector_engine.hpp"

#include <algorithm>

#include "interop/python/src/episode_book.hpp"
#include "sim/engine_views.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/physics_settings.hpp"
#include "sim/stream.hpp"

namespace surge::python {

const ScenarioSpec& find_scenario(const std::string& name) {
  std::string known;
  for (const std::string& scenario : scenario_names()) {
    const ScenarioSpec& spec = scenario_spec(scenario);
    if (spec.name == name || spec.gym_id == name) return spec;
    known += (known.empty() ? "" : ", ") + spec.name + " (" + spec.gym_id + ")";
  }
  throw InputError("unknown scenario '" + name + "': known scenarios are " + known);
}

struct VectorEngine::Held {
  Held(Device device, std::int64_t n, int obs_dim)
      : stream(device),
        obs(device, n * obs_dim),
        final_obs(device, n * obs_dim),
        reward(device, n),
        episode_return(device, n),
        running_return(device, n),
        terminated(device, n),
        truncated(device, n),
        ended(device, n),
        episode_length(device, n),
        running_length(device, n) {}
  ~Held() { stream.synchronize_noexcept(); }

  Stream stream;
  PhysicsConfig physics;
  bool fresh = true;  // made and not stepped or reset since: reset() leaves it at the seed's first states
  std::unique_ptr<Engine> engine;
  DeviceBuffer<float> obs, final_obs;                          // [N][obs_dim]
  DeviceBuffer<float> reward, episode_return, running_return;  // [N]
  DeviceBuffer<std::uint8_t> terminated, truncated, ended;     // [N]
  DeviceBuffer<std::int32_t> episode_length, running_length;   // [N]
};

VectorEngine::VectorEngine(const std::string& scenario, std::int64_t num_envs, const std::string& device,
                           std::uint64_t seed, const std::string& physics)
    : spec_(&find_scenario(scenario)), num_envs_(num_envs) {
  if (num_envs < 1)
    throw InputError("num_envs " + std::to_string(num_envs) + " is not a positive count of environments");
  const PhysicsConfig config =
      resolve_physics(*spec_, physics.empty() ? PhysicsSettings{} : parse_physics_option(physics));
  const Device chosen = choose_device(device).device;
  held_ = std::make_shared<Held>(chosen, num_envs, spec_->obs_dim);
  held_->physics = config;
  held_->engine = make_engine(spec_->name, chosen, num_envs, seed, config);
  reset(std::nullopt);
  held_->fresh = true;  // the first reset() keeps the seed's first states
}

VectorEngine::Held& VectorEngine::held() const {
  if (!held_) throw InputError("the environment is closed; make a new one with surge.make");
  return *held_;
}

Device VectorEngine::device() const { return held().engine->device(); }
std::uint64_t VectorEngine::seed() const { return held().engine->seed(); }

void VectorEngine::reset(std::optional<std::uint64_t> seed) {
  Held& h = held();
  if (seed) {
    h.stream.synchronize();
    h.engine = make_engine(spec_->name, h.engine->device(), num_envs_, *seed, h.physics);
  } else if (!h.fresh) {
    h.engine->reset(h.stream);  // a new start from each env's stream; a fresh engine is at its first
  }
  for (auto* buffer : {&h.final_obs, &h.reward, &h.episode_return, &h.running_return})
    zero_bytes(buffer->data(), buffer->device(), buffer->size() * sizeof(float), h.stream);
  for (auto* buffer : {&h.terminated, &h.truncated, &h.ended})
    zero_bytes(buffer->data(), buffer->device(), buffer->size(), h.stream);
  for (auto* buffer : {&h.episode_length, &h.running_length})
    zero_bytes(buffer->data(), buffer->device(), buffer->size() * sizeof(std::int32_t), h.stream);
  observe();
  h.fresh = false;  // a second reset() draws new states, as Gymnasium's does
}

TensorSpec VectorEngine::action_spec() const {
  if (spec_->action_kind == ActionKind::Discrete) return {DType::Int32, device(), {num_envs_}};
  return {DType::Float32, device(), {num_envs_, spec_->action_dim}};
}

int VectorEngine::step(const TensorView& actions) {
  Held& h = held();
  ActionView action_view;
  if (spec_->action_kind == ActionKind::Discrete) {
    action_view.discrete = actions.span<const std::int32_t>();
    // On the CPU the actions are checked as Gymnasium checks them; on CUDA reading them back would cost a
    // copy to the host at every step (docs/python.md).
    if (actions.device.is_cpu()) {
      const std::int32_t* values = action_view.discrete.data;
      for (std::int64_t i = 0; i < num_envs_; ++i)
        if (values[i] < 0 || values[i] >= spec_->num_actions)
          throw InputError("action " + std::to_string(values[i]) + " of environment " + std::to_string(i) +
                           " is not one of " + spec_->name + "'s actions 0.." + std::to_string(spec_->num_actions - 1));
    }
  } else
    action_view.continuous = actions.span<const float>();
  h.fresh = false;
  h.engine->step(action_view,
                 StepViews{h.obs.span(), h.reward.span(), h.terminated.span(), h.truncated.span(), h.final_obs.span()},
                 h.stream);
  book_episodes({h.reward.cspan(), h.terminated.cspan(), h.truncated.cspan(), h.running_return.span(),
                 h.running_length.span(), h.episode_return.span(), h.episode_length.span(), h.ended.span()},
                h.stream);
  h.stream.synchronize();  // Python's consumers read on their own streams
  if (!h.ended.device().is_cpu()) return -1;
  const std::uint8_t* ended = h.ended.data();
  return std::any_of(ended, ended + num_envs_, [](std::uint8_t flag) { return flag != 0; }) ? 1 : 0;
}

std::vector<NamedTensorView> VectorEngine::output_views() const {
  const Held& h = held();
  std::vector<NamedTensorView> views = step_tensor_views(
      *spec_, {h.obs.span(), h.reward.span(), h.terminated.span(), h.truncated.span(), h.final_obs.span()});
  views.push_back({"ended", TensorView::of(h.ended.span(), {num_envs_})});
  views.push_back({"episode_return", TensorView::of(h.episode_return.span(), {num_envs_})});
  views.push_back({"episode_length", TensorView::of(h.episode_length.span(), {num_envs_})});
  return views;
}

ViewOwner VectorEngine::owner() const { return held_; }

std::vector<NamedTensorView> VectorEngine::state_views() const {
  Held& h = held();
  h.stream.synchronize();
  std::vector<NamedTensorView> views = engine_state_views(*h.engine);
  views.push_back({"running_return", TensorView::of(h.running_return.span(), {num_envs_})});
  views.push_back({"running_length", TensorView::of(h.running_length.span(), {num_envs_})});
  return views;
}

void VectorEngine::observe() {
  Held& h = held();
  h.fresh = false;  // the states were written: a reset must draw new ones
  h.engine->observe(h.obs.span(), h.stream);
  h.stream.synchronize();
}

void* VectorEngine::stream_handle() const { return held().stream.native_handle(); }

void VectorEngine::close() {
  if (held_) held_->stream.synchronize();
  held_.reset();
}

}  // namespace surge::python
