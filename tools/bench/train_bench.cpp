#include "tools/bench/train_bench.hpp"

#include <chrono>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/physics_settings.hpp"
#include "tools/bench/env_bench.hpp"

namespace surge::cli {
namespace {

constexpr std::int64_t kWarmupIterations = 2;

rl::TrainConfig sized(const TrainBenchConfig& config) {
  rl::TrainConfig train = config.train;
  train.total_steps = train.batch_size() * (kWarmupIterations + config.repeats * config.iterations_per_repeat);
  train.validate();
  return train;
}

}  // namespace

MemoryPlan train_bench_memory_plan(const TrainBenchConfig& config) {
  const rl::TrainConfig train = sized(config);
  MemoryPlan plan = engine_memory_plan(config.scenario, config.device, train.num_envs);
  plan.append(rl::Trainer::memory_plan(train, scenario_spec(config.scenario), config.device));
  return plan;
}

TrainBenchRun run_train_bench(const TrainBenchConfig& config) {
  SURGE_CHECK(config.repeats > 0 && config.iterations_per_repeat > 0, "train benchmark needs positive repeat counts");
  const rl::TrainConfig train = sized(config);
  auto engine = make_engine(config.scenario, config.device, train.num_envs, train.seed,
                            resolve_physics(scenario_spec(config.scenario), train.physics));
  rl::Trainer trainer(*engine, train);
  for (std::int64_t k = 0; k < kWarmupIterations; ++k) trainer.iterate();
  trainer.drain();
  TrainBenchRun run;
  run.graph = trainer.uses_graph();
  const double env_steps = static_cast<double>(train.batch_size() * config.iterations_per_repeat);
  for (int r = 0; r < config.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t k = 0; k < config.iterations_per_repeat; ++k) trainer.iterate();
    trainer.drain();  // waits for the device
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.rates.push_back(env_steps / seconds);
  }
  run.rate = median(run.rates);
  return run;
}

}  // namespace surge::cli
