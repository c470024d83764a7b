#pragma once
// The valley both MountainCar tasks share (Gymnasium's mountain_car.py and continuous_mountain_car.py):
// its bounds, the slope's pull, the wall at the left, the start, and one step of the car's motion. The
// two tasks differ only in how an action becomes a push, in the goal and in the reward.
#include "sim/scenario.hpp"

namespace surge::mountain_car_valley {

inline constexpr float kMinPosition = -1.2f;
inline constexpr float kMaxPosition = 0.6f;
inline constexpr float kMaxSpeed = 0.07f;
inline constexpr float kGoalVelocity = 0.0f;

SURGE_SCENARIO_STATE(position, velocity);

// Position from U(-0.6, -0.4), at rest.
SURGE_HD_INLINE void reset(State& s, Rng& rng) {
  s.position = rng.uniform(-0.6f, -0.4f);
  s.velocity = 0.0f;
}

// velocity += push - gravity * cos(3 * position), clipped to +-kMaxSpeed; position += velocity, clipped
// to the valley; at the left wall a car still moving left stops dead.
SURGE_HD_INLINE void move(State& s, float push, float gravity) {
  float velocity = s.velocity + push - gravity * lane_cosf(3.0f * s.position);
  velocity = fminf(fmaxf(velocity, -kMaxSpeed), kMaxSpeed);
  float position = s.position + velocity;
  position = fminf(fmaxf(position, kMinPosition), kMaxPosition);
  if (position == kMinPosition && velocity < 0.0f) velocity = 0.0f;
  s.position = position;
  s.velocity = velocity;
}

SURGE_HD_INLINE bool reached(const State& s, float goal_position) {
  return s.position >= goal_position && s.velocity >= kGoalVelocity;
}

SURGE_HD_INLINE void observe(const State& s, float* obs) {
  obs[0] = s.position;
  obs[1] = s.velocity;
}

}  // namespace surge::mountain_car_valley
