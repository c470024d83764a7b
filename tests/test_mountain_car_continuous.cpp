// MountainCarContinuous-v0 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine,
// surge step), the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenarios/mountain_car_continuous.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

const ScenarioSpec& spec() { return scenario_spec("mountain_car_continuous"); }

bool is_reset_obs(const float* obs) { return obs[0] >= -0.6f && obs[0] <= -0.4f && obs[1] == 0.0f; }

void idle(const float*, float* action) { action[0] = 0.0f; }
// Full force along the velocity, asked for twice over: the force is clipped, the cost is not.
void pump_twice_over(const float* obs, float* action) { action[0] = obs[1] >= 0.0f ? 2.0f : -2.0f; }

}  // namespace

TEST_CASE("mountain_car_continuous matches Gymnasium's transitions", "[mountain_car_continuous]") {
  const GoldenSet golden = load_golden(spec());
  compare_with_golden("mountain_car_continuous SURGE_HD step", spec(), golden, step_golden_hd<MountainCarContinuous>(golden));
  compare_with_golden("mountain_car_continuous CPU engine", spec(), golden,
                      step_golden_engine("mountain_car_continuous", golden));
  compare_with_golden("mountain_car_continuous surge step", spec(), golden, step_golden_cli(spec(), golden));
  int terminated = 0, beyond_bounds = 0;
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    terminated += golden.terminated[row];
    beyond_bounds += std::abs(golden.action[row]) > 1.0;
  }
  CHECK(terminated > 10);       // the goal branch is exercised
  CHECK(beyond_bounds > 100);   // so are the force clip and the unclipped cost
}

TEST_CASE("mountain_car_continuous starts at rest somewhere in U(-0.6, -0.4)", "[mountain_car_continuous]") {
  const std::vector<float> states = reset_states("mountain_car_continuous", 20000, 8);
  check_uniform(states, 2, 0, -0.6, -0.4, "position");
  check_constant(states, 2, 1, 0.0f, "velocity");
}

TEST_CASE("mountain_car_continuous left idle truncates at exactly 999 steps and resets", "[mountain_car_continuous]") {
  auto engine = make_engine("mountain_car_continuous", Device::cpu(), 8, 9);
  const PolicyRun run = run_policy(*engine, 2100, idle);
  const EpisodeAudit audit = audit_episodes(run, spec(), is_reset_obs);
  check_all_truncated(audit, 2 * 8, 999);
  CHECK(audit.return_sum == 0.0);
  check_episode_stats(*engine, audit);
}

TEST_CASE("mountain_car_continuous pumped reaches the goal for 100 less the unclipped cost", "[mountain_car_continuous]") {
  auto engine = make_engine("mountain_car_continuous", Device::cpu(), 16, 10);
  const PolicyRun run = run_policy(*engine, 600, pump_twice_over);
  const EpisodeAudit audit = audit_episodes(run, spec(), is_reset_obs);
  CHECK(audit.terminated >= 16);
  CHECK(audit.truncated == 0);
  for (std::int64_t slot = 0; slot < run.steps * run.envs; ++slot) {
    // 0.1 * 2^2 charged on every step, the clipped force notwithstanding.
    if (run.terminated[slot]) {
      CHECK(run.reward[slot] == Approx(100.0f - 0.4f));
      CHECK(run.final_obs[slot * 2] >= 0.45f);
    } else {
      CHECK(run.reward[slot] == Approx(-0.4f));
    }
  }
  check_episode_stats(*engine, audit);
}

TEST_CASE("mountain_car_continuous randomises power and gravity per env within their ranges", "[mountain_car_continuous]") {
  check_randomized_params("mountain_car_continuous", {{"power", 0.001f, 0.002f}, {"gravity", 0.002f, 0.003f}}, idle, 999);
  check_rejects_bad_physics("mountain_car_continuous", "power", -0.001f);
}
