#include "tools/cli/auto_num_envs.hpp"

#include <cstdio>

#include "tools/bench/sweep_runner.hpp"

namespace surge::cli {

AutoNumEnvs recommend_num_envs(const std::string& scenario, Device device, const rl::TrainConfig& config) {
  const bool gpu = device.is_cuda();
  SweepSettings settings;
  settings.what = "train";
  settings.scenario = scenario;
  settings.device = device;
  settings.train = config;
  settings.steps = config.num_steps;
  settings.seed = config.seed;
  // Short: the answer needs the shape of the curve, not three significant digits.
  settings.from = gpu ? 1024 : 16;
  settings.to = gpu ? std::int64_t(1) << 22 : 1024;
  settings.min_env_steps = gpu ? std::int64_t(1) << 22 : std::int64_t(1) << 11;
  settings.repeats = 3;
  settings.command = "surge train --num-envs auto";
  const throughput::SweepResult result = run_sweep(settings);
  const throughput::ScalingAnalysis& a = result.analysis;
  AutoNumEnvs choice;
  choice.num_envs = result.points[a.recommended].num_envs;
  char line[256];
  std::snprintf(line, sizeof line,
                "--num-envs auto: %lld (%.4g env-steps/s of training; best %.4g at %lld; sweep stopped: %s)",
                static_cast<long long>(choice.num_envs), result.points[a.recommended].rate, result.points[a.best].rate,
                static_cast<long long>(result.points[a.best].num_envs), result.stop_detail.c_str());
  choice.summary = line;
  return choice;
}

}  // namespace surge::cli
