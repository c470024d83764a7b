#pragma once
// What a Python vector environment holds: an engine, the buffers its step writes and the episode
// bookkeeping, owned together so that arrays handed to Python keep all of it alive. Nothing here
// knows Python; interop/python/src/module.cpp binds it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/tensor_view.hpp"

namespace surge::python {

// A scenario by Surge's name ("cartpole") or Gymnasium's id ("CartPole-v1"); throws InputError listing
// both kinds of name when neither matches.
const ScenarioSpec& find_scenario(const std::string& name);

class VectorEngine {
 public:
  // `physics` is the --physics option's text ("masspole=0.05:0.2,length=0.6"), checked as it checks it.
  VectorEngine(const std::string& scenario, std::int64_t num_envs, const std::string& device, std::uint64_t seed,
               const std::string& physics);

  const ScenarioSpec& spec() const { return *spec_; }
  Device device() const;
  std::int64_t num_envs() const { return num_envs_; }
  std::uint64_t seed() const;

  // Starts every environment afresh (with a new seed, the environments of that seed) and writes the
  // first observations into "obs".
  void reset(std::optional<std::uint64_t> seed);
  // What step() accepts: int32 [N] (discrete) or float32 [N][action_dim] (continuous), on the device.
  TensorSpec action_spec() const;
  // One step of every environment (same-step auto-reset) and the episode bookkeeping; the outputs are
  // complete when it returns. `actions` must meet action_spec(). Returns whether an episode ended, as
  // 1 or 0 on the CPU; -1 on CUDA, where finding out would cost a copy back (the caller assumes one did).
  int step(const TensorView& actions);

  // "obs", "reward", "terminated", "truncated", "final_obs", "ended", "episode_return", "episode_length":
  // the buffers every step overwrites, alive while owner() is held.
  std::vector<NamedTensorView> output_views() const;
  ViewOwner owner() const;
  // The engine's state ("states", "params", "episode_steps", "episode_returns", "rng_offsets") and the
  // bookkeeping's running sums ("running_return", "running_length"): valid until the next reset.
  std::vector<NamedTensorView> state_views() const;
  // Rewrites "obs" from the current states (after state_views() were written to).
  void observe();

  // The cudaStream_t Surge steps on (nullptr on the CPU): where a producer of actions must order its writes.
  void* stream_handle() const;

  void close();
  bool closed() const { return held_ == nullptr; }

 private:
  struct Held;
  Held& held() const;
  const ScenarioSpec* spec_;
  std::int64_t num_envs_;
  std::shared_ptr<Held> held_;
};

}  // namespace surge::python
