// MountainCar-v0 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step),
// the reset distribution, the time limit and auto-reset, and domain randomisation.
#include <catch2/catch.hpp>

#include "scenarios/mountain_car.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

const ScenarioSpec& spec() { return scenario_spec("mountain_car"); }

bool is_reset_obs(const float* obs) { return obs[0] >= -0.6f && obs[0] <= -0.4f && obs[1] == 0.0f; }

// Accelerates along the current velocity: pumps energy until the car climbs out.
void pump(const float* obs, float* action) { action[0] = obs[1] >= 0.0f ? 2.0f : 0.0f; }
void coast(const float*, float* action) { action[0] = 1.0f; }

}  // namespace

TEST_CASE("mountain_car matches Gymnasium's transitions", "[mountain_car]") {
  const GoldenSet golden = load_golden(spec());
  compare_with_golden("mountain_car SURGE_HD step", spec(), golden, step_golden_hd<MountainCar>(golden));
  compare_with_golden("mountain_car CPU engine", spec(), golden, step_golden_engine("mountain_car", golden));
  compare_with_golden("mountain_car surge step", spec(), golden, step_golden_cli(spec(), golden));
  int terminated = 0;
  for (int flag : golden.terminated) terminated += flag;
  CHECK(terminated > 10);  // the goal branch is exercised
}

TEST_CASE("mountain_car starts at rest somewhere in U(-0.6, -0.4)", "[mountain_car]") {
  const std::vector<float> states = reset_states("mountain_car", 20000, 5);
  check_uniform(states, 2, 0, -0.6, -0.4, "position");
  check_constant(states, 2, 1, 0.0f, "velocity");
}

TEST_CASE("mountain_car left to coast truncates at exactly 200 steps and resets", "[mountain_car]") {
  auto engine = make_engine("mountain_car", Device::cpu(), 32, 3);
  const PolicyRun run = run_policy(*engine, 450, coast);
  const EpisodeAudit audit = audit_episodes(run, spec(), is_reset_obs);
  check_all_truncated(audit, 2 * 32, 200);
  CHECK(audit.return_sum == -200.0 * 2 * 32);
  check_episode_stats(*engine, audit);
}

TEST_CASE("mountain_car pumped along its velocity reaches the goal and resets", "[mountain_car]") {
  auto engine = make_engine("mountain_car", Device::cpu(), 32, 4);
  const PolicyRun run = run_policy(*engine, 400, pump);
  const EpisodeAudit audit = audit_episodes(run, spec(), is_reset_obs);
  CHECK(audit.terminated >= 32);
  CHECK(audit.truncated == 0);
  for (std::int64_t t = 0; t < run.steps; ++t)
    for (std::int64_t i = 0; i < run.envs; ++i) {
      const std::int64_t slot = t * run.envs + i;
      CHECK(run.reward[slot] == -1.0f);
      if (run.terminated[slot]) CHECK(run.final_obs[slot * 2] >= 0.5f);
    }
  check_episode_stats(*engine, audit);
}

TEST_CASE("mountain_car randomises force and gravity per env within their ranges", "[mountain_car]") {
  check_randomized_params("mountain_car", {{"force", 0.0005f, 0.0015f}, {"gravity", 0.002f, 0.003f}}, coast, 200);
  check_rejects_bad_physics("mountain_car", "gravity", -0.001f);
}
