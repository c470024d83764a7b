#pragma once
// Acrobot-v1, exactly as Gymnasium defines it (gymnasium/envs/classic_control/acrobot.py): two links
// hanging from a pivot, the torque -1, 0 or +1 applied at the joint between them; the "book" dynamics
// advanced by one fourth-order Runge-Kutta step over dt = 0.2 with the torque held constant through
// it (Gymnasium integrates the state augmented by the torque, whose derivative is 0, and keeps only
// the final point). The angles are then wrapped into [-pi, pi] and the velocities clipped to +-4 pi
// and +-9 pi. The episode terminates when the free end rises above the pivot by more than one link,
// -cos(theta1) - cos(theta1 + theta2) > 1; the reward is -1, and 0 on the terminating step. All four
// state coordinates start in U(-0.1, 0.1); the time limit is 500 steps.
//
// The state is stored in float32, but the step is computed in double and the parameters are kept in
// double: with velocities up to 9 pi and dt = 0.2, float32 arithmetic through RK4 misses Gymnasium's
// float64 result by up to five times the golden tolerance (1e-5 + 1e-5 |ref|), and even in double
// arithmetic the parameters rounded to float32 (9.8 and 0.2 are not float32 numbers) put the fastest
// rows past it. With both in double only the float32 state's own rounding remains.
#include "sim/scenario.hpp"

namespace surge {

struct Acrobot {
  static constexpr const char* kName = "acrobot";
  static constexpr const char* kGymId = "Acrobot-v1";
  static constexpr int kObsDim = 6;  // cos theta1, sin theta1, cos theta2, sin theta2, dtheta1, dtheta2
  static constexpr int kMaxEpisodeSteps = 500;
  static constexpr double kRewardThreshold = -100.0;  // Gymnasium's reward_threshold
  static constexpr ActionKind kActionKind = ActionKind::Discrete;
  static constexpr int kNumActions = 3;  // torques -1, 0, +1

  static constexpr double kPi = 3.14159265358979323846;
  static constexpr double kMaxVelocity1 = 4.0 * kPi;
  static constexpr double kMaxVelocity2 = 9.0 * kPi;

  SURGE_SCENARIO_STATE(theta1, theta2, dtheta1, dtheta2);  // theta2 is relative to the first link
  static constexpr auto kObsNames =
      std::to_array<const char*>({"cos_theta1", "sin_theta1", "cos_theta2", "sin_theta2", "dtheta1", "dtheta2"});

  // In double (see above). Gymnasium's LINK_LENGTH_2 only draws the second link and so is not a parameter here.
  SURGE_SCENARIO_PARAMS(double,  // (name, default, smallest sensible value)
                        (link_length_1, 1.0, 0.0), (link_mass_1, 1.0, 1e-6), (link_mass_2, 1.0, 1e-6),
                        (link_com_pos_1, 0.5, 0.0),  // distance from a link's pivot to its centre of mass
                        (link_com_pos_2, 0.5, 0.0), (link_moi, 1.0, 1e-6),  // moment of inertia of either link
                        (gravity, 9.8, 0.0), (dt, 0.2, 1e-6));

  using Action = std::int32_t;

  SURGE_HD_INLINE static void reset(State& s, const Params&, Rng& rng) {
    s.theta1 = rng.uniform(-0.1f, 0.1f);
    s.theta2 = rng.uniform(-0.1f, 0.1f);
    s.dtheta1 = rng.uniform(-0.1f, 0.1f);
    s.dtheta2 = rng.uniform(-0.1f, 0.1f);
  }

  // The time derivative of (theta1, theta2, dtheta1, dtheta2) under `torque`: the "book" equations.
  SURGE_HD_INLINE static void derivative(const double s[4], double torque, const Params& p, double out[4]) {
    const double m1 = p.link_mass_1, m2 = p.link_mass_2, l1 = p.link_length_1;
    const double lc1 = p.link_com_pos_1, lc2 = p.link_com_pos_2, moi1 = p.link_moi, moi2 = p.link_moi, g = p.gravity;
    const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    const double d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0 * l1 * lc2 * cos(theta2)) + moi1 + moi2;
    const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos(theta2)) + moi2;
    const double phi2 = m2 * lc2 * g * cos(theta1 + theta2 - kPi / 2.0);
    const double phi1 = -m2 * l1 * lc2 * dtheta2 * dtheta2 * sin(theta2) -
                        2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2) +
                        (m1 * lc1 + m2 * l1) * g * cos(theta1 - kPi / 2.0) + phi2;
    const double ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1 * dtheta1 * sin(theta2) - phi2) /
                            (m2 * lc2 * lc2 + moi2 - d2 * d2 / d1);
    const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    out[0] = dtheta1;
    out[1] = dtheta2;
    out[2] = ddtheta1;
    out[3] = ddtheta2;
  }

  // Into [low, high] by whole turns, as Gymnasium's wrap() does by repeated subtraction; the number
  // of turns is computed rather than looped, so a wild input cannot stall a kernel.
  SURGE_HD_INLINE static double wrap(double x, double low, double high) {
    const double turn = high - low;
    if (x > high) x -= turn * ceil((x - high) / turn);
    if (x < low) x += turn * ceil((low - x) / turn);
    return x;
  }

  SURGE_HD_INLINE static StepResult step(State& s, const Params& p, Action action) {
    const double torque = static_cast<double>(action - 1);
    const double dt = p.dt, half_dt = dt / 2.0;
    const double y0[4] = {s.theta1, s.theta2, s.dtheta1, s.dtheta2};
    double k1[4], k2[4], k3[4], k4[4], y[4];
    derivative(y0, torque, p, k1);
    for (int j = 0; j < 4; ++j) y[j] = y0[j] + half_dt * k1[j];
    derivative(y, torque, p, k2);
    for (int j = 0; j < 4; ++j) y[j] = y0[j] + half_dt * k2[j];
    derivative(y, torque, p, k3);
    for (int j = 0; j < 4; ++j) y[j] = y0[j] + dt * k3[j];
    derivative(y, torque, p, k4);
    for (int j = 0; j < 4; ++j) y[j] = y0[j] + dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
    const double theta1 = wrap(y[0], -kPi, kPi);
    const double theta2 = wrap(y[1], -kPi, kPi);
    const double dtheta1 = fmin(fmax(y[2], -kMaxVelocity1), kMaxVelocity1);
    const double dtheta2 = fmin(fmax(y[3], -kMaxVelocity2), kMaxVelocity2);
    s.theta1 = static_cast<float>(theta1);
    s.theta2 = static_cast<float>(theta2);
    s.dtheta1 = static_cast<float>(dtheta1);
    s.dtheta2 = static_cast<float>(dtheta2);
    const bool terminated = -cos(theta1) - cos(theta2 + theta1) > 1.0;
    return {terminated ? 0.0f : -1.0f, terminated};
  }

  SURGE_HD_INLINE static void observe(const State& s, float* obs) {
    obs[0] = cosf(s.theta1);
    obs[1] = sinf(s.theta1);
    obs[2] = cosf(s.theta2);
    obs[3] = sinf(s.theta2);
    obs[4] = s.dtheta1;
    obs[5] = s.dtheta2;
  }
};

}  // namespace surge
