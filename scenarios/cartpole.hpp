#pragma once
// CartPole-v1, exactly as Gymnasium defines it (gymnasium/envs/classic_control/cartpole.py):
// Euler integration with tau = 0.02, termination when |x| > 2.4 or |theta| > 12 degrees (strict
// comparisons), a reward of 1 on every step including the terminating one, initial state drawn from
// U(-0.05, 0.05) in every coordinate, and a time limit of 500 steps. Arithmetic is float32.
#include "sim/scenario.hpp"

namespace surge {

struct CartPole {
  static constexpr const char* kName = "cartpole";
  static constexpr const char* kGymId = "CartPole-v1";
  static constexpr int kObsDim = 4;
  static constexpr int kMaxEpisodeSteps = 500;
  static constexpr double kRewardThreshold = 475.0;  // Gymnasium's reward_threshold
  static constexpr ActionKind kActionKind = ActionKind::Discrete;
  static constexpr int kNumActions = 2;  // 0 pushes left, 1 pushes right

  static constexpr float kThetaThreshold = 12.0f * 2.0f * 3.14159265358979323846f / 360.0f;
  static constexpr float kXThreshold = 2.4f;

  SURGE_SCENARIO_STATE(x, x_dot, theta, theta_dot);
  static constexpr auto kObsNames = kStateNames;  // the observation is the state

  SURGE_SCENARIO_PARAMS(float,  // (name, default, smallest sensible value)
                        (gravity, 9.8, 0.0), (masscart, 1.0, 1e-6), (masspole, 0.1, 1e-6),
                        (length, 0.5, 1e-6),  // half the pole's length
                        (force_mag, 10.0, 0.0), (tau, 0.02, 1e-6));

  using Action = std::int32_t;

  // A reset draws four words, one Philox block, from any source with Rng's uniform(low, high): the CPU
  // rollout gives it words it drew ahead for many environments side by side.
  static constexpr int kResetWords = 4;
  template <class Random>
  SURGE_HD_INLINE static void reset(State& s, const Params&, Random& rng) {
    s.x = rng.uniform(-0.05f, 0.05f);
    s.x_dot = rng.uniform(-0.05f, 0.05f);
    s.theta = rng.uniform(-0.05f, 0.05f);
    s.theta_dot = rng.uniform(-0.05f, 0.05f);
  }

  // The one angle whose sine and cosine a step takes. SmallAngleTrig (|theta| <= 0.25) covers it always, but
  // for a state set from outside: |theta| is at most 12 degrees (0.2094) after any step that does not end the
  // episode (a step that ends it resets), and 0.05 after a reset.
  SURGE_HD_INLINE static float step_angle(const State& s) { return s.theta; }

  template <class Trig = LaneTrig>
  SURGE_HD_INLINE static StepResult step(State& s, const Params& p, Action action, Trig trig = {}) {
    const float total_mass = p.masspole + p.masscart;
    const float polemass_length = p.masspole * p.length;
    const float force = action == 1 ? p.force_mag : -p.force_mag;
    float sintheta, costheta;
    trig.sincos(s.theta, sintheta, costheta);
    const float temp = (force + polemass_length * s.theta_dot * s.theta_dot * sintheta) / total_mass;
    const float thetaacc = (p.gravity * sintheta - costheta * temp) /
                           (p.length * (4.0f / 3.0f - p.masspole * costheta * costheta / total_mass));
    const float xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    s.x = s.x + p.tau * s.x_dot;
    s.x_dot = s.x_dot + p.tau * xacc;
    s.theta = s.theta + p.tau * s.theta_dot;
    s.theta_dot = s.theta_dot + p.tau * thetaacc;
    const bool terminated =
        s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold || s.theta > kThetaThreshold;
    return {1.0f, terminated};
  }

  SURGE_HD_INLINE static void observe(const State& s, float* obs) {
    obs[0] = s.x;
    obs[1] = s.x_dot;
    obs[2] = s.theta;
    obs[3] = s.theta_dot;
  }
};

}  // namespace surge
