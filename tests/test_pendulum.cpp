// Pendulum-v1 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step),
// the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenarios/pendulum.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

bool is_reset_obs(const float* obs) {
  return std::abs(obs[0] * obs[0] + obs[1] * obs[1] - 1.0f) < 1e-5f && obs[2] >= -1.0f && obs[2] <= 1.0f;
}

// Pushes along the angular velocity, with a torque beyond the bounds that the scenario clips.
void swing(const float* obs, float* action) { action[0] = obs[2] >= 0.0f ? 3.0f : -3.0f; }

}  // namespace

TEST_CASE("pendulum matches Gymnasium's transitions", "[pendulum]") {
  const GoldenSet golden = load_golden<Pendulum>();
  check_golden<Pendulum>(golden);
  int beyond_bounds = 0, beyond_pi = 0;
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    beyond_bounds += std::abs(golden.action[row]) > 2.0;
    beyond_pi += std::abs(golden.state[row * 2]) > kPi;
  }
  CHECK(beyond_bounds > 100);  // the torque clip is exercised
  CHECK(beyond_pi > 100);      // so is angle_normalize's wrap in the cost
}

TEST_CASE("pendulum's angle_normalize wraps as Python's floor modulo does", "[pendulum]") {
  CHECK(Pendulum::angle_normalize(0.5f) == Approx(0.5f));
  CHECK(Pendulum::angle_normalize(-0.5f) == Approx(-0.5f));
  CHECK(Pendulum::angle_normalize(4.0f) == Approx(4.0 - 2 * kPi).margin(1e-6));
  CHECK(Pendulum::angle_normalize(-4.0f) == Approx(-4.0 + 2 * kPi).margin(1e-6));
  CHECK(Pendulum::angle_normalize(-40.0f) == Approx(-40.0 + 6 * 2 * kPi).margin(1e-5));
  CHECK(Pendulum::angle_normalize(40.0f) == Approx(40.0 - 6 * 2 * kPi).margin(1e-5));
}

TEST_CASE("pendulum starts with theta in U(-pi, pi) and theta_dot in U(-1, 1)", "[pendulum]") {
  check_resets("pendulum", 6, {{-Pendulum::kPi, Pendulum::kPi}, {-1.0f, 1.0f}});  // float32 pi bounds the draws
}

TEST_CASE("pendulum never terminates and truncates at exactly 200 steps", "[pendulum]") {
  const AuditedRun swinging = run_audited("pendulum", 32, 7, 450, swing, is_reset_obs);
  check_all_truncated(swinging.audit, 2 * 32, 200);
  // Each step costs at most pi^2 + 0.1 * 8^2 + 0.001 * 2^2 (the clipped torque).
  const float worst_reward = -static_cast<float>(kPi * kPi + 6.4 + 0.004);
  for (float reward : swinging.run.reward) {
    REQUIRE(reward <= 0.0f);
    REQUIRE(reward >= worst_reward);
  }
  // The final observation of a truncated episode is a real one (mid-swing), not a reset one.
  int moving = 0;
  for (std::int64_t slot = 0; slot < swinging.run.steps * swinging.run.envs; ++slot)
    if (swinging.run.truncated[slot]) moving += std::abs(swinging.run.final_obs[slot * 3 + 2]) > 1.0f;
  CHECK(moving > 32);
}

TEST_CASE("pendulum randomises its physics per env within the ranges", "[pendulum]") {
  check_randomized_params(
      "pendulum", {{"gravity", 8.0, 12.0}, {"mass", 0.5, 1.5}, {"length", 0.5, 1.5}, {"dt", 0.04, 0.06}}, swing, 200);
  check_rejects_bad_physics("pendulum", "mass", -1.0);
}
