#pragma once
// Pendulum-v1, exactly as Gymnasium defines it (gymnasium/envs/classic_control/pendulum.py): the
// torque is clipped to [-2, 2]; the cost angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2 is
// taken on the state before the step and the clipped torque u, and the reward is its negative;
// theta_dot += (3 g / (2 l) sin(theta) + 3 / (m l^2) u) dt is clipped to +-8, then theta += theta_dot dt
// (theta itself is never wrapped). The pendulum never terminates; the time limit is 200 steps. The
// initial state is theta ~ U(-pi, pi), theta_dot ~ U(-1, 1). Float32.
#include "sim/scenario.hpp"

namespace surge {

struct Pendulum {
  static constexpr const char* kName = "pendulum";
  static constexpr const char* kGymId = "Pendulum-v1";
  static constexpr int kObsDim = 3;  // cos(theta), sin(theta), theta_dot
  static constexpr int kMaxEpisodeSteps = 200;
  static constexpr double kRewardThreshold = -250.0;  // Gymnasium has none; our bar for solved
  static constexpr ActionKind kActionKind = ActionKind::Continuous;
  static constexpr int kActionDim = 1;  // the torque
  static constexpr std::array<float, 1> kActionLow = {-2.0f};
  static constexpr std::array<float, 1> kActionHigh = {2.0f};

  static constexpr float kMaxTorque = 2.0f;
  static constexpr float kMaxSpeed = 8.0f;
  static constexpr float kPi = 3.14159265358979323846f;

  SURGE_SCENARIO_STATE(theta, theta_dot);
  static constexpr auto kObsNames = std::to_array<const char*>({"cos_theta", "sin_theta", "theta_dot"});

  SURGE_SCENARIO_PARAMS(float,  // (name, default, smallest sensible value): Gymnasium's g, m, l and dt
                        (gravity, 10.0, 0.0), (mass, 1.0, 1e-6), (length, 1.0, 1e-6), (dt, 0.05, 1e-6));

  struct Action {
    float v[1];
  };

  SURGE_HD_INLINE static void reset(State& s, const Params&, Rng& rng) {
    s.theta = rng.uniform(-kPi, kPi);
    s.theta_dot = rng.uniform(-1.0f, 1.0f);
  }

  // Into [-pi, pi) as Python's ((x + pi) % (2 pi)) - pi, whose % takes the sign of the divisor.
  SURGE_HD_INLINE static float angle_normalize(float x) {
    float wrapped = fmodf(x + kPi, 2.0f * kPi);
    if (wrapped < 0.0f) wrapped += 2.0f * kPi;
    return wrapped - kPi;
  }

  SURGE_HD_INLINE static StepResult step(State& s, const Params& p, const Action& action) {
    const float u = fminf(fmaxf(action.v[0], -kMaxTorque), kMaxTorque);
    const float angle = angle_normalize(s.theta);
    const float cost = angle * angle + 0.1f * s.theta_dot * s.theta_dot + 0.001f * u * u;
    float theta_dot =
        s.theta_dot +
        (3.0f * p.gravity / (2.0f * p.length) * lane_sinf(s.theta) + 3.0f / (p.mass * p.length * p.length) * u) * p.dt;
    theta_dot = fminf(fmaxf(theta_dot, -kMaxSpeed), kMaxSpeed);
    s.theta = s.theta + theta_dot * p.dt;
    s.theta_dot = theta_dot;
    return {-cost, false};
  }

  SURGE_HD_INLINE static void observe(const State& s, float* obs) {
    obs[0] = lane_cosf(s.theta);
    obs[1] = lane_sinf(s.theta);
    obs[2] = s.theta_dot;
  }
};

}  // namespace surge
