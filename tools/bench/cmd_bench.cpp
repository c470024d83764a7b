// surge bench: throughput measurements that report medians.
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/timer.hpp"
#include "tools/bench/bench_buffers.hpp"
#include "tools/bench/bench_report.hpp"
#include "tools/bench/env_bench.hpp"
#include "tools/bench/render_bench.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/json.hpp"
#include "tools/cli/physics_option.hpp"
#include "tools/cli/version.hpp"
#include "tools/cli/video_recording.hpp"

namespace surge::cli {
namespace {

int bench_env(const Args& args) {
  Command cmd("bench env",
              "Steps N environments T times with uniform random actions drawn on the device, writing\n"
              "[T][N] observation, reward and flag buffers as a rollout would, and reports the median\n"
              "env-steps per second over the repeats and the bytes written per env-step. Also measures the\n"
              "device's copy bandwidth in the same run and the fraction of it the rollout writes reach.");
  cmd.option("scenario", "NAME", "scenario to step", "cartpole")
      .option("num-envs", "N", "number of environments", "65536")
      .option("steps", "T", "steps per timed rollout", "128")
      .option("device", "DEV", device_help(), "auto")
      .option("repeats", "R", "timed rollouts; the median is reported", "5")
      .option("mode", "MODE",
              "fused: one launch steps T times with the env in registers; step: one launch per step, "
              "actions in a buffer, as training runs it",
              "fused")
      .option("seed", "K", "random seed", "1")
      .option("json", "FILE", "also write the results as JSON")
      .option("render", "WxH", "also draw every environment's frame after each step (render_bench.hpp)")
      .flag("grayscale", "with --render or --observation pixels: grey frames")
      .option("observation", "KIND", "vector, or pixels: step pixel observations into a frame store (pixel_obs.hpp)",
              "vector")
      .option("frame-size", "S", "with --observation pixels: S x S frames (8 to 512; default 84)")
      .option("frame-stack", "K", "with --observation pixels: frames per stack (1 to 16; default 4)")
      .flag("dry-run", "print the memory plan (every buffer, the total, whether it fits) and stop");
  add_physics_option(cmd)
      .example("surge bench env --scenario cartpole --num-envs 65536 --steps 128 --device cpu")
      .example("surge bench env --scenario acrobot --physics link_mass_2=0.5:1.5,gravity=9.8 --device cpu")
      .example("surge bench env --num-envs 1048576 --device cuda --json bench.json")
      .example("surge bench env --num-envs 16777216 --steps 256 --device cuda --dry-run")
      .example(
          "surge bench env --observation pixels --frame-size 84 --grayscale --num-envs 4096 --steps 32 --device cpu");
  if (!cmd.parse_or_print_usage(args)) return 0;
  const ScenarioSpec& spec = scenario_spec(cmd.get("scenario"));
  const PhysicsConfig physics = resolve_physics(spec, physics_options(cmd));
  const std::int64_t num_envs = cmd.get_int("num-envs", 1, std::int64_t(1) << 31);
  const std::int64_t steps = cmd.get_int("steps", 1, 1 << 20);
  const int repeats = static_cast<int>(cmd.get_int("repeats", 1, 1000));
  const std::string mode = bench_mode(cmd);
  const std::uint64_t seed = cmd.get_u64("seed");
  const std::string json_path = cmd.has("json") ? cmd.get("json") : "";
  if (!json_path.empty()) require_creatable(json_path, "JSON report");
  const Device device = resolve_device(cmd.get("device"));
  const std::string observation = cmd.get("observation");
  if (observation != "vector" && observation != "pixels")
    throw InputError("--observation '" + format_excerpt(observation) + "' is not known; use vector or pixels");
  if (observation == "vector" && (cmd.has("frame-size") || cmd.has("frame-stack")))
    throw InputError("--frame-size and --frame-stack measure pixel observations; add --observation pixels");
  if (observation == "pixels") {
    if (cmd.has("render")) throw InputError("--render and --observation pixels both draw frames; give one");
    const int side = cmd.has("frame-size") ? static_cast<int>(cmd.get_int("frame-size", 8, 512)) : 84;
    RenderBenchConfig pixels{&spec, device, num_envs, steps, repeats, seed, {side, side, 3}};
    pixels.frame.channels = cmd.flag_set("grayscale") ? 1 : 3;
    return run_pixel_bench(pixels, cmd.has("frame-stack") ? static_cast<int>(cmd.get_int("frame-stack", 1, 16)) : 4,
                           cmd.flag_set("dry-run"));
  }
  if (cmd.has("render")) {
    RenderBenchConfig render{&spec, device, num_envs, steps, repeats, seed, parse_frame_size(cmd.get("render"))};
    render.frame.channels = cmd.flag_set("grayscale") ? 1 : 3;
    return run_render_bench(render);
  }

  // Stop before allocating anything when the run cannot fit.
  const bool step_mode = mode == "step";
  const MemoryPlan plan = bench_env_memory_plan(spec, device, num_envs, steps, step_mode);
  if (cmd.flag_set("dry-run")) {
    std::cout << plan.table(available_memory(device));
    return 0;
  }
  plan.require_fits("surge bench env with " + std::to_string(num_envs) + " envs x " + std::to_string(steps) + " steps",
                    "lower --num-envs or --steps (--dry-run shows the plan)");

  EnvBenchConfig config = env_bench_config(spec.name, device, num_envs, steps, repeats, seed);
  config.step_mode = step_mode;
  config.physics = physics;
  config.show_progress = ::isatty(STDERR_FILENO);
  std::cerr << "surge bench env: " << spec.name << " on " << device.str() << ", " << num_envs << " envs x " << steps
            << " steps, " << repeats << " repeats (" << mode << ")\n";
  const EnvBenchRun run = run_env_bench(config);
  const std::vector<double>& rates = run.rates;
  const EpisodeStats& episodes = run.episodes;
  const double rate = run.rate;
  const std::size_t bytes_per_step = rollout_bytes_per_env_step(spec);
  const double write_gb_per_s = rate * static_cast<double>(bytes_per_step) * 1e-9;
  const std::size_t copy_bytes_size = bench_copy_bytes(spec, num_envs, steps);
  const double copy_gb_per_s = measure_copy_bandwidth(device, copy_bytes_size, 5) * 1e-9;
  const double fraction = write_gb_per_s / copy_gb_per_s;

  std::printf("scenario                 %s\n", spec.name.c_str());
  std::printf("device                   %s\n", device.str().c_str());
  std::printf("num_envs x steps         %lld x %lld (%s)\n", static_cast<long long>(num_envs),
              static_cast<long long>(steps), mode.c_str());
  std::printf("env-steps/s (median)     %s   [min %s, max %s]\n", format_rate(rate).c_str(),
              format_rate(*std::min_element(rates.begin(), rates.end())).c_str(),
              format_rate(*std::max_element(rates.begin(), rates.end())).c_str());
  std::printf("ns per env-step          %.3g\n", 1e9 / rate);
  std::printf("bytes written per step   %zu\n", bytes_per_step);
  std::printf("write bandwidth          %.3g GB/s\n", write_gb_per_s);
  std::printf("copy bandwidth           %.3g GB/s (read + write, %zu MiB copied)\n", copy_gb_per_s,
              copy_bytes_size >> 20);
  std::printf("fraction of copy bw      %.3f\n", fraction);
  std::printf("episodes finished        %.0f (mean return %.2f, mean length %.1f)\n", episodes.episodes,
              episodes.mean_return(), episodes.mean_length());
  std::printf("randomised physics       %s\n", run.physics.c_str());
  std::printf("physics vs defaults      %s\n", describe_physics(spec, physics).c_str());

  if (!json_path.empty()) {
    JsonObject json = benchmark_json(SURGE_VERSION, "env", "", spec.name, device.str());
    json.add("mode", mode)
        .add("num_envs", num_envs)
        .add("steps", steps)
        .add("repeats", repeats)
        .add("env_steps_per_s", rate)
        .add("env_steps_per_s_runs", rates)
        .add("ns_per_env_step", 1e9 / rate)
        .add("bytes_per_step", static_cast<std::int64_t>(bytes_per_step))
        .add("write_gb_per_s", write_gb_per_s)
        .add("copy_gb_per_s", copy_gb_per_s)
        .add("fraction_of_copy_bandwidth", fraction)
        .add("planned_device_bytes", static_cast<std::int64_t>(plan.allocated_bytes()))
        .add("engine_device_bytes", static_cast<std::int64_t>(run.engine_bytes))
        .add("rollout_device_bytes", static_cast<std::int64_t>(run.rollout_bytes))
        .add("episodes_finished", episodes.episodes)
        .add("mean_episode_return", episodes.mean_return())
        .add("randomised_physics", run.physics)
        .add("physics", physics_json(spec, physics));
    write_atomically(json_path, json.str() + "\n");
  }
  return 0;
}

}  // namespace

int run_bench(const Args& args) {
  const char* usage =
      "Usage: surge bench <what> [options]\n\n"
      "Benchmarks that report medians over repeated runs.\n\n"
      "  env       environment stepping throughput (env-steps/s, bytes per step, fraction of copy bandwidth)\n"
      "  sweep     the batch-doubling search: env-steps/s against N, the knee, a recommended --num-envs\n"
      "  roofline  each phase's FLOPs and bytes against the measured SGEMM rate and copy bandwidth\n"
      "  train     end-to-end PPO training throughput (env-steps/s), CUDA graphs on and off\n\n"
      "See 'surge bench <what> --help'.\n";
  if (args.empty())
    throw InputError("surge bench: name the benchmark: env, sweep, roofline or train; see 'surge bench --help'");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "env") return bench_env(rest);
  if (args[0] == "sweep") return run_bench_sweep(rest);
  if (args[0] == "roofline") return run_bench_roofline(rest);
  if (args[0] == "train") return run_bench_train(rest);
  throw InputError("surge bench: unknown benchmark '" + args[0] +
                   "': known benchmarks are env, sweep, roofline, train; see 'surge bench --help'");
}

}  // namespace surge::cli
