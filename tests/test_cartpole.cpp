// CartPole against Gymnasium's own transitions, its reset distribution, and per-environment
// domain randomisation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/cartpole.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/scenario_testing.hpp"

using surge::CartPole;
using surge::Device;
using surge::DeviceBuffer;
using surge::Stream;
using surge::testing::GoldenSet;
using surge::testing::within_golden_tolerance;

namespace {

const std::vector<std::string> kStateNames = {"x", "x_dot", "theta", "theta_dot"};

GoldenSet load_cartpole_golden() { return surge::testing::load_golden("cartpole", kStateNames, CartPole::kObsDim); }

// Compares one computed transition with golden row `row`; appends a line per disagreement.
void compare_row(const GoldenSet& golden, std::int64_t row, const float* next_state, const float* obs, float reward,
                 std::uint8_t terminated, std::vector<std::string>& failures) {
  auto fail = [&](const std::string& what, double value, double ref) {
    std::ostringstream line;
    line.precision(10);
    line << "row " << row + 1 << " " << what << ": got " << value << ", Gymnasium " << ref;
    failures.push_back(line.str());
  };
  for (int k = 0; k < golden.state_dim; ++k) {
    const double ref = golden.next_state[row * golden.state_dim + k];
    if (!within_golden_tolerance(next_state[k], ref)) fail("next_" + kStateNames[k], next_state[k], ref);
  }
  for (int k = 0; k < golden.obs_dim; ++k) {
    const double ref = golden.obs[row * golden.obs_dim + k];
    if (!within_golden_tolerance(obs[k], ref)) fail("obs_" + std::to_string(k), obs[k], ref);
  }
  if (static_cast<double>(reward) != golden.reward[row]) fail("reward", reward, golden.reward[row]);
  if (terminated != golden.terminated[row]) fail("terminated", terminated, golden.terminated[row]);
}

void report(const std::vector<std::string>& failures) {
  for (std::size_t k = 0; k < failures.size() && k < 10; ++k) UNSCOPED_INFO(failures[k]);
  CHECK(failures.empty());
}

}  // namespace

TEST_CASE("CartPole's SURGE_HD functions reproduce every golden transition", "[cartpole][golden]") {
  const GoldenSet golden = load_cartpole_golden();
  REQUIRE(golden.rows >= 1000);
  const CartPole::Params params = surge::testing::default_params<CartPole>();
  std::vector<std::string> failures;
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    const double* s = &golden.state[row * 4];
    CartPole::State state{static_cast<float>(s[0]), static_cast<float>(s[1]), static_cast<float>(s[2]), static_cast<float>(s[3])};
    const surge::StepResult result = CartPole::step(state, params, static_cast<std::int32_t>(golden.action[row]));
    float obs[CartPole::kObsDim];
    CartPole::observe(state, obs);
    const float next[4] = {state.x, state.x_dot, state.theta, state.theta_dot};
    compare_row(golden, row, next, obs, result.reward, result.terminated ? 1 : 0, failures);
  }
  report(failures);
}

TEST_CASE("a CPU engine's transition() reproduces every golden transition", "[cartpole][golden][engine]") {
  const GoldenSet golden = load_cartpole_golden();
  const std::int64_t n = golden.rows;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto engine = surge::make_engine("cartpole", cpu, n, 1);
  REQUIRE(engine->spec().state_names == kStateNames);

  std::vector<float> states(golden.state.begin(), golden.state.end());  // float64 -> float32, as `surge step` reads them
  DeviceBuffer<float> states_in(cpu, n * 4), next_states(cpu, n * 4), obs(cpu, n * 4), reward(cpu, n);
  DeviceBuffer<std::uint8_t> terminated(cpu, n);
  DeviceBuffer<std::int32_t> actions(cpu, n);
  surge::from_host(states_in.span(), states, stream);
  surge::from_host(actions.span(), golden.discrete_actions(), stream);
  engine->transition(states_in.cspan(), surge::ActionView{actions.cspan(), {}}, next_states.span(), obs.span(), reward.span(),
                     terminated.span(), stream);
  const auto next_host = surge::to_host(next_states.cspan(), stream);
  const auto obs_host = surge::to_host(obs.cspan(), stream);
  const auto reward_host = surge::to_host(reward.cspan(), stream);
  const auto terminated_host = surge::to_host(terminated.cspan(), stream);

  std::vector<std::string> failures;
  for (std::int64_t row = 0; row < n; ++row)
    compare_row(golden, row, &next_host[row * 4], &obs_host[row * 4], reward_host[row], terminated_host[row], failures);
  report(failures);
  // A pure transition: the engine's own state is left alone.
  CHECK(engine->episode_stats(stream).episodes == 0);
}

TEST_CASE("resets draw every state coordinate from U(-0.05, 0.05)", "[cartpole][reset]") {
  const std::int64_t n = 8192;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto engine = surge::make_engine("cartpole", cpu, n, 20240607);

  // Check the draw made at construction, and a second one after an explicit reset.
  for (int round = 0; round < 2; ++round) {
    if (round == 1) engine->reset(stream);
    const std::vector<float> states = surge::to_host(engine->states(), stream);
    for (int k = 0; k < 4; ++k) {
      double sum = 0, sum_squares = 0;
      float lowest = 1, highest = -1;
      for (std::int64_t i = 0; i < n; ++i) {
        const float v = states[i * 4 + k];
        lowest = std::min(lowest, v);
        highest = std::max(highest, v);
        sum += v;
        sum_squares += static_cast<double>(v) * v;
      }
      const double mean = sum / n;
      const double variance = sum_squares / n - mean * mean;
      // U(-a, a): mean 0, variance a^2/3, fourth central moment a^4/5.
      const double a = 0.05;
      const double expected_variance = a * a / 3.0;
      const double mean_standard_error = std::sqrt(expected_variance / n);
      const double variance_standard_error = std::sqrt((std::pow(a, 4) / 5.0 - expected_variance * expected_variance) / n);
      INFO("round " << round << ", coordinate " << kStateNames[k] << ": range [" << lowest << ", " << highest << "], mean "
                    << mean << ", variance " << variance);
      CHECK(lowest >= -0.05f);
      CHECK(highest < 0.05f);
      // Spread over the whole interval, not a corner of it.
      CHECK(lowest < -0.049f);
      CHECK(highest > 0.049f);
      CHECK(std::fabs(mean) < 4 * mean_standard_error);
      CHECK(std::fabs(variance - expected_variance) < 4 * variance_standard_error);
    }
    const std::vector<std::int32_t> steps = surge::to_host(engine->episode_steps(), stream);
    for (std::int32_t s : steps) REQUIRE(s == 0);
  }
}

TEST_CASE("domain randomisation draws each env's parameter inside its range", "[cartpole][physics]") {
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  const int masspole = spec.param_index("masspole");
  const int length = spec.param_index("length");
  REQUIRE(masspole >= 0);
  REQUIRE(length >= 0);
  surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
  physics.randomized[masspole] = 1;
  physics.low[masspole] = 0.05f;
  physics.high[masspole] = 0.2f;

  const std::int64_t n = 512;
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  auto engine = surge::make_engine("cartpole", cpu, n, 99, physics);
  const int count = spec.param_count();
  const std::vector<double> params = surge::params_to_host(*engine, stream);
  REQUIRE(params.size() == static_cast<std::size_t>(n * count));
  double lowest = 1e9, highest = -1e9;
  for (std::int64_t i = 0; i < n; ++i) {
    const double drawn = params[i * count + masspole];
    CHECK(drawn >= 0.05f);
    CHECK(drawn <= 0.2f);
    lowest = std::min(lowest, drawn);
    highest = std::max(highest, drawn);
    // Parameters that are not randomised keep their value in every env.
    for (int j = 0; j < count; ++j)
      if (j != masspole) REQUIRE(params[i * count + j] == physics.value[j]);
  }
  // The draws differ across envs and cover most of the range.
  CHECK(lowest < 0.06f);
  CHECK(highest > 0.19f);

  // Redrawn at each reset: a new reset gives new values.
  engine->reset(stream);
  const std::vector<double> redrawn = surge::params_to_host(*engine, stream);
  int changed = 0;
  for (std::int64_t i = 0; i < n; ++i) changed += redrawn[i * count + masspole] != params[i * count + masspole];
  CHECK(changed > n / 2);
  CHECK(engine->physics().describe(spec).find("masspole") != std::string::npos);
}

TEST_CASE("bad physics ranges are rejected as bad input", "[cartpole][physics]") {
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  const int masspole = spec.param_index("masspole");
  const Device cpu = Device::cpu();

  SECTION("low above high") {
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    physics.randomized[masspole] = 1;
    physics.low[masspole] = 0.3f;
    physics.high[masspole] = 0.2f;
    CHECK_THROWS_AS(surge::make_engine("cartpole", cpu, 4, 1, physics), surge::InputError);
  }
  SECTION("a range reaching a negative mass") {
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    physics.randomized[masspole] = 1;
    physics.low[masspole] = -0.1f;
    physics.high[masspole] = 0.2f;
    CHECK_THROWS_AS(surge::make_engine("cartpole", cpu, 4, 1, physics), surge::InputError);
  }
  SECTION("a negative mass") {
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    physics.value[masspole] = -1.0f;
    CHECK_THROWS_AS(surge::make_engine("cartpole", cpu, 4, 1, physics), surge::InputError);
  }
  SECTION("a range that is not a number") {
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    physics.randomized[masspole] = 1;
    physics.high[masspole] = std::nanf("");
    CHECK_THROWS_AS(surge::make_engine("cartpole", cpu, 4, 1, physics), surge::InputError);
  }
  SECTION("the message names the parameter") {
    surge::PhysicsConfig physics = surge::PhysicsConfig::defaults(spec);
    physics.value[masspole] = -1.0f;
    CHECK_THROWS_WITH(physics.validate(spec), Catch::Contains("masspole"));
  }
}
