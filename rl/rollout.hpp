#pragma once
// Rollout storage, allocated once and laid out as DESIGN.md says; the engine writes its step outputs
// straight into these slices.
#include <cstdint>
#include <vector>

#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/tensor_view.hpp"

namespace surge::rl {

class RolloutStorage {
 public:
  // action_dim 0: discrete actions (int32 [T][N]); otherwise continuous actions (float [T][N][action_dim]).
  RolloutStorage(Device device, std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim = 0);

  std::int64_t num_steps() const { return num_steps_; }
  std::int64_t num_envs() const { return num_envs_; }
  int obs_dim() const { return obs_dim_; }
  int action_dim() const { return action_dim_; }
  bool continuous() const { return action_dim_ > 0; }

  // Row t of each field (t in [0, T] for obs and value, [0, T) for the rest).
  float* obs(std::int64_t t) const { return row(b_.obs, t, obs_dim_); }
  std::int32_t* actions(std::int64_t t) const { return row(b_.actions, t); }  // discrete
  // Continuous: the policy's samples before clipping to the action bounds, which the log-probabilities
  // are of; the environment received them clipped.
  float* continuous_actions(std::int64_t t) const { return row(b_.continuous_actions, t, action_dim_); }
  float* logprob(std::int64_t t) const { return row(b_.logprob, t); }
  float* value(std::int64_t t) const { return row(b_.value, t); }
  float* reward(std::int64_t t) const { return row(b_.reward, t); }
  std::uint8_t* terminated(std::int64_t t) const { return row(b_.terminated, t); }
  std::uint8_t* truncated(std::int64_t t) const { return row(b_.truncated, t); }
  float* advantage(std::int64_t t) const { return row(b_.advantage, t); }
  float* returns(std::int64_t t) const { return row(b_.returns, t); }
  float* final_value(std::int64_t t) const { return row(b_.final_value, t); }
  float* final_obs() const { return arena_.data(b_.final_obs); }

  // Where engine.step() writes step t: obs[t+1], reward[t], flags[t], and the final observations.
  StepViews step_views(std::int64_t t) const;
  // The policy's actions of step t, as the engine reads them (discrete only: continuous ones reach the
  // engine clipped, from the trainer's own buffer).
  ActionView action_view(std::int64_t t) const;

  std::size_t device_bytes() const { return arena_.device_bytes(); }
  // Every field whole, shaped as its table says, for foreign tensor libraries (interop/): "obs", "actions",
  // "logprob", "value", "reward", "terminated", "truncated", "adv", "ret", "final_obs", "final_value".
  std::vector<NamedTensorView> tensor_views() const { return arena_.tensor_views("rollout."); }

  // The buffers of a rollout of this shape, without allocating them (for memory plans).
  static BufferTable table(std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim = 0);

 private:
  struct Buffers {
    Slot<float> obs, continuous_actions, logprob, value, reward, advantage, returns, final_obs, final_value;
    Slot<std::int32_t> actions;
    Slot<std::uint8_t> terminated, truncated;
  };
  static BufferTable table(std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim, Buffers& b);
  template <class T>
  T* row(Slot<T> slot, std::int64_t t, std::int64_t width = 1) const {
    T* base = arena_.data(slot);
    return base ? base + t * num_envs_ * width : nullptr;
  }

  Device device_;
  std::int64_t num_steps_, num_envs_;
  int obs_dim_, action_dim_;
  Buffers b_;
  BufferArena arena_;
};

}  // namespace surge::rl
