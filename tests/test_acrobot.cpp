// Acrobot-v1 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step) with
// angles compared modulo 2 pi, the reset distribution, the time limit and auto-reset, and domain
// randomisation.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenarios/acrobot.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

bool is_reset_obs(const float* obs) {
  // cos and sin of angles in [-0.1, 0.1], velocities in [-0.1, 0.1].
  const float min_cos = std::cos(0.1f) - 1e-6f, max_sin = std::sin(0.1f) + 1e-6f;
  return obs[0] >= min_cos && std::abs(obs[1]) <= max_sin && obs[2] >= min_cos && std::abs(obs[3]) <= max_sin &&
         std::abs(obs[4]) <= 0.1f && std::abs(obs[5]) <= 0.1f;
}

void hang(const float*, float* action) { action[0] = 1.0f; }
// Torque along the second joint's velocity: swings the links up within about a hundred steps.
void swing_up(const float* obs, float* action) { action[0] = obs[5] > 0.0f ? 2.0f : 0.0f; }

}  // namespace

TEST_CASE("acrobot matches Gymnasium's transitions", "[acrobot]") {
  const GoldenSet golden = load_golden<Acrobot>();
  GoldenComparison comparison;
  comparison.angle_states = {0, 1};
  allow_for_input_rounding<Acrobot>(golden, comparison);
  const GoldenScore score = check_golden<Acrobot>(golden, comparison);
  // Against the bare tolerance: the golden states are float64 and ours float32, and at two of the
  // fastest rows one step amplifies that rounding past the tolerance (by under 2x; stepped by Gymnasium
  // from the same float32 states, no value misses it), hence the allowance above.
  CHECK(score.worst_bare < 2.0);
  CHECK(score.over_bare <= 4);          // next_dtheta2 and obs_5, which is the same number, at each of those rows
  CHECK(terminated_rows(golden) > 10);  // the terminal reward of 0 is exercised
  int near_speed_limit = 0;
  for (std::int64_t row = 0; row < golden.rows; ++row)
    near_speed_limit += std::abs(golden.next_state[row * 4 + 3]) >= 9 * kPi - 1e-6;
  CHECK(near_speed_limit > 10);  // so is the velocity clip
}

TEST_CASE("acrobot's wrap matches Gymnasium's repeated whole turns", "[acrobot]") {
  for (double x : {0.0, 3.0, -3.0, Acrobot::kPi, -Acrobot::kPi, 3.5, -3.5, 10.0, -10.0, 100.0, -100.0}) {
    double expected = x;  // Gymnasium's loop
    while (expected > kPi) expected -= 2 * kPi;
    while (expected < -kPi) expected += 2 * kPi;
    INFO("x = " << x);
    CHECK(Acrobot::wrap(x, -kPi, kPi) == Approx(expected).margin(1e-12));
  }
}

TEST_CASE("acrobot starts with every coordinate in U(-0.1, 0.1)", "[acrobot]") {
  check_resets("acrobot", 12, std::vector<ResetRange>(4, {-0.1f, 0.1f}));
}

TEST_CASE("acrobot left hanging truncates at exactly 500 steps and resets", "[acrobot]") {
  const AuditedRun hanging = run_audited("acrobot", 16, 13, 1100, hang, is_reset_obs);
  check_all_truncated(hanging.audit, 2 * 16, 500);
  CHECK(hanging.audit.return_sum == -500.0 * 2 * 16);
}

TEST_CASE("acrobot swung up terminates with a reward of 0 on the last step and resets", "[acrobot]") {
  const AuditedRun swung = run_audited("acrobot", 32, 14, 500, swing_up, is_reset_obs);
  check_all_reach_goal(swung.audit, 32);
  for (std::int64_t slot = 0; slot < swung.run.steps * swung.run.envs; ++slot) {
    REQUIRE(swung.run.reward[slot] == (swung.run.terminated[slot] ? 0.0f : -1.0f));
    if (swung.run.terminated[slot]) {
      // The final observation shows the free end above the line: -cos t1 - cos(t1 + t2) > 1.
      const float* obs = &swung.run.final_obs[slot * 6];
      const double cos_sum = double(obs[0]) * obs[2] - double(obs[1]) * obs[3];  // cos(t1 + t2)
      CHECK(-obs[0] - cos_sum > 1.0 - 1e-5);
    }
  }
}

TEST_CASE("acrobot randomises its link physics per env within the ranges, in double", "[acrobot]") {
  CHECK(scenario_spec("acrobot").param_dtype == DType::Float64);
  check_randomized_params("acrobot",
                          {{"link_length_1", 0.8, 1.2},
                           {"link_mass_1", 0.8, 1.2},
                           {"link_mass_2", 0.8, 1.2},
                           {"link_com_pos_1", 0.4, 0.6},
                           {"link_com_pos_2", 0.4, 0.6},
                           {"link_moi", 0.8, 1.2},
                           {"gravity", 9.0, 10.0},
                           {"dt", 0.15, 0.25}},
                          hang, 500);
  check_rejects_bad_physics("acrobot", "link_mass_2", -1.0);
}
