#pragma once
// Rollout storage, allocated once and laid out as DESIGN.md says; the engine writes its step outputs
// straight into these slices.
#include <cstdint>
#include <vector>

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
  float* obs(std::int64_t t) const { return obs_.data() + t * num_envs_ * obs_dim_; }
  std::int32_t* actions(std::int64_t t) const { return actions_.data() + t * num_envs_; }  // discrete
  // Continuous: the policy's samples before clipping to the action bounds, which the log-probabilities
  // are of; the environment received them clipped.
  float* continuous_actions(std::int64_t t) const { return continuous_actions_.data() + t * num_envs_ * action_dim_; }
  float* logprob(std::int64_t t) const { return logprob_.data() + t * num_envs_; }
  float* value(std::int64_t t) const { return value_.data() + t * num_envs_; }
  float* reward(std::int64_t t) const { return reward_.data() + t * num_envs_; }
  std::uint8_t* terminated(std::int64_t t) const { return terminated_.data() + t * num_envs_; }
  std::uint8_t* truncated(std::int64_t t) const { return truncated_.data() + t * num_envs_; }
  float* advantage(std::int64_t t) const { return advantage_.data() + t * num_envs_; }
  float* returns(std::int64_t t) const { return returns_.data() + t * num_envs_; }
  float* final_value(std::int64_t t) const { return final_value_.data() + t * num_envs_; }
  float* final_obs() const { return final_obs_.data(); }

  // Where engine.step() writes step t: obs[t+1], reward[t], flags[t], and the final observations.
  StepViews step_views(std::int64_t t) const;
  // The policy's actions of step t, as the engine reads them (discrete only: continuous ones reach the
  // engine clipped, from the trainer's own buffer).
  ActionView action_view(std::int64_t t) const;

  std::size_t device_bytes() const;

  // Every field whole, shaped as below, for foreign tensor libraries (interop/): "obs", "actions",
  // "logprob", "value", "reward", "terminated", "truncated", "adv", "ret", "final_obs", "final_value".
  std::vector<NamedTensorView> tensor_views() const;

  // Each buffer's name, shape and size, for memory plans.
  struct Buffer {
    const char* name;
    const char* shape;
    std::int64_t elements;
    std::size_t element_bytes;
  };
  static std::vector<Buffer> layout(std::int64_t num_steps, std::int64_t num_envs, int obs_dim, int action_dim = 0);

 private:
  Device device_;
  std::int64_t num_steps_, num_envs_;
  int obs_dim_, action_dim_;
  DeviceBuffer<float> obs_;                // [T+1][N][obs_dim]
  DeviceBuffer<std::int32_t> actions_;     // [T][N] when discrete, else empty
  DeviceBuffer<float> continuous_actions_; // [T][N][action_dim] when continuous, else empty
  DeviceBuffer<float> logprob_;            // [T][N]
  DeviceBuffer<float> value_;              // [T+1][N]
  DeviceBuffer<float> reward_;             // [T][N]
  DeviceBuffer<std::uint8_t> terminated_;  // [T][N]
  DeviceBuffer<std::uint8_t> truncated_;   // [T][N]
  DeviceBuffer<float> advantage_;          // [T][N]
  DeviceBuffer<float> returns_;            // [T][N]
  // Beyond DESIGN.md's list, for time-limit bootstrapping: the engine writes the final observation of
  // each episode that ends at a step into final_obs, and the critic's value of it goes to final_value.
  DeviceBuffer<float> final_obs_;          // [N][obs_dim], rewritten every step
  DeviceBuffer<float> final_value_;        // [T][N]
};

}  // namespace surge::rl
