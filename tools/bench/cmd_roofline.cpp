// surge bench roofline: each phase's FLOPs and bytes, counted from its shapes, set against the two
// ceilings of the device measured in the same run (a large SGEMM and a large copy).
#include <algorithm>
#include <iostream>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory_plan.hpp"
#include "sim/timer.hpp"
#include "tools/bench/bench_report.hpp"
#include "tools/bench/env_bench.hpp"
#include "tools/bench/env_cost.hpp"
#include "tools/bench/gemm_rate.hpp"
#include "tools/bench/ppo_cost.hpp"
#include "tools/bench/roofline_report.hpp"
#include "tools/bench/train_bench.hpp"
#include "tools/bench/train_phases.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/version.hpp"

namespace surge::cli {

int run_bench_roofline(const Args& args) {
  Command cmd("bench roofline",
              "Places each phase on the roofline of the device: its FLOPs and bytes per execution, counted from\n"
              "the shapes (docs/throughput.md says how), divided by its measured time, against the rate of a large\n"
              "SGEMM and the copy bandwidth, both measured in this run. Reports the fraction of each ceiling the\n"
              "phase reaches and which ceiling bounds it. --what env: the env step fused over T steps, and one\n"
              "launch per step with actions in a buffer. --what train: the phases of a PPO iteration (policy\n"
              "forward, sampling, env step, GAE, update forward, update backward, optimiser) timed by the\n"
              "trainer's diagnostic pass, outside the CUDA graph, with each phase's share of the iteration.");
  cmd.option("what", "WHAT", "env (environment stepping) or train (the phases of PPO training)", "env")
      .option("scenario", "NAME", "scenario to step", "cartpole")
      .option("device", "DEV", device_help(), "auto")
      .option("num-envs", "N",
              "number of environments [default: env 1048576 on CUDA, 4096 on the CPU; train 65536 on CUDA, "
              "64 on the CPU]")
      .option("steps", "T", "steps per rollout", "128")
      .option("repeats", "R", "timed repeats of each measurement; medians are reported", "5")
      .option("gemm-size", "S",
              "m = n = k of the SGEMM that sets the compute ceiling [default: 8192 on CUDA, 1024 on the CPU]")
      .option("min-env-steps", "E",
              "--what env: env-steps per timed repeat, at least [default: 2^26 on CUDA, 2^22 on the CPU]")
      .option("seed", "K", "random seed", "1")
      .option("json", "FILE", "write the report as JSON (schema in docs/throughput.md)")
      .option("svg", "FILE", "draw the phases on the roofline, log-log")
      .example("surge bench roofline --scenario cartpole --device cuda --json roofline.json --svg roofline.svg")
      .example("surge bench roofline --what train --device cuda --num-envs 65536 --json train-roofline.json");
  if (!cmd.parse_or_print_usage(args)) return 0;
  const std::string what = bench_what(cmd);
  const bool train = what == "train";
  const ScenarioSpec& spec = scenario_spec(cmd.get("scenario"));
  const std::int64_t steps = cmd.get_int("steps", 1, 1 << 20);
  const int repeats = static_cast<int>(cmd.get_int("repeats", 1, 1000));
  const std::uint64_t seed = cmd.get_u64("seed");
  const std::int64_t num_envs_given = cmd.has("num-envs") ? cmd.get_int("num-envs", 1, std::int64_t(1) << 40) : 0;
  const std::int64_t min_env_steps_given =
      cmd.has("min-env-steps") ? cmd.get_int("min-env-steps", 1, std::int64_t(1) << 40) : 0;
  const std::int64_t gemm_size_given = cmd.has("gemm-size") ? cmd.get_int("gemm-size", 16, 65536) : 0;
  const ReportFiles files(cmd);
  const Device device = resolve_device(cmd.get("device"));
  const bool gpu = device.is_cuda();

  const std::int64_t num_envs = num_envs_given ? num_envs_given
                                : train        ? (gpu ? 65536 : 64)
                                               : (gpu ? std::int64_t(1) << 20 : 4096);
  EnvBenchConfig env = env_bench_config(spec.name, device, num_envs, steps, repeats, seed);
  env.step_mode = true;  // the larger of the two: it also holds the action buffer
  const std::int64_t min_env_steps =
      min_env_steps_given ? min_env_steps_given : (gpu ? std::int64_t(1) << 26 : std::int64_t(1) << 22);
  env.rollouts_per_repeat = batches_for(min_env_steps, num_envs, steps);
  TrainBenchConfig trainer;
  trainer.scenario = spec.name;
  trainer.device = device;
  trainer.train.num_envs = num_envs;
  trainer.train.num_steps = steps;
  trainer.train.seed = seed;
  trainer.repeats = repeats;

  const std::int64_t gemm_size = gemm_size_given ? gemm_size_given : (gpu ? 8192 : 1024);
  const std::size_t copy_bytes = gpu ? std::size_t(2) << 30 : std::size_t(256) << 20;
  MemoryPlan plan = train ? train_bench_memory_plan(trainer) : env_bench_memory_plan(env);
  plan.add<float>("gemm.abc", "[3][S][S]", 3 * gemm_size * gemm_size);
  plan.add<float>("copy.source_target", "[2][bytes/4]", static_cast<std::int64_t>(2 * copy_bytes / sizeof(float)));
  plan.require_fits(
      "surge bench roofline with " + std::to_string(num_envs) + " envs x " + std::to_string(steps) + " steps",
      "lower --num-envs, --steps or --gemm-size");

  throughput::RooflineReport report;
  report.what = what;
  report.scenario = spec.name;
  report.device = device.str();
  report.num_envs = num_envs;
  report.steps = steps;
  report.command = command_line("surge bench roofline", args);

  std::cerr << "surge bench roofline: " << what << " of " << spec.name << " on " << device.str() << ", " << num_envs
            << " envs x " << steps << " steps; measuring the ceilings\n";
  const GemmRate gemm = measure_sgemm_rate(device, gemm_size, repeats);
  report.ceilings.flops_per_s = gemm.flops_per_s;
  report.gemm_source = gemm.source;
  report.gemm_size = gemm.size;
  report.ceilings.bytes_per_s = measure_copy_bandwidth(device, copy_bytes, repeats);
  report.copy_bytes = copy_bytes;

  if (train) {
    std::cerr << "  PPO iterations, the diagnostic pass\n";
    const TrainPhaseTiming timing = time_train_phases(spec.name, device, trainer.train, repeats);
    throughput::PpoShapes shapes;
    shapes.obs_dim = spec.obs_dim;
    shapes.num_actions = spec.num_actions;
    shapes.action_dim = spec.action_dim;
    shapes.hidden = trainer.train.hidden;
    shapes.num_envs = num_envs;
    shapes.num_steps = steps;
    shapes.update_epochs = trainer.train.update_epochs;
    shapes.num_minibatches = trainer.train.num_minibatches;
    const std::vector<throughput::PhaseWork> work = throughput::ppo_iteration_work(shapes, spec);
    // ppo_iteration_work lists the phases in rl::TrainPhase order; what no phase holds is "other".
    for (std::size_t k = 0; k < work.size(); ++k)
      report.phases.push_back({work[k], "iteration", timing.seconds[k], {}});
    report.iteration.seconds = timing.iteration_seconds;
    report.iteration.other_seconds = timing.seconds[static_cast<std::size_t>(rl::TrainPhase::Other)];
  } else {
    std::cerr << "  env step, fused\n";
    env.step_mode = false;
    const EnvBenchRun fused = run_env_bench(env);
    report.phases.push_back({throughput::fused_env_step_work(spec, steps), "env-step", 1.0 / fused.rate, {}});
    std::cerr << "  env step, one launch per step\n";
    env.step_mode = true;
    const EnvBenchRun stepwise = run_env_bench(env);
    report.phases.push_back({throughput::stepwise_env_step_work(spec), "env-step", 1.0 / stepwise.rate, {}});
  }
  throughput::place_phases(report);

  std::cout << what << " of " << spec.name << " on " << device.str() << ", " << num_envs << " envs x " << steps
            << " steps\n"
            << throughput::roofline_table(report);
  files.write([&] { return throughput::roofline_json(report, SURGE_VERSION); },
              [&] { return throughput::roofline_svg(report); });
  return 0;
}

}  // namespace surge::cli
