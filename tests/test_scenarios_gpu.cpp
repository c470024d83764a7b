// MountainCar, Acrobot, Pendulum and MountainCarContinuous on the CUDA backend: Gymnasium's golden
// transitions through a CUDA engine and `surge step --device cuda`, resets, randomised parameters and
// random actions equal to the CPU's bit for bit, and the time limit with auto-reset on the device.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "scenarios/acrobot.hpp"
#include "tests/support/scenario_testing.hpp"

using namespace surge;
using namespace surge::testing;

namespace {

const Device kCuda = Device::cuda(0);
const std::vector<std::string> kScenarios = {"mountain_car", "acrobot", "pendulum", "mountain_car_continuous"};

// Every parameter randomised over +-10% of its default.
PhysicsConfig all_randomized(const ScenarioSpec& spec) {
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  for (int j = 0; j < spec.param_count(); ++j) {
    physics.randomized[j] = 1;
    physics.low[j] = 0.9f * spec.params[j].default_value;
    physics.high[j] = 1.1f * spec.params[j].default_value;
  }
  return physics;
}

}  // namespace

TEST_CASE("CUDA engines and surge step on CUDA reproduce Gymnasium's transitions", "[gpu][golden]") {
  for (const std::string& name : kScenarios) {
    const ScenarioSpec& spec = scenario_spec(name);
    const GoldenSet golden = load_golden(spec);
    GoldenComparison comparison;
    if (name == "acrobot") {
      comparison.angle_states = {0, 1};
      allow_for_input_rounding<Acrobot>(golden, comparison);
    }
    compare_with_golden(name + " CUDA engine", spec, golden, step_golden_engine(name, golden, kCuda), comparison);
    compare_with_golden(name + " surge step --device cuda", spec, golden, step_golden_cli(spec, golden, "cuda"),
                        comparison);
  }
}

TEST_CASE("CUDA resets, randomised parameters and random actions equal the CPU's bit for bit", "[gpu][rng]") {
  for (const std::string& name : kScenarios) {
    INFO(name);
    const ScenarioSpec& spec = scenario_spec(name);
    const std::int64_t n = 4096;
    const PhysicsConfig physics = all_randomized(spec);
    auto cpu = make_engine(name, Device::cpu(), n, 77, physics);
    auto cuda = make_engine(name, kCuda, n, 77, physics);
    Stream cpu_stream(Device::cpu()), cuda_stream(kCuda);
    CHECK(to_host(cuda->states(), cuda_stream) == to_host(cpu->states(), cpu_stream));
    CHECK(params_to_host(*cuda, cuda_stream) == params_to_host(*cpu, cpu_stream));
    const bool discrete = spec.action_kind == ActionKind::Discrete;
    const std::int64_t continuous_size = discrete ? 0 : n * spec.action_dim;
    DeviceBuffer<std::int32_t> cpu_discrete(Device::cpu(), discrete ? n : 0), cuda_discrete(kCuda, discrete ? n : 0);
    DeviceBuffer<float> cpu_continuous(Device::cpu(), continuous_size), cuda_continuous(kCuda, continuous_size);
    for (int draw = 0; draw < 3; ++draw) {
      cpu->random_actions(cpu_discrete.span(), cpu_continuous.span(), cpu_stream);
      cuda->random_actions(cuda_discrete.span(), cuda_continuous.span(), cuda_stream);
      CHECK(to_host(cuda_discrete.cspan(), cuda_stream) == to_host(cpu_discrete.cspan(), cpu_stream));
      const std::vector<float> actions = to_host(cuda_continuous.cspan(), cuda_stream);
      CHECK(actions == to_host(cpu_continuous.cspan(), cpu_stream));
      for (std::size_t k = 0; k < actions.size(); ++k) {
        const int dim = static_cast<int>(k % spec.action_dim);
        REQUIRE(actions[k] >= spec.action_low[dim]);
        REQUIRE(actions[k] <= spec.action_high[dim]);
      }
    }
  }
}

TEST_CASE("CUDA engines truncate at the time limit and reset", "[gpu][time_limit]") {
  struct Case {
    std::string name;
    Policy policy;  // one that never reaches a goal
    std::function<bool(const float*)> is_reset_obs;
  };
  const std::vector<Case> cases = {
      {"mountain_car", [](const float*, float* a) { a[0] = 1.0f; },
       [](const float* o) { return o[0] >= -0.6f && o[0] <= -0.4f && o[1] == 0.0f; }},
      {"acrobot", [](const float*, float* a) { a[0] = 1.0f; },
       [](const float* o) {
         return std::abs(o[1]) <= 0.1f && std::abs(o[3]) <= 0.1f && std::abs(o[4]) <= 0.1f && std::abs(o[5]) <= 0.1f;
       }},
      {"pendulum", [](const float* o, float* a) { a[0] = o[2] >= 0.0f ? 3.0f : -3.0f; },
       [](const float* o) { return std::abs(o[2]) <= 1.0f; }},
      {"mountain_car_continuous", [](const float*, float* a) { a[0] = 0.0f; },
       [](const float* o) { return o[0] >= -0.6f && o[0] <= -0.4f && o[1] == 0.0f; }},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const ScenarioSpec& spec = scenario_spec(c.name);
    auto engine = make_engine(c.name, kCuda, 8, 21);
    const PolicyRun run = run_policy(*engine, spec.max_episode_steps + 5, c.policy);
    const EpisodeAudit audit = audit_episodes(run, spec, c.is_reset_obs);
    CHECK(audit.ended == 8);
    CHECK(audit.truncated == 8);
    CHECK(audit.terminated == 0);
    check_episode_stats(*engine, audit);
  }
}
