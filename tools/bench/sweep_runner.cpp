#include "tools/bench/sweep_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory_plan.hpp"
#include "sim/physics_settings.hpp"
#include "tools/bench/env_bench.hpp"
#include "tools/bench/train_bench.hpp"

namespace surge::cli {
namespace {

std::string gain_text(double gain) { return format_number("%.3gx", gain); }

}  // namespace

throughput::SweepResult run_sweep(const SweepSettings& s) {
  using throughput::SweepStop;
  SURGE_CHECK(s.from > 0 && (s.from & (s.from - 1)) == 0 && s.from <= s.to,
              "a sweep starts at a power of two no above its end");
  SURGE_CHECK(s.what == "env" || s.what == "train", "a sweep measures env or train");
  const bool train = s.what == "train";
  const Device device = s.device;
  const std::int64_t steps = s.steps;
  // Each N as `what` measures it: its memory plan, and the timed repeats.
  auto env_config = [&](std::int64_t n) {
    EnvBenchConfig c = env_bench_config(s.scenario, device, n, steps, s.repeats, s.seed);
    c.rollouts_per_repeat = batches_for(s.min_env_steps, n, steps);
    c.step_mode = s.mode == "step";
    c.physics = resolve_physics(scenario_spec(s.scenario), s.physics);
    return c;
  };
  auto train_config = [&](std::int64_t n) {
    TrainBenchConfig c;
    c.scenario = s.scenario;
    c.device = device;
    c.train = s.train;
    c.train.num_envs = n;
    c.train.num_steps = steps;
    c.train.seed = s.seed;
    set_physics(c.train.physics, s.physics);
    c.repeats = s.repeats;
    c.iterations_per_repeat = batches_for(s.min_env_steps, n, steps);
    return c;
  };
  auto plan_for = [&](std::int64_t n) {
    return train ? train_bench_memory_plan(train_config(n)) : env_bench_memory_plan(env_config(n));
  };
  auto measure = [&](std::int64_t n) {
    if (train) {
      const TrainBenchRun run = run_train_bench(train_config(n));
      return std::make_pair(run.rates, run.rate);
    }
    const EnvBenchRun run = run_env_bench(env_config(n));
    return std::make_pair(run.rates, run.rate);
  };

  // Free memory is read once, before anything is allocated: each N's buffers are gone before the next.
  const AvailableMemory available = available_memory(device);
  auto fits = [&](std::int64_t n) { return !available.known || plan_for(n).fits(available); };
  if (!fits(s.from)) {
    const MemoryPlan plan = plan_for(s.from);
    throw InputError("surge bench sweep: " + std::to_string(s.from) + " environments need " +
                     format_bytes(plan.allocated_bytes()) + " of memory on " + device.str() + ", " +
                     format_bytes(available.free_bytes) +
                     " is free; start lower (--from) or use fewer steps (--steps)");
  }

  throughput::SweepResult result;
  result.what = s.what;
  result.scenario = s.scenario;
  result.device = device.str();
  result.mode = train ? "ppo" : s.mode;
  result.from = s.from;
  result.to = s.to;
  result.min_env_steps = s.min_env_steps;
  result.repeats = s.repeats;
  result.rule = s.rule;
  result.command = s.command;
  result.memory_known = available.known;
  result.free_bytes = available.free_bytes;
  result.memory_source = available.known ? available.source : "unknown: memory not checked";

  if (s.progress)
    std::cerr << "surge bench sweep: " << s.what << " of " << s.scenario << " on " << device.str() << ", N from "
              << s.from << " doubling up to " << s.to << ", T = " << steps << " (" << result.mode << "), " << s.repeats
              << " repeats\n";
  std::vector<throughput::ScalingPoint> scaling;
  for (std::int64_t n = s.from;; n *= 2) {
    const auto [rates, rate] = measure(n);
    throughput::SweepPoint point;
    point.num_envs = n;
    point.steps = steps;
    point.batches_per_repeat = batches_for(s.min_env_steps, n, steps);
    point.rates = rates;
    point.rate = rate;
    point.device_bytes = plan_for(n).allocated_bytes();
    result.points.push_back(point);
    scaling.push_back({n, rate});
    if (s.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "  N = %-11lld %11.4g env-steps/s", static_cast<long long>(n), rate);
      std::cerr << line;
      if (scaling.size() > 1)
        std::cerr << "  (" << gain_text(throughput::gain_per_doubling(scaling[scaling.size() - 2], scaling.back()))
                  << ")";
      std::cerr << "\n";
    }
    result.stop = throughput::next_sweep_step(scaling, s.rule, s.to, fits);
    if (result.stop != SweepStop::Continue) break;
  }
  const std::int64_t last = result.points.back().num_envs;
  switch (result.stop) {
    case SweepStop::Saturated:
      result.stop_detail = "the doubling from " + std::to_string(last / 2) + " to " + std::to_string(last) +
                           " gained " +
                           gain_text(throughput::gain_per_doubling(scaling[scaling.size() - 2], scaling.back())) +
                           ", under " + gain_text(s.rule.min_gain);
      break;
    case SweepStop::ReachedLimit:
      result.stop_detail = "the next size, " + std::to_string(2 * last) + ", is above " + std::to_string(s.to);
      break;
    case SweepStop::WouldNotFit:
      result.stop_detail = "the next size, " + std::to_string(2 * last) + ", needs " +
                           format_bytes(plan_for(2 * last).allocated_bytes()) + " on " + device.str() + ", " +
                           format_bytes(available.free_bytes) + " was free (" + available.source + ")";
      break;
    case SweepStop::Continue: break;
  }
  result.analysis = throughput::analyse_scaling(scaling, s.rule);
  return result;
}

}  // namespace surge::cli
