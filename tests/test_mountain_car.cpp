// MountainCar-v0 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step),
// the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include "scenarios/mountain_car.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

// Accelerates along the current velocity: pumps energy until the car climbs out.
void pump(const float* obs, float* action) { action[0] = obs[1] >= 0.0f ? 2.0f : 0.0f; }
void coast(const float*, float* action) { action[0] = 1.0f; }

}  // namespace

TEST_CASE("mountain_car matches Gymnasium's transitions", "[mountain_car]") {
  const GoldenSet golden = load_golden<MountainCar>();
  check_golden<MountainCar>(golden);
  CHECK(terminated_rows(golden) > 10);  // the goal branch is exercised
}

TEST_CASE("mountain_car starts at rest somewhere in U(-0.6, -0.4)", "[mountain_car]") {
  check_resets("mountain_car", 5, kValleyStart);
}

TEST_CASE("mountain_car left to coast truncates at exactly 200 steps and resets", "[mountain_car]") {
  const AuditedRun coasting = run_audited("mountain_car", 32, 3, 450, coast, is_valley_start);
  check_all_truncated(coasting.audit, 2 * 32, 200);
  CHECK(coasting.audit.return_sum == -200.0 * 2 * 32);
}

TEST_CASE("mountain_car pumped along its velocity reaches the goal and resets", "[mountain_car]") {
  const AuditedRun pumped = run_audited("mountain_car", 32, 4, 400, pump, is_valley_start);
  check_all_reach_goal(pumped.audit, 32);
  for (std::int64_t slot = 0; slot < pumped.run.steps * pumped.run.envs; ++slot) {
    CHECK(pumped.run.reward[slot] == -1.0f);
    if (pumped.run.terminated[slot]) CHECK(pumped.run.final_obs[slot * 2] >= 0.5f);
  }
}

TEST_CASE("mountain_car randomises force and gravity per env within their ranges", "[mountain_car]") {
  check_randomized_params("mountain_car", {{"force", 0.0005, 0.0015}, {"gravity", 0.002, 0.003}}, coast, 200);
  check_rejects_bad_physics("mountain_car", "gravity", -0.001);
}
