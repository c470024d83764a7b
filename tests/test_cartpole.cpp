// CartPole-v1 against Gymnasium: golden transitions (SURGE_HD functions, CPU engine, surge step), the
// reset distribution, and per-environment domain randomisation. Its time limit and auto-reset are
// test_vec_env's subject.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "scenarios/cartpole.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

// The pole falls within a few dozen steps, whatever its mass.
void push_left(const float*, float* action) { action[0] = 0.0f; }

}  // namespace

TEST_CASE("cartpole matches Gymnasium's transitions", "[cartpole][golden]") {
  const GoldenSet golden = load_golden<CartPole>();
  check_golden<CartPole>(golden);
  CHECK(terminated_rows(golden) > 10);  // the termination thresholds are exercised
}

TEST_CASE("cartpole starts with every coordinate in U(-0.05, 0.05)", "[cartpole][reset]") {
  check_resets("cartpole", 20240607, std::vector<ResetRange>(4, {-0.05f, 0.05f}));
}

TEST_CASE("cartpole's reset() draws every state afresh and zeroes the episode counters", "[cartpole][reset]") {
  const std::int64_t n = 256;
  Stream stream(Device::cpu());
  auto engine = make_engine("cartpole", Device::cpu(), n, 3);
  run_policy(*engine, 5, push_left);
  const std::vector<float> before = to_host(engine->states(), stream);
  engine->reset(stream);
  const std::vector<float> after = to_host(engine->states(), stream);
  int changed = 0;
  for (std::size_t k = 0; k < after.size(); ++k) {
    REQUIRE(std::abs(after[k]) <= 0.05f);
    changed += after[k] != before[k];
  }
  CHECK(changed == static_cast<int>(after.size()));
  for (std::int32_t steps : to_host(engine->episode_steps(), stream)) REQUIRE(steps == 0);
  CHECK(engine->episode_stats(stream).episodes == 0);
}

TEST_CASE("cartpole randomises its pole's mass and length per env within the ranges", "[cartpole][physics]") {
  check_randomized_params("cartpole", {{"masspole", 0.05, 0.2}, {"length", 0.4, 0.6}}, push_left, 200);
  check_rejects_bad_physics("cartpole", "masspole", -0.1);
}
