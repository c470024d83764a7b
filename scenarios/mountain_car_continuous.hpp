#pragma once
// MountainCarContinuous-v0, exactly as Gymnasium defines it
// (gymnasium/envs/classic_control/continuous_mountain_car.py): the force is the action clipped to
// [-1, 1]; velocity += force * power - gravity * cos(3 * position), clipped to +-0.07; position +=
// velocity, clipped to [-1.2, 0.6]; at the left wall a car still moving left stops dead. The episode
// terminates when position >= 0.45 and velocity >= 0. The reward is 100 on reaching the goal, minus
// 0.1 * action^2 on the action as given, before clipping. The initial position is drawn from
// U(-0.6, -0.4) with zero velocity; the time limit is 999 steps. Float32.
#include "scenarios/mountain_car_valley.hpp"
#include "sim/scenario.hpp"

namespace surge {

struct MountainCarContinuous {
  static constexpr const char* kName = "mountain_car_continuous";
  static constexpr const char* kGymId = "MountainCarContinuous-v0";
  static constexpr int kObsDim = 2;
  static constexpr int kMaxEpisodeSteps = 999;
  static constexpr double kRewardThreshold = 90.0;  // Gymnasium's reward_threshold
  static constexpr ActionKind kActionKind = ActionKind::Continuous;
  static constexpr int kActionDim = 1;  // the engine's force, as a fraction of the full power
  static constexpr std::array<float, 1> kActionLow = {-1.0f};
  static constexpr std::array<float, 1> kActionHigh = {1.0f};

  static constexpr float kMaxForce = 1.0f;
  static constexpr float kGoalPosition = 0.45f;
  static constexpr float kGoalReward = 100.0f;
  static constexpr float kActionCost = 0.1f;

  using State = mountain_car_valley::State;
  static constexpr auto kStateNames = mountain_car_valley::kStateNames;
  static constexpr auto kObsNames = kStateNames;  // the observation is the state

  SURGE_SCENARIO_PARAMS(float,                    // (name, default, smallest sensible value)
                        (power, 0.0015, 0.0),     // acceleration per step at full force
                        (gravity, 0.0025, 0.0));  // scale of the slope's pull, -gravity * cos(3 * position)

  struct Action {
    float v[1];
  };

  SURGE_HD_INLINE static void reset(State& s, const Params&, Rng& rng) { mountain_car_valley::reset(s, rng); }

  SURGE_HD_INLINE static StepResult step(State& s, const Params& p, const Action& action) {
    const float force = fminf(fmaxf(action.v[0], -kMaxForce), kMaxForce);
    mountain_car_valley::move(s, force * p.power, p.gravity);
    const bool terminated = mountain_car_valley::reached(s, kGoalPosition);
    const float reward = (terminated ? kGoalReward : 0.0f) - kActionCost * action.v[0] * action.v[0];
    return {reward, terminated};
  }

  SURGE_HD_INLINE static void observe(const State& s, float* obs) { mountain_car_valley::observe(s, obs); }
};

}  // namespace surge
