// MountainCarContinuous-v0 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine,
// surge step), the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "scenarios/mountain_car_continuous.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

void idle(const float*, float* action) { action[0] = 0.0f; }
// Full force along the velocity, asked for twice over: the force is clipped, the cost is not.
void pump_twice_over(const float* obs, float* action) { action[0] = obs[1] >= 0.0f ? 2.0f : -2.0f; }

}  // namespace

TEST_CASE("mountain_car_continuous matches Gymnasium's transitions", "[mountain_car_continuous]") {
  const GoldenSet golden = load_golden<MountainCarContinuous>();
  check_golden<MountainCarContinuous>(golden);
  CHECK(terminated_rows(golden) > 10);  // the goal branch is exercised
  // So are the force clip and the unclipped cost.
  CHECK(std::count_if(golden.action.begin(), golden.action.end(), [](double a) { return std::abs(a) > 1.0; }) > 100);
}

TEST_CASE("mountain_car_continuous starts at rest somewhere in U(-0.6, -0.4)", "[mountain_car_continuous]") {
  check_resets("mountain_car_continuous", 8, kValleyStart);
}

TEST_CASE("mountain_car_continuous left idle truncates at exactly 999 steps and resets", "[mountain_car_continuous]") {
  const AuditedRun idling = run_audited("mountain_car_continuous", 8, 9, 2100, idle, is_valley_start);
  check_all_truncated(idling.audit, 2 * 8, 999);
  CHECK(idling.audit.return_sum == 0.0);
}

TEST_CASE("mountain_car_continuous pumped reaches the goal for 100 less the unclipped cost",
          "[mountain_car_continuous]") {
  const AuditedRun pumped = run_audited("mountain_car_continuous", 16, 10, 600, pump_twice_over, is_valley_start);
  check_all_reach_goal(pumped.audit, 16);
  for (std::int64_t slot = 0; slot < pumped.run.steps * pumped.run.envs; ++slot) {
    // 0.1 * 2^2 charged on every step, the clipped force notwithstanding.
    if (pumped.run.terminated[slot]) {
      CHECK(pumped.run.reward[slot] == Approx(100.0f - 0.4f));
      CHECK(pumped.run.final_obs[slot * 2] >= 0.45f);
    } else {
      CHECK(pumped.run.reward[slot] == Approx(-0.4f));
    }
  }
}

TEST_CASE("mountain_car_continuous randomises power and gravity per env within their ranges",
          "[mountain_car_continuous]") {
  check_randomized_params("mountain_car_continuous", {{"power", 0.001, 0.002}, {"gravity", 0.002, 0.003}}, idle, 999);
  check_rejects_bad_physics("mountain_car_continuous", "power", -0.001);
}
