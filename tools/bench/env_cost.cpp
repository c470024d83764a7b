#include "tools/bench/env_cost.hpp"

#include <map>

#include "sim/error.hpp"

namespace surge::throughput {
namespace {

// Per-env records of VecEnv besides State and Params (sim/vec_env.cuh).
constexpr std::size_t kStepCounterBytes = sizeof(std::int32_t);
constexpr std::size_t kReturnBytes = sizeof(float);
constexpr std::size_t kRngOffsetBytes = sizeof(std::uint64_t);  // reset stream and action stream: one each
constexpr std::size_t kTallyBytes = 3 * sizeof(double);         // episodes, return sum, length sum

std::size_t action_bytes(const ScenarioSpec& spec) {
  return spec.action_kind == ActionKind::Discrete ? sizeof(std::int32_t) : sizeof(float) * spec.action_dim;
}

// The rollout outputs of one step: obs [obs_dim] floats, the reward, the two flags.
std::size_t output_bytes(const ScenarioSpec& spec) { return rollout_bytes_per_env_step(spec); }

}  // namespace

double scenario_step_flops(const std::string& scenario) {
  // Each count follows the scenario header line by line as written (no common subexpressions merged).
  static const std::map<std::string, double> counts = {
      // cartpole.hpp: total_mass 1, polemass_length 1, cos and sin 2, temp 5, thetaacc 9, xacc 4, four
      // Euler updates 8; observe copies.
      {"cartpole", 30},
      // mountain_car.hpp: velocity (force term 1, 3 * position 1, cos 1, * gravity 1, two adds 2), position 1.
      {"mountain_car", 7},
      // mountain_car_continuous.hpp: velocity (force * power 1, 3 * position 1, cos 1, gravity * cos 1, add and
      // subtract 2), position 1, reward (action cost 2, subtract 1).
      {"mountain_car_continuous", 10},
      // pendulum.hpp: angle_normalize 3 (add, fmod, subtract), cost 7, theta_dot 12, theta 2; observe cos, sin 2.
      {"pendulum", 26},
      // acrobot.hpp, in double: derivative() 71 (d1 14, d2 7, phi2 6, phi1 23, ddtheta2 18, ddtheta1 3) four
      // times 284, dt / 2 1, three RK4 stages 24, the final combination 32, two wraps 2, termination test 4;
      // observe cos and sin of both angles 4.
      {"acrobot", 351},
  };
  const auto it = counts.find(scenario);
  SURGE_CHECK(it != counts.end(), "no FLOP count for scenario '" + scenario + "': add one to tools/bench/env_cost.cpp");
  return it->second;
}

double random_action_flops(const ScenarioSpec& spec) {
  // Rng::uniform(low, high): bits to (0, 1] 2, 1 - u 1, high - low 1, multiply 1, add 1.
  return spec.action_kind == ActionKind::Discrete ? 0.0 : 6.0 * spec.action_dim;
}

std::size_t engine_bytes_per_env(const ScenarioSpec& spec) {
  return sizeof(float) * static_cast<std::size_t>(spec.state_dim) +
         dtype_size(spec.param_dtype) * static_cast<std::size_t>(spec.param_count()) + kStepCounterBytes +
         kReturnBytes + 2 * kRngOffsetBytes + kTallyBytes;
}

PhaseWork fused_env_step_work(const ScenarioSpec& spec, std::int64_t steps_per_launch) {
  SURGE_CHECK(steps_per_launch > 0, "a fused rollout runs at least one step");
  PhaseWork work;
  work.name = "env step (fused)";
  work.flops = scenario_step_flops(spec.name) + random_action_flops(spec);
  // Loaded once and stored once per launch.
  const double per_launch = 2.0 * static_cast<double>(engine_bytes_per_env(spec));
  work.bytes = static_cast<double>(output_bytes(spec)) + per_launch / static_cast<double>(steps_per_launch);
  return work;
}

std::size_t env_step_kernel_bytes(const ScenarioSpec& spec) {
  const std::size_t state = sizeof(float) * static_cast<std::size_t>(spec.state_dim);
  const std::size_t params = dtype_size(spec.param_dtype) * static_cast<std::size_t>(spec.param_count());
  return action_bytes(spec) + 2 * state + params + 2 * kStepCounterBytes + 2 * kReturnBytes + output_bytes(spec);
}

PhaseWork stepwise_env_step_work(const ScenarioSpec& spec) {
  PhaseWork work;
  work.name = "env step";
  work.flops = scenario_step_flops(spec.name) + random_action_flops(spec);
  const std::size_t random_actions =
      2 * kRngOffsetBytes + action_bytes(spec);  // offset read and written, action written
  work.bytes = static_cast<double>(random_actions + env_step_kernel_bytes(spec));
  return work;
}

}  // namespace surge::throughput
