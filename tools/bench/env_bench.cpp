#include "tools/bench/env_bench.hpp"

#include <algorithm>
#include <iostream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/stream.hpp"
#include "sim/timer.hpp"
#include "tools/bench/bench_buffers.hpp"

namespace surge::cli {

double median(std::vector<double> values) {
  SURGE_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

EnvBenchConfig env_bench_config(const std::string& scenario, Device device, std::int64_t num_envs, std::int64_t steps,
                                int repeats, std::uint64_t seed) {
  return {.scenario = scenario,
          .device = device,
          .num_envs = num_envs,
          .steps = steps,
          .repeats = repeats,
          .seed = seed,
          .physics = {},
          .show_progress = false};
}

std::int64_t batches_for(std::int64_t min_env_steps, std::int64_t num_envs, std::int64_t steps) {
  return std::max<std::int64_t>(1, (min_env_steps + num_envs * steps - 1) / (num_envs * steps));
}

MemoryPlan env_bench_memory_plan(const EnvBenchConfig& config) {
  const ScenarioSpec& spec = scenario_spec(config.scenario);
  MemoryPlan plan = engine_memory_plan(spec.name, config.device, config.num_envs);
  plan.append(EnvBenchBuffers::plan(spec, config.device, config.num_envs, config.steps, config.step_mode));
  return plan;
}

EnvBenchRun run_env_bench(const EnvBenchConfig& config) {
  SURGE_CHECK(config.num_envs > 0 && config.steps > 0 && config.repeats > 0 && config.rollouts_per_repeat > 0,
              "env benchmark needs positive sizes");
  const ScenarioSpec& spec = scenario_spec(config.scenario);
  const std::int64_t num_envs = config.num_envs, steps = config.steps;
  Stream stream(config.device);
  const PhysicsConfig physics = config.physics.value.empty() ? PhysicsConfig::defaults(spec) : config.physics;
  auto engine = make_engine(spec.name, config.device, num_envs, config.seed, physics);
  EnvBenchBuffers buffers(spec, config.device, num_envs, steps, config.step_mode);

  auto rollout = [&] {
    if (!config.step_mode) {
      engine->rollout_random(
          steps, {buffers.obs.span(), buffers.reward.span(), buffers.terminated.span(), buffers.truncated.span()},
          stream);
      return;
    }
    for (std::int64_t t = 0; t < steps; ++t) {
      engine->random_actions(buffers.discrete_actions.span(), buffers.continuous_actions.span(), stream);
      engine->step(ActionView{buffers.discrete_actions.cspan(), buffers.continuous_actions.cspan()},
                   StepViews{buffers.obs.span().slice(t * num_envs * spec.obs_dim, num_envs * spec.obs_dim),
                             buffers.reward.span().slice(t * num_envs, num_envs),
                             buffers.terminated.span().slice(t * num_envs, num_envs),
                             buffers.truncated.span().slice(t * num_envs, num_envs),
                             {}},
                   stream);
    }
  };

  rollout();  // warm-up: first touch of every buffer, kernel loading
  stream.synchronize();
  engine->clear_episode_stats(stream);
  EnvBenchRun run;
  StreamTimer timer(stream);
  const double env_steps = static_cast<double>(steps * num_envs * config.rollouts_per_repeat);
  for (int r = 0; r < config.repeats; ++r) {
    timer.start();
    for (std::int64_t k = 0; k < config.rollouts_per_repeat; ++k) rollout();
    timer.stop();
    run.rates.push_back(env_steps / timer.seconds());
    if (config.show_progress)
      std::cerr << "\r  repeat " << (r + 1) << "/" << config.repeats << ": " << format_rate(run.rates.back())
                << " env-steps/s   " << std::flush;
  }
  if (config.show_progress) std::cerr << "\n";
  run.rate = median(run.rates);
  run.episodes = engine->episode_stats(stream);
  run.engine_bytes = engine->device_bytes();
  run.rollout_bytes =
      buffers.obs.bytes() + buffers.reward.bytes() + buffers.terminated.bytes() + buffers.truncated.bytes();
  run.physics = engine->physics().describe(spec);
  return run;
}

}  // namespace surge::cli
