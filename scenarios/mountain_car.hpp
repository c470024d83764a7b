#pragma once
// MountainCar-v0, exactly as Gymnasium defines it (gymnasium/envs/classic_control/mountain_car.py):
// velocity += (action - 1) * force - gravity * cos(3 * position), clipped to +-0.07; position += velocity,
// clipped to [-1.2, 0.6]; at the left wall a car still moving left stops dead. The episode terminates
// when position >= 0.5 and velocity >= 0. Every step, the last included, rewards -1. The initial
// position is drawn from U(-0.6, -0.4) with zero velocity; the time limit is 200 steps. Float32.
#include "scenarios/mountain_car_valley.hpp"
#include "sim/scenario.hpp"

namespace surge {

struct MountainCar {
  static constexpr const char* kName = "mountain_car";
  static constexpr const char* kGymId = "MountainCar-v0";
  static constexpr int kObsDim = 2;
  static constexpr int kMaxEpisodeSteps = 200;
  static constexpr double kRewardThreshold = -110.0;  // Gymnasium's reward_threshold
  static constexpr ActionKind kActionKind = ActionKind::Discrete;
  static constexpr int kNumActions = 3;  // 0 accelerates left, 1 does nothing, 2 accelerates right

  static constexpr float kGoalPosition = 0.5f;

  using State = mountain_car_valley::State;
  static constexpr auto kStateNames = mountain_car_valley::kStateNames;
  static constexpr auto kObsNames = kStateNames;  // the observation is the state

  SURGE_SCENARIO_PARAMS(float,                    // (name, default, smallest sensible value)
                        (force, 0.001, 0.0),      // acceleration the engine gives per step
                        (gravity, 0.0025, 0.0));  // scale of the slope's pull, -gravity * cos(3 * position)

  using Action = std::int32_t;

  SURGE_HD_INLINE static void reset(State& s, const Params&, Rng& rng) { mountain_car_valley::reset(s, rng); }

  SURGE_HD_INLINE static StepResult step(State& s, const Params& p, Action action) {
    mountain_car_valley::move(s, static_cast<float>(action - 1) * p.force, p.gravity);
    return {-1.0f, mountain_car_valley::reached(s, kGoalPosition)};
  }

  SURGE_HD_INLINE static void observe(const State& s, float* obs) { mountain_car_valley::observe(s, obs); }
};

}  // namespace surge
