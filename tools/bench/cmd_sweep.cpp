// surge bench sweep: the batch-doubling search. Doubles the number of environments from N0 until a
// doubling stops paying, the next size would not fit in memory, or N1 is reached; names the knee
// and recommends a --num-envs (definitions in tools/bench/knee.hpp and docs/throughput.md).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory_plan.hpp"
#include "tools/bench/bench_report.hpp"
#include "tools/bench/knee.hpp"
#include "tools/bench/sweep_report.hpp"
#include "tools/bench/sweep_runner.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/physics_option.hpp"
#include "tools/cli/version.hpp"

namespace surge::cli {
namespace {

using throughput::SweepResult;

bool is_power_of_two(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

int run_bench_sweep(const Args& args) {
  Command cmd("bench sweep",
              "The batch-doubling search: measures env-steps/s at N0, 2 N0, 4 N0, ... environments, stepping\n"
              "them alone (--what env, as surge bench env) or training on them (--what train: whole PPO iterations\n"
              "with the default configuration, as surge train runs them, updates included). It stops when a\n"
              "doubling gains less than --min-gain, when the next N would not fit in device memory (by its memory\n"
              "plan), or when the next N would pass --to. Each N runs rollouts (or iterations) of T steps back to\n"
              "back until at least --min-env-steps are timed, --repeats times; the median is reported. Names the\n"
              "knee (the first N whose doubling gained less than --min-gain) and recommends --num-envs: the\n"
              "smallest N within --recommend-fraction of the best rate. Definitions and the JSON schema:\n"
              "docs/throughput.md.");
  cmd.option("what", "WHAT", "what to sweep: env (environment stepping) or train (PPO iterations)", "env")
      .option("scenario", "NAME", "scenario to step", "cartpole")
      .option("device", "DEV", device_help(), "auto")
      .option("from", "N0", "first number of environments, a power of two [default: 1024 on CUDA, 64 on the CPU]")
      .option("to", "N1", "largest number of environments to try [default: 2^30 on CUDA, 2^24 on the CPU]")
      .option("steps", "T", "steps per rollout", "128")
      .option("mode", "MODE", "--what env: fused (one launch steps T times) or step (one launch per step, as training)",
              "fused")
      .option("min-gain", "G", "a doubling that multiplies the rate by less than this ends the sweep", "1.1")
      .option("recommend-fraction", "F", "recommend the smallest N reaching this fraction of the best rate", "0.9")
      .option("repeats", "R", "timed repeats per N; the median is reported", "5")
      .option("min-env-steps", "E",
              "env-steps per timed repeat, at least [default: env 2^26 on CUDA, 2^22 on the CPU; "
              "train 2^24 on CUDA, 2^16 on the CPU]")
      .option("seed", "K", "random seed", "1")
      .option("json", "FILE", "write the results as JSON (schema in docs/throughput.md)")
      .option("svg", "FILE", "draw env-steps/s against N on log-log axes, knee and recommendation marked");
  add_physics_option(cmd)
      .example("surge bench sweep --what env --scenario cartpole --device cuda --json sweep.json --svg sweep.svg")
      .example("surge bench sweep --what train --scenario cartpole --device cuda --json train-sweep.json")
      .example("surge bench sweep --device cpu --from 64 --to 4096 --steps 64");
  if (!cmd.parse_or_print_usage(args)) return 0;
  const std::string what = bench_what(cmd);
  const ScenarioSpec& spec = scenario_spec(cmd.get("scenario"));
  const std::string mode = bench_mode(cmd);
  const PhysicsSettings physics = physics_options(cmd);
  resolve_physics(spec, physics);  // bad input is answered before anything runs
  const std::int64_t kMaxEnvs = std::int64_t(1) << 40;
  const std::int64_t steps = cmd.get_int("steps", 1, 1 << 20);
  throughput::KneeRule rule;
  rule.min_gain = cmd.get_double("min-gain", 1.0001, 2.0);
  rule.recommend_fraction = cmd.get_double("recommend-fraction", 0.01, 1.0);
  const int repeats = static_cast<int>(cmd.get_int("repeats", 1, 1000));
  const std::uint64_t seed = cmd.get_u64("seed");
  const ReportFiles files(cmd);
  // Flags are checked before --device is resolved, so bad input is answered the same on every machine.
  const std::int64_t from_given = cmd.has("from") ? cmd.get_int("from", 1, kMaxEnvs) : 0;
  const std::int64_t to_given = cmd.has("to") ? cmd.get_int("to", 1, kMaxEnvs) : 0;
  if (from_given && !is_power_of_two(from_given))
    throw InputError(cmd.complaint("--from " + std::to_string(from_given) +
                                   " is not a power of two; the sweep doubles N, so start it at one (e.g. 1024)"));
  if (from_given && to_given && from_given > to_given)
    throw InputError(cmd.complaint("--from " + std::to_string(from_given) + " is above --to " +
                                   std::to_string(to_given) + "; give --from <= --to"));
  const std::int64_t min_env_steps_given = cmd.has("min-env-steps") ? cmd.get_int("min-env-steps", 1, kMaxEnvs) : 0;

  const Device device = resolve_device(cmd.get("device"));
  const bool gpu = device.is_cuda();
  const std::int64_t from = from_given ? from_given : (gpu ? 1024 : 64);
  const std::int64_t to = to_given ? to_given : (gpu ? std::int64_t(1) << 30 : std::int64_t(1) << 24);
  if (from > to)
    throw InputError(cmd.complaint("--from " + std::to_string(from) + " is above --to " + std::to_string(to) +
                                   "; give --from <= --to"));
  const bool train = what == "train";
  const std::int64_t default_min_env_steps = train ? (gpu ? std::int64_t(1) << 24 : std::int64_t(1) << 16)
                                                   : (gpu ? std::int64_t(1) << 26 : std::int64_t(1) << 22);
  const std::int64_t min_env_steps = min_env_steps_given ? min_env_steps_given : default_min_env_steps;

  SweepSettings settings;
  settings.what = what;
  settings.scenario = spec.name;
  settings.device = device;
  settings.mode = mode;
  settings.from = from;
  settings.to = to;
  settings.steps = steps;
  settings.min_env_steps = min_env_steps;
  settings.repeats = repeats;
  settings.seed = seed;
  settings.physics = physics;
  settings.rule = rule;
  settings.command = command_line("surge bench sweep", args);
  const SweepResult result = run_sweep(settings);

  std::cout << what << " of " << spec.name << " on " << device.str() << ", T = " << steps << " (" << result.mode
            << ")\n"
            << throughput::sweep_table(result);
  files.write([&] { return throughput::sweep_json(result, SURGE_VERSION); },
              [&] { return throughput::sweep_svg(result); });
  return 0;
}

}  // namespace surge::cli
