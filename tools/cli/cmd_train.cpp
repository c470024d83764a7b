// surge train: PPO on one scenario, with metrics.csv, config.toml and a checkpoint in the output folder.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
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
#include "tools/cli/physics_option.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/cli/train_output.hpp"
#include "tools/cli/train_rollout_log.hpp"

namespace surge::cli {
namespace {

// The config: file (built-in or --config), its [cuda] table on a GPU, the preset, then the flags, then --set.
rl::TrainConfig build_config(const Command& cmd, const std::string& scenario, Device device) {
  std::string text, source;
  if (cmd.has("config")) {
    source = cmd.get("config");
    try {
      text = read_text_file(source, "config file");
    } catch (const InputError& error) {
      throw InputError(cmd.complaint(error.what()));
    }
  } else {
    text = default_train_config(scenario);
    source = default_train_config_name(scenario);
    if (text.empty() && cmd.has("preset"))
      throw InputError(cmd.complaint("scenario " + scenario + " has no built-in config to take preset '" +
                                     cmd.get("preset") + "' from; pass --config FILE.toml"));
  }
  rl::TrainConfig config =
      rl::load_train_config(text, source, device.is_cuda(), cmd.has("preset") ? cmd.get("preset") : "");
  const bool auto_num_envs = cmd.has("num-envs") && cmd.get("num-envs") == "auto";
  if (cmd.has("num-envs") && !auto_num_envs) config.num_envs = cmd.get_int("num-envs", 1, std::int64_t(1) << 32);
  if (cmd.has("num-steps")) config.num_steps = cmd.get_int("num-steps", 1, std::int64_t(1) << 24);
  if (cmd.has("total-steps")) config.total_steps = cmd.get_int("total-steps", 1, std::int64_t(1) << 50);
  if (cmd.has("seed")) config.seed = cmd.get_u64("seed");
  if (cmd.flag_set("no-graph")) config.cuda_graph = false;
  set_physics(config.physics, physics_options(cmd));
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
              "Trains a PPO agent (separate actor and critic MLPs; a categorical policy for discrete actions,\n"
              "a diagonal Gaussian with a state-independent log-std for continuous ones, whose samples reach\n"
              "the environment clipped to the action bounds) on N environments of a scenario. Every iteration\n"
              "steps each environment T times, computes GAE, and runs E epochs of M minibatch updates, all on\n"
              "one device with no host synchronisation inside the iteration.\n"
              "Writes DIR/metrics.csv (one row per iteration), DIR/config.toml (the config used) and\n"
              "DIR/checkpoint.h5 (parameters, optimiser state, config; see `surge eval`), and ends with a\n"
              "one-line summary.");
  cmd.option("scenario", "NAME", "scenario to train on", "cartpole")
      .option("device", "DEV", device_help(), "auto")
      .option("num-envs", "N",
              "environments stepped together (config key num_envs), or auto: what a short training "
              "sweep on this device recommends (surge bench sweep --what train)")
      .option("num-steps", "T", "steps per environment per iteration (num_steps)")
      .option("total-steps", "S", "environment steps in the whole run (total_steps)")
      .option("seed", "K", "random seed of environments, initialisation, actions and shuffles (seed)")
      .option("config", "FILE.toml", "read the config from FILE instead of the scenario's built-in one")
      .option("preset", "NAME", "apply the config's [presets.NAME] table, e.g. cleanrl (CleanRL's ppo.py defaults)")
      .repeated("set", "KEY=VALUE",
                "set one config key, in TOML syntax (e.g. learning_rate=1e-3, hidden=[32,32], "
                "physics.masspole=[0.05,0.2])");
  add_physics_option(cmd)
      .option("target-return", "R", "stop once the mean return of the last 100 finished episodes reaches R")
      .option("out", "DIR", "output folder (created if missing)", "runs/<scenario>")
      .flag("no-graph", "on CUDA, launch every kernel instead of replaying a CUDA graph (cuda_graph = false)")
      .flag("dry-run", "print the memory plan (every buffer, the total, whether it fits) and stop")
      .option("checkpoint-every", "K", "also write DIR/checkpoint.h5 every K iterations (0: at the end only)", "0")
      .option("stop-after", "K", "stop after K iterations of this run, writing the checkpoint as at the end")
      .option("resume", "CKPT",
              "continue the run that wrote checkpoint CKPT, exactly; its config and scenario are used "
              "(--out defaults to CKPT's folder)")
      .option("log-rollouts", "FILE.h5", "log rollouts to FILE.h5 (HDF5; see 'surge h5' and docs/hdf5-schema.md)")
      .option("log-every", "K", "log iterations 1, 1+K, 1+2K, ...", "10")
      .option("log-envs", "M", "log environments 0 .. M-1 (by default at most 64)", "64")
      .option("log-queue", "Q",
              "logged iterations held in host memory for the writer; when all Q wait, an iteration "
              "is dropped (and counted) rather than slowing training",
              "4")
      .note(
          "Precedence: built-in defaults < config file < its [cuda] table (on a GPU) < --preset < the flags\n"
          "above < --set.")
      .note(
          "Domain randomisation: a config's [physics] table (masspole = 0.2 fixes a value, masspole = [0.05, 0.2]\n"
          "draws it from U(0.05, 0.2) per environment at every reset), --physics or --set physics.NAME=...; the\n"
          "start line names what differs from the defaults, and config.toml and the checkpoint keep it.")
      .note(
          "SIGINT (Ctrl-C) or SIGTERM stops the run at the end of the current iteration: metrics.csv, the\n"
          "rollout log and DIR/checkpoint.h5 are written whole, and the run can go on with --resume. A second\n"
          "signal ends the process at once. Metrics also go to DIR/tb as TensorBoard scalars.")
      .note(keys_note())
      .example("surge train --scenario cartpole --device cpu --target-return 475")
      .example("surge train --scenario cartpole --preset cleanrl --out runs/cleanrl")
      .example("surge train --device cuda --num-envs 1048576 --set learning_rate=1e-3 --out runs/big")
      .example("surge train --device cuda --num-envs 16777216 --dry-run")
      .example("surge train --out runs/a --log-rollouts runs/a/rollouts.h5 --log-every 5 --log-envs 256")
      .example("surge train --scenario cartpole --physics masspole=0.05:0.2,length=0.4:0.6 --out runs/dr")
      .example("surge train --resume runs/a/checkpoint.h5");
  if (!cmd.parse(args)) {
    std::cout << cmd.usage();
    return 0;
  }
  // --resume takes the scenario and config from the checkpoint; flags that would change them are refused.
  const std::string resume_path = cmd.has("resume") ? cmd.get("resume") : "";
  if (!resume_path.empty())
    for (const char* fixed : {"scenario", "config", "preset", "set", "physics", "num-envs", "num-steps", "seed"})
      if (!cmd.get_all(fixed).empty())
        throw InputError(cmd.complaint("--resume continues the run as it was configured, so --" + std::string(fixed) +
                                       " cannot be given with it"));
  std::optional<rl::Checkpoint> resumed;
  rl::ResumeState resume_state;
  if (!resume_path.empty()) {
    cmd.naming_errors([&] {
      resumed = rl::read_checkpoint(resume_path);
      rl::require_scenario(*resumed, scenario_spec(resumed->scenario));
      resume_state = rl::read_resume_state(resume_path);
    });
    if (resume_state.metrics_columns != TrainOutput::columns())
      throw InputError("checkpoint '" + resume_path +
                       "' keeps metrics with other columns; it was written by another "
                       "version of surge train");
  }
  const std::string scenario = resumed ? resumed->scenario : cmd.get("scenario");
  const ScenarioSpec& spec = scenario_spec(scenario);
  const Device device = resolve_device(cmd.get("device"));
  rl::TrainConfig config =
      resume_path.empty() ? cmd.naming_errors([&] { return build_config(cmd, scenario, device); }) : rl::TrainConfig{};
  if (resumed) {
    config = resumed->config;
    if (cmd.has("total-steps")) config.total_steps = cmd.get_int("total-steps", 1, std::int64_t(1) << 50);
    if (cmd.flag_set("no-graph")) config.cuda_graph = false;
    cmd.naming_errors([&] { config.validate(); });
  }
  // Checked against the scenario before anything is written.
  const PhysicsConfig physics = resolve_physics(spec, config.physics);
  const double target = cmd.has("target-return") ? cmd.get_double("target-return", -1e300, 1e300) : NAN;
  // Every buffer is sized from the config: a run that would not fit stops here, before it allocates.
  MemoryPlan plan = engine_memory_plan(scenario, device, config.num_envs);
  plan.append(rl::Trainer::memory_plan(config, spec, device));
  if (cmd.flag_set("dry-run")) {
    std::cout << plan.table(available_memory(device));
    return 0;
  }
  plan.require_fits("surge train on " + device.str(),
                    "lower --num-envs or --num-steps, or raise num_minibatches (--dry-run shows the plan)");
  const std::int64_t checkpoint_every = cmd.get_int("checkpoint-every", 0, std::int64_t(1) << 40);
  const std::int64_t stop_after = cmd.has("stop-after") ? cmd.get_int("stop-after", 1, std::int64_t(1) << 40) : -1;
  std::string out_dir = cmd.get("out");
  if (out_dir == "runs/<scenario>") {
    const std::string resume_folder = std::filesystem::path(resume_path).parent_path().string();
    out_dir = !resume_path.empty() ? (resume_folder.empty() ? "." : resume_folder) : "runs/" + scenario;
  }
  TrainOutput output(out_dir, cmd.complaint("cannot use --out " + out_dir));
  const std::string checkpoint_path = output.dir() + "/checkpoint.h5";

  auto engine = make_engine(scenario, device, config.num_envs, config.seed, physics);
  rl::Trainer trainer(*engine, config);
  std::int64_t first_iteration = 0;  // iterations already done by the run this one continues
  if (resumed) {
    cmd.naming_errors([&] { resume_state.restore(*resumed, trainer, *engine); });
    output.restore_rows(resume_state.metrics_rows);
    first_iteration = resume_state.iteration();
  }
  std::unique_ptr<rl::RolloutLog> rollout_log;
  if (cmd.has("log-rollouts")) {
    RolloutLogRequest request;
    request.path = cmd.get("log-rollouts");
    request.every = cmd.get_int("log-every", 1, std::int64_t(1) << 40);
    // The default takes at most all the environments there are; a number asked for must fit.
    request.envs = cmd.get_all("log-envs").empty() ? std::min<std::int64_t>(64, config.num_envs)
                                                   : cmd.get_int("log-envs", 1, config.num_envs);
    request.queue_depth = static_cast<int>(cmd.get_int("log-queue", 1, 64));
    rollout_log = open_train_rollout_log(request, *engine, trainer, resumed ? first_iteration + 1 : -1);
  }
  output.write_config(config, spec, device);

  const bool tty = ::isatty(STDERR_FILENO);
  std::cerr << "surge train: " << scenario << " on " << device.str() << ", " << config.num_envs << " envs x "
            << config.num_steps << " steps, " << trainer.num_iterations() << " iterations ("
            << config.num_iterations() * config.batch_size() << " steps)"
            << (trainer.uses_graph() ? ", CUDA graph" : "");
  if (physics.any_randomized() || !config.physics.empty())
    std::cerr << ", physics: " << describe_physics(spec, physics);
  if (!resume_path.empty()) std::cerr << ", resumed after iteration " << first_iteration;
  std::cerr << "\n";

  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
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
  // A checkpoint carries the metrics rows so far, so it waits for the latest iteration first. A build
  // without HDF5 writes none, and says so at the end.
  auto save_checkpoint = [&] {
    if (!rl::checkpoints_available()) return;
    consume(trainer.drain());
    rl::ResumeState state = rl::ResumeState::capture(trainer, *engine);
    state.metrics_columns = TrainOutput::columns();
    state.metrics_rows = output.rows();
    rl::write_resumable_checkpoint(checkpoint_path, trainer, state);
  };
  StopSignals signals;
  std::int64_t done = first_iteration;
  for (std::int64_t k = first_iteration; k < trainer.num_iterations() && !stop && !signals.requested(); ++k) {
    if (stop_after >= 0 && k - first_iteration >= stop_after) break;
    // Iterations are numbered from 1 in the log, as in metrics.csv.
    if (rollout_log) rollout_log->begin_iteration(k + 1, trainer.stream());
    trainer.iterate();
    if (rollout_log) rollout_log->end_iteration((k + 1) * config.batch_size(), trainer.stream());
    done = k + 1;
    consume(trainer.ready_metrics());
    output.flush_every(5.0);
    if (checkpoint_every > 0 && done % checkpoint_every == 0 && done < trainer.num_iterations()) save_checkpoint();
  }
  consume(trainer.drain());
  progress.finish();
  output.write_metrics();
  if (rollout_log) {
    rollout_log->close();
    const rl::RolloutLogStats logged = rollout_log->stats();
    if (!logged.failed)
      std::cerr << "surge train: logged " << logged.written << " iterations to " << rollout_log->path()
                << (logged.dropped ? " (" + std::to_string(logged.dropped) + " dropped: the disk did not keep up)" : "")
                << "\n";
  }
  save_checkpoint();
  if (!rl::checkpoints_available())
    std::cerr
        << "surge train: this build has no HDF5, so no checkpoint.h5 was written (install libhdf5-dev and rebuild)\n";
  const RunSummary summary = output.summary(target, target_time, target_step);
  std::cout << summary.line << "\n";
  const bool cut_short = done < trainer.num_iterations() && !stop;
  if (cut_short) {
    const std::string why = signals.requested()
                                ? std::string("stopped by ") + StopSignals::name(signals.signal_number())
                                : "stopped as asked (--stop-after)";
    std::cerr << "surge train: " << why << " after iteration " << done << " of " << trainer.num_iterations()
              << "; metrics.csv and checkpoint.h5 are written; continue with: surge train --resume " << checkpoint_path
              << "\n";
    if (signals.requested()) return StopSignals::exit_code(signals.signal_number());
  }
  return 0;
}

}  // namespace surge::cli
