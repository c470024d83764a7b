// Pendulum-v1 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step),
// the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenarios/pendulum.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

const ScenarioSpec& spec() { return scenario_spec("pendulum"); }

bool is_reset_obs(const float* obs) {
  return std::abs(obs[0] * obs[0] + obs[1] * obs[1] - 1.0f) < 1e-5f && obs[2] >= -1.0f && obs[2] <= 1.0f;
}

// Pushes along the angular velocity, with a torque beyond the bounds that the scenario clips.
void swing(const float* obs, float* action) { action[0] = obs[2] >= 0.0f ? 3.0f : -3.0f; }

}  // namespace

TEST_CASE("pendulum matches Gymnasium's transitions", "[pendulum]") {
  const GoldenSet golden = load_golden(spec());
  compare_with_golden("pendulum SURGE_HD step", spec(), golden, step_golden_hd<Pendulum>(golden));
  compare_with_golden("pendulum CPU engine", spec(), golden, step_golden_engine("pendulum", golden));
  compare_with_golden("pendulum surge step", spec(), golden, step_golden_cli(spec(), golden));
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
  const std::vector<float> states = reset_states("pendulum", 20000, 6);
  check_uniform(states, 2, 0, -Pendulum::kPi, Pendulum::kPi, "theta");  // float32 pi bounds the draws
  check_uniform(states, 2, 1, -1.0, 1.0, "theta_dot");
}

TEST_CASE("pendulum never terminates and truncates at exactly 200 steps", "[pendulum]") {
  auto engine = make_engine("pendulum", Device::cpu(), 32, 7);
  const PolicyRun run = run_policy(*engine, 450, swing);
  const EpisodeAudit audit = audit_episodes(run, spec(), is_reset_obs);
  check_all_truncated(audit, 2 * 32, 200);
  // Each step costs at most pi^2 + 0.1 * 8^2 + 0.001 * 2^2 (the clipped torque).
  const float worst_reward = -static_cast<float>(kPi * kPi + 6.4 + 0.004);
  for (float reward : run.reward) {
    REQUIRE(reward <= 0.0f);
    REQUIRE(reward >= worst_reward);
  }
  // The final observation of a truncated episode is a real one (mid-swing), not a reset one.
  int moving = 0;
  for (std::int64_t slot = 0; slot < run.steps * run.envs; ++slot)
    if (run.truncated[slot]) moving += std::abs(run.final_obs[slot * 3 + 2]) > 1.0f;
  CHECK(moving > 32);
  check_episode_stats(*engine, audit);
}

TEST_CASE("pendulum randomises its physics per env within the ranges", "[pendulum]") {
  check_randomized_params("pendulum",
                          {{"gravity", 8.0f, 12.0f}, {"mass", 0.5f, 1.5f}, {"length", 0.5f, 1.5f}, {"dt", 0.04f, 0.06f}}, swing,
                          200);
  check_rejects_bad_physics("pendulum", "mass", -1.0f);
}
