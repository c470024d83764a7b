// surge train: PPO on one scenario, with metrics.csv, config.toml and a checkpoint in the output folder.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "rl/train_config.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "scenarios/train_configs.hpp"
#include "sim/error.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/auto_num_envs.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/train_output.hpp"

#if defined(SURGE_WITH_CHECKPOINTS)
#include "rl/checkpoint.hpp"
#endif

namespace surge::cli {
namespace {

// The config: file (built-in or --config), its [cuda] table on a GPU, the preset, then the flags, then --set.
rl::TrainConfig build_config(const Command& cmd, const std::string& scenario, Device device) {
  std::string text, source;
  if (cmd.has("config")) {
    source = cmd.get("config");
    std::ifstream in(source);
    if (!in) throw InputError(cmd.complaint("cannot read config file '" + source + "'"));
    std::ostringstream contents;
    contents << in.rdbuf();
    text = contents.str();
  } else {
    text = default_train_config(scenario);
    source = default_train_config_name(scenario);
    if (text.empty() && cmd.has("preset"))
      throw InputError(cmd.complaint("scenario " + scenario + " has no built-in config to take preset '" +
                                     cmd.get("preset") + "' from; pass --config FILE.toml"));
  }
  rl::TrainConfig config = rl::load_train_config(text, source, device.is_cuda(), cmd.has("preset") ? cmd.get("preset") : "");
  const bool auto_num_envs = cmd.has("num-envs") && cmd.get("num-envs") == "auto";
  if (cmd.has("num-envs") && !auto_num_envs) config.num_envs = cmd.get_int("num-envs", 1, std::int64_t(1) << 32);
  if (cmd.has("num-steps")) config.num_steps = cmd.get_int("num-steps", 1, std::int64_t(1) << 24);
  if (cmd.has("total-steps")) config.total_steps = cmd.get_int("total-steps", 1, std::int64_t(1) << 50);
  if (cmd.has("seed")) config.seed = cmd.get_u64("seed");
  if (cmd.flag_set("no-graph")) config.cuda_graph = false;
  for (const std::string& setting : cmd.get_all("set")) rl::apply_config_setting(config, setting);
  if (auto_num_envs) {
    // The rest of the config first: the sweep trains with it, only N varies.
    const AutoNumEnvs choice = recommend_num_envs(scenario, device, config);
    std::cerr << "surge train: " << choice.summary << "\n";
    config.num_envs = choice.num_envs;
  }
  config.validate();
  return config;
}

std::string keys_note() {
  std::string note = "Config keys (for --set and config files; `surge train --help` shows the built-in values):\n  ";
  std::size_t column = 2;
  const auto keys = rl::train_config_keys();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::string item = keys[k] + (k + 1 < keys.size() ? ", " : "");
    if (column + item.size() > 100) {
      note += "\n  ";
      column = 2;
    }
    note += item;
    column += item.size();
  }
  return note;
}

}  // namespace

int run_train(const Args& args) {
  Command cmd("train",
              "Trains a PPO agent (separate actor and critic MLPs, categorical policy) on N environments of a\n"
              "scenario. Every iteration steps each environment T times, computes GAE, and runs E epochs of M\n"
              "minibatch updates, all on one device with no host synchronisation inside the iteration.\n"
              "Writes DIR/metrics.csv (one row per iteration), DIR/config.toml (the config used) and\n"
              "DIR/checkpoint.h5 (parameters, optimiser state, config; see `surge eval`), and ends with a\n"
              "one-line summary.");
  cmd.option("scenario", "NAME", "scenario to train on", "cartpole")
      .option("device", "DEV", device_help(), "auto")
      .option("num-envs", "N", "environments stepped together (config key num_envs), or auto: what a short training "
                               "sweep on this device recommends (surge bench sweep --what train)")
      .option("num-steps", "T", "steps per environment per iteration (num_steps)")
      .option("total-steps", "S", "environment steps in the whole run (total_steps)")
      .option("seed", "K", "random seed of environments, initialisation, actions and shuffles (seed)")
      .option("config", "FILE.toml", "read the config from FILE instead of the scenario's built-in one")
      .option("preset", "NAME", "apply the config's [presets.NAME] table, e.g. cleanrl (CleanRL's ppo.py defaults)")
      .repeated("set", "KEY=VALUE", "set one config key, in TOML syntax (e.g. learning_rate=1e-3, hidden=[32,32])")
      .option("target-return", "R", "stop once the mean return of the last 100 finished episodes reaches R")
      .option("out", "DIR", "output folder (created if missing)", "runs/<scenario>")
      .flag("no-graph", "on CUDA, launch every kernel instead of replaying a CUDA graph (cuda_graph = false)")
      .flag("dry-run", "print the memory plan (every buffer, the total, whether it fits) and stop")
      .note("Precedence: built-in defaults < config file < its [cuda] table (on a GPU) < --preset < the flags\n"
            "above < --set.")
      .note(keys_note())
      .example("surge train --scenario cartpole --device cpu --target-return 475")
      .example("surge train --scenario cartpole --preset cleanrl --out runs/cleanrl")
      .example("surge train --device cuda --num-envs 1048576 --set learning_rate=1e-3 --out runs/big")
      .example("surge train --device cuda --num-envs 16777216 --dry-run");
  if (!cmd.parse(args)) {
    std::cout << cmd.usage();
    return 0;
  }
  const std::string scenario = cmd.get("scenario");
  const ScenarioSpec& spec = scenario_spec(scenario);
  const Device device = resolve_device(cmd.get("device"));
  const rl::TrainConfig config = build_config(cmd, scenario, device);
  const double target = cmd.has("target-return") ? cmd.get_double("target-return", -1e300, 1e300) : NAN;
  // Every buffer is sized from the config: a run that would not fit stops here, before it allocates.
  MemoryPlan plan = engine_memory_plan(scenario, device, config.num_envs);
  for (const rl::TrainerBuffer& buffer : rl::Trainer::memory_plan(config, spec, device))
    plan.add(buffer.name, buffer.shape, buffer.elements, buffer.element_bytes);
  if (cmd.flag_set("dry-run")) {
    std::cout << plan.table(available_memory(device));
    return 0;
  }
  plan.require_fits("surge train on " + device.str(),
                    "lower --num-envs or --num-steps, or raise num_minibatches (--dry-run shows the plan)");
  std::string out_dir = cmd.get("out");
  if (out_dir == "runs/<scenario>") out_dir = "runs/" + scenario;
  TrainOutput output(out_dir, cmd.complaint("cannot use --out " + out_dir));

  auto engine = make_engine(scenario, device, config.num_envs, config.seed);
  rl::Trainer trainer(*engine, config);
  output.write_config(config, spec, device);

  const bool tty = ::isatty(STDERR_FILENO);
  std::cerr << "surge train: " << scenario << " on " << device.str() << ", " << config.num_envs << " envs x "
            << config.num_steps << " steps, " << trainer.num_iterations() << " iterations ("
            << config.num_iterations() * config.batch_size() << " steps)"
            << (trainer.uses_graph() ? ", CUDA graph" : "") << "\n";

  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  ProgressPrinter progress(tty, trainer.num_iterations());
  double target_time = NAN, target_step = NAN;
  bool stop = false;
  auto consume = [&](const std::vector<rl::IterationMetrics>& ready) {
    for (const rl::IterationMetrics& m : ready) {
      const double wall = seconds_since_start();
      output.add_row(m, wall);
      progress.update(m, wall);
      if (!std::isnan(target) && std::isnan(target_time) && m.recent_episodes >= rl::kRecentEpisodes &&
          m.return_last100 >= target) {
        target_time = wall;
        target_step = m.global_step;
        stop = true;
      }
    }
  };
  for (std::int64_t k = 0; k < trainer.num_iterations() && !stop; ++k) {
    trainer.iterate();
    consume(trainer.ready_metrics());
    output.flush_every(5.0);
  }
  consume(trainer.drain());
  progress.finish();
  output.write_metrics();
#if defined(SURGE_WITH_CHECKPOINTS)
  rl::write_checkpoint(output.dir() + "/checkpoint.h5", trainer);
#else
  std::cerr << "surge train: this build has no HDF5, so no checkpoint.h5 was written (install libhdf5-dev and rebuild)\n";
#endif

  const RunSummary summary = output.summary(target, target_time, target_step);
  std::cout << summary.line << "\n";
  return 0;
}

}  // namespace surge::cli
