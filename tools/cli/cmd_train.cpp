// surge train: PPO on one scenario (or several seeds of it), into a run folder that holds metrics.csv,
// config.toml, checkpoint.h5 (best.h5 with evaluation) and TensorBoard events.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/auto_num_envs.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/run_folder.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/cli/train_agents.hpp"
#include "tools/cli/train_eval.hpp"
#include "tools/cli/train_output.hpp"
#include "tools/cli/train_ranks.hpp"
#include "tools/cli/train_rollout_log.hpp"
#include "tools/cli/train_seeds.hpp"
#include "tools/cli/train_setup.hpp"

namespace surge::cli {
namespace {

// Everything a run needs, checked before anything is written.
struct RunPlan {
  rl::TrainConfig config;
  PhysicsConfig physics;
  Device device = Device::cpu();
  double target = NAN;
  std::int64_t checkpoint_every = 0, stop_after = -1;
  std::optional<RolloutLogRequest> log;
  std::vector<bool> log_ranks{true};  // --log-ranks: a flag per rank
  RunFolder::Reuse reuse = RunFolder::Reuse::Refuse;
  std::optional<rl::Checkpoint> resumed;
  rl::ResumeState resume_state;
  std::string resume_path;
};

void declare(Command& cmd) {
  add_grid_option(add_config_options(cmd))
      .option("device", "DEV", device_help(), "auto")
      .option("seeds", "LIST",
              "train several seeds one after another, e.g. 1-5 or 1,4,9: DIR/seed<K> each, then a table "
              "across them (DIR/seeds.csv)")
      .option("target-return", "R", "stop once the mean return of the last 100 finished episodes reaches R")
      .option("out", "DIR",
              "the run's folder; by default a new one, runs/<scenario>/<date>-<time>-seed<K>. An existing "
              "folder that holds files is refused unless --overwrite or --resume")
      .flag("overwrite", "replace the run in --out (its metrics.csv, config.toml, checkpoints and tb/)")
      .flag("no-graph", "on CUDA, launch every kernel instead of replaying a CUDA graph (cuda_graph = false)")
      .flag("dry-run",
            "print the memory plan (every buffer, the total, whether it fits) and stop: exit 0 if it "
            "fits, 2 if not")
      .option("checkpoint-every", "K", "also write DIR/checkpoint.h5 every K iterations (0: at the end only)", "0")
      .option("stop-after", "K", "stop after K iterations of this run, writing the checkpoint as at the end")
      .option("resume", "CKPT",
              "continue the run that wrote checkpoint CKPT, exactly; its config and scenario are used "
              "(--out defaults to CKPT's folder). A run's folder stands for its checkpoint.h5; a run of several "
              "agents: give its folder")
      .option("log-rollouts", "FILE.h5", "log rollouts to FILE.h5 (HDF5; see 'surge h5' and docs/hdf5-schema.md)")
      .option("log-every", "K", "log iterations 1, 1+K, 1+2K, ...", "10")
      .option("log-envs", "M", "log environments 0 .. M-1 (by default at most 64)", "64")
      .option("log-ranks", "LIST",
              "under mpirun, the ranks whose rollouts are logged: all, or ranks such as 0,2; rank r > 0 writes "
              "FILE.rank<r>.h5 beside FILE.h5, its env_id holding the global environment numbers",
              "0")
      .option("log-queue", "Q",
              "logged iterations held in host memory for the writer; when all Q wait, an iteration "
              "is dropped (and counted) rather than slowing training",
              "4")
      .note(
          "Config: the scenario's built-in config (or --config FILE) < its [cuda] table (on a GPU) < --preset <\n"
          "the flags above < --set. `surge config show --scenario S` prints every key with its value and where it\n"
          "came from; a run's DIR/config.toml holds them all, so `surge train --config DIR/config.toml` repeats\n"
          "the run (bit for bit on the CPU).")
      .note(
          "Precision: --set precision=fp32 (default), bf16 (products of bf16 weights and activations summed in\n"
          "fp32; on the CPU with AVX-512 BF16, on CUDA from compute capability 8.0) or tf32 (CUDA only). Master\n"
          "weights, loss and Adam stay fp32. `surge doctor` lists what this machine runs; tf32 = true is an\n"
          "older name of precision = \"tf32\". See docs/throughput.md.")
      .note(
          "Evaluation: --set eval_every=K runs eval_episodes greedy episodes (--set eval_episodes=N, default 32)\n"
          "every K iterations on environments of their own; metrics.csv gets eval_return_mean and\n"
          "eval_return_std, and DIR/best.h5 keeps the checkpoint with the best evaluation.")
      .note(
          "Domain randomisation: a config's [physics] table (masspole = 0.2 fixes a value, masspole = [0.05, 0.2]\n"
          "draws it from U(0.05, 0.2) per environment at every reset), --physics or --set physics.NAME=...; the\n"
          "start line names what differs from the defaults, and config.toml and the checkpoint keep it.")
      .note(
          "SIGINT (Ctrl-C) or SIGTERM stops the run at the end of the current iteration: metrics.csv, the\n"
          "rollout log and DIR/checkpoint.h5 are written whole (a further signal is ignored while they are),\n"
          "and the run can go on with --resume. Metrics also go to DIR/tb as TensorBoard scalars.")
      .note(
          "Under mpirun (a build with MPI; `surge doctor` says): one rank per process, each with --num-envs\n"
          "environments of its own, gradients averaged after every minibatch; total_steps counts every rank's steps\n"
          "and rank 0 alone writes DIR; --resume continues such a run on as many ranks. A rank that waits in a sum\n"
          "for the others longer than rank_timeout_s (--set rank_timeout_s=S, default 60) ends the job with a line\n"
          "naming the ranks that did not arrive and their hosts. See docs/scaling.md.")
      .example("surge train --scenario cartpole --device cpu --target-return 475")
      .example("surge train --scenario acrobot --seeds 1-3 --out runs/acrobot-seeds")
      .example("surge train --config runs/cartpole/20261201-120000-seed1/config.toml --out runs/again")
      .example("surge train --scenario cartpole --preset cleanrl --set eval_every=10 --out runs/cleanrl")
      .example("surge train --device cuda --num-envs 1048576 --set learning_rate=1e-3 --out runs/big")
      .example("surge train --device cuda --num-envs 16777216 --dry-run")
      .example("surge train --out runs/a --log-rollouts runs/a-rollouts.h5 --log-every 5 --log-envs 256")
      .example("surge train --scenario cartpole --physics masspole=0.05:0.2,length=0.4:0.6 --out runs/dr")
      .example("surge train --resume runs/a/checkpoint.h5")
      .example("surge train --scenario cartpole --agents 8 --grid lr=1e-4,3e-4 --target-return 475 --out runs/g");
}

// Reads the checkpoint to continue and checks that nothing would change its config.
void read_resume(const Command& cmd, RunPlan& plan, int ranks) {
  plan.resume_path = cmd.get("resume");
  // A run's folder stands for the checkpoint the run keeps there.
  std::error_code error;
  const std::filesystem::path in_folder = std::filesystem::path(plan.resume_path) / "checkpoint.h5";
  if (std::filesystem::is_directory(plan.resume_path, error)) {
    if (!std::filesystem::is_regular_file(in_folder, error))
      throw InputError(cmd.complaint("--resume '" + plan.resume_path +
                                     "' is a folder without checkpoint.h5; give a run's folder or its checkpoint"));
    plan.resume_path = in_folder.string();
  }
  for (const char* fixed :
       {"scenario", "config", "preset", "set", "physics", "num-envs", "num-steps", "seed", "seeds", "overwrite"})
    if (!cmd.get_all(fixed).empty() || (std::string(fixed) == "overwrite" && cmd.flag_set("overwrite")))
      throw InputError(cmd.complaint("--resume continues the run as it was configured, so --" + std::string(fixed) +
                                     " cannot be given with it"));
  plan.resumed = rl::read_checkpoint(plan.resume_path);
  if (plan.resumed->ranks != ranks)
    throw InputError(cmd.complaint("checkpoint '" + plan.resume_path + "' was written by " +
                                   plural(plan.resumed->ranks, "rank") + ", and this run has " + std::to_string(ranks) +
                                   "; resume it with mpirun -np " + std::to_string(plan.resumed->ranks)));
  rl::require_scenario(*plan.resumed, scenario_spec(plan.resumed->scenario));
  plan.resume_state = rl::read_resume_state(plan.resume_path);
  TrainOutput::check_rows(plan.resume_state.metrics_rows, plan.resume_state.metrics_columns,
                          "checkpoint '" + plan.resume_path + "'");
  plan.config = plan.resumed->config;
  plan.config.scenario = plan.resumed->scenario;
  if (cmd.has("total-steps")) plan.config.total_steps = cmd.get_int("total-steps", 1, std::int64_t(1) << 50);
  if (cmd.flag_set("no-graph")) plan.config.cuda_graph = false;
  plan.config.validate();
  plan.reuse = RunFolder::Reuse::Resume;
}

// Whether a rank other than 0 logs rollouts.
bool ranks_log(const RunPlan& plan) {
  return plan.log && std::find(plan.log_ranks.begin() + 1, plan.log_ranks.end(), true) != plan.log_ranks.end();
}

struct RunOutcome {
  int exit_code = 0;
  SeedResult result;
};

RunOutcome train_run(const RunPlan& plan, const std::string& out_dir) {
  const rl::TrainConfig& config = plan.config;
  // Under mpirun, rank 0 is this run and writes everything; the others only train (train_ranks.hpp).
  rl::set_rank_timeout(config.rank_timeout_s, "surge train");
  const std::unique_ptr<rl::Collective> opened = rl::open_collective(plan.device);
  const rl::Collective& ranks = *opened;
  if (ranks.rank() != 0) {
    RankRun run{config, plan.physics, plan.device, plan.target, plan.stop_after, nullptr, &plan.resume_state, {}};
    if (plan.resumed) run.resumed = &*plan.resumed;
    run.ranks_log = ranks_log(plan);
    run.checkpoint_every = plan.checkpoint_every;
    if (plan.log && plan.log_ranks[ranks.rank()]) {
      run.log = plan.log;
      run.log->path = rank_log_path(plan.log->path, ranks.rank());
    }
    return {follow_run(run, ranks), {}};
  }
  const ScenarioSpec& spec = scenario_spec(config.scenario);
  RunFolder folder(out_dir, plan.reuse, "surge train");
  const std::string checkpoint_path = folder.dir() + "/checkpoint.h5";

  auto engine = make_engine(config.scenario, plan.device, config.num_envs, config.seed, plan.physics);
  const auto frames = make_frame_store(*engine, config.pixel_observations(), config.num_steps, config.frame_size,
                                       config.grayscale, config.frame_stack);
  rl::Trainer trainer(*engine, config, ranks, frames.get());
  std::int64_t first_iteration = 0;  // iterations already done by the run this one continues
  if (plan.resumed) {
    plan.resume_state.restore(*plan.resumed, trainer, *engine);
    first_iteration = plan.resume_state.iteration();
  }
  std::unique_ptr<rl::RolloutLog> rollout_log;
  if (plan.log && plan.log_ranks[0])
    rollout_log =
        open_train_rollout_log(*plan.log, *engine, trainer, plan.resumed ? first_iteration + 1 : -1, frames.get());
  if (ranks_log(plan)) logs_may_open(ranks);
  TrainOutput output =
      plan.resumed ? TrainOutput(folder.dir(), plan.resume_state.metrics_rows, plan.resume_state.metrics_columns)
                   : TrainOutput(folder.dir());
  output.write_config(config, spec, plan.device);
  folder.keep();

  say_device_notice();
  std::cerr << "surge train: " << config.scenario << " on " << plan.device.str() << ", "
            << (ranks.size() > 1 ? std::to_string(ranks.size()) + " ranks x " : "") << config.num_envs << " envs x "
            << config.num_steps << " steps, " << plural(trainer.num_iterations(), "iteration") << " ("
            << trainer.num_iterations() * config.batch_size() * ranks.size() << " steps)"
            << (trainer.uses_graph() ? ", CUDA graph" : "");
  if (plan.physics.any_randomized() || !config.physics.empty())
    std::cerr << ", physics: " << describe_physics(spec, plan.physics);
  if (plan.resumed) std::cerr << ", resumed after iteration " << first_iteration;
  std::cerr << "; into " << folder.dir() << "\n";

  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  ProgressPrinter progress(::isatty(STDERR_FILENO), trainer.num_iterations());
  double target_time = NAN, target_step = NAN;
  bool stop = false;
  auto consume = [&](const std::vector<rl::IterationMetrics>& ready) {
    for (const rl::IterationMetrics& m : ready) {
      const double wall = seconds_since_start();
      output.add_row(m, wall);
      progress.update(m, wall);
      if (std::isnan(target_time) && target_reached(plan.target, m)) {
        target_time = wall;
        target_step = m.global_step;
        stop = true;
      }
    }
  };
  // A checkpoint carries the metrics rows so far, so it waits for the latest iteration first, and every
  // rank's state (each rank captures it at the same boundary: train_ranks.hpp).
  auto capture_state = [&] {
    consume(trainer.drain());
    rl::ResumeState state = rl::ResumeState::capture(trainer, *engine);
    state.metrics_columns = TrainOutput::columns();
    state.metrics_rows = output.rows();
    return state;
  };
  // Written beside its target and renamed over it, so a failed write leaves the last good one.
  auto save_checkpoint = [&](const std::string& path, const rl::ResumeState& state) {
    try {
      rl::write_resumable_checkpoint(path, trainer, state);
      return true;
    } catch (const std::exception& e) {
      std::cerr << "surge train: could not write " << path << " (" << e.what()
                << "); the last good one stays, and no further one is tried before the end\n";
      return false;
    }
  };
  const TrainEvaluator evaluator(config.scenario, plan.physics, config);
  bool periodic_checkpoints = plan.checkpoint_every > 0, best_checkpoints = true;
  StopSignals signals;
  std::int64_t done = first_iteration;
  for (std::int64_t k = first_iteration; k < trainer.num_iterations() && !ranks.any(stop || signals.requested()); ++k) {
    if (plan.stop_after >= 0 && k - first_iteration >= plan.stop_after) break;
    // Iterations are numbered from 1 in the log, as in metrics.csv.
    if (rollout_log) rollout_log->begin_iteration(k + 1, trainer.stream());
    trainer.iterate();
    if (rollout_log) rollout_log->end_iteration((k + 1) * config.batch_size() * ranks.size(), trainer.stream());
    done = k + 1;
    consume(trainer.ready_metrics());
    bool save_best = false;
    if (evaluator.due(done)) {
      consume(trainer.drain());
      const double best = output.best_eval();
      const EvalResult eval = evaluator.run(trainer, done);
      output.set_eval(eval.mean, eval.std);
      save_best = best_checkpoints && !(eval.mean <= best);
    }
    const bool save_periodic =
        periodic_checkpoints && done % plan.checkpoint_every == 0 && done < trainer.num_iterations();
    if (checkpoint_now(save_best || save_periodic, ranks)) {
      const rl::ResumeState state = capture_state();
      if (save_best) best_checkpoints = save_checkpoint(folder.dir() + "/best.h5", state);
      if (save_periodic) periodic_checkpoints = save_checkpoint(checkpoint_path, state);
    }
  }
  consume(trainer.drain());
  // The other ranks hand over their state for the last checkpoint now, not after the files below.
  std::optional<rl::ResumeState> final_state;
  if (rl::checkpoints_available()) final_state = capture_state();
  progress.finish();
  signals.shield();  // what follows is written whole: a further Ctrl-C waits for it
  std::string failed;
  if (!output.append_rows(true)) {
    try {
      output.write_metrics();  // whole, in case the appends left a gap
    } catch (const std::exception& e) {
      std::cerr << "surge train: " << e.what() << "\n";
      failed = "metrics.csv";
    }
  }
  if (rollout_log) {
    rollout_log->close();
    report_rollout_log(*rollout_log);
  }
  if (final_state && !save_checkpoint(checkpoint_path, *final_state))
    failed += failed.empty() ? "checkpoint.h5" : " and checkpoint.h5";
  if (!rl::checkpoints_available())
    std::cerr
        << "surge train: this build has no HDF5, so no checkpoint.h5 was written (install libhdf5-dev and rebuild)\n";
  std::cout << output.summary(plan.target, target_time, target_step).line << "\n";

  RunOutcome outcome;
  const double threshold = std::isnan(plan.target) ? spec.reward_threshold : plan.target;
  outcome.result = summarize_run(output.rows(), threshold, target_time, target_step, folder.dir(), config.seed);
  if (!failed.empty()) {
    std::cerr << "surge train: " << failed << " could not be written (is the disk full?); what " << folder.dir()
              << " held before stays\n";
    outcome.exit_code = 2;
    return outcome;
  }
  const bool cut_short = done < trainer.num_iterations() && !stop;
  if (cut_short) {
    const std::string why = signals.requested()
                                ? std::string("stopped by ") + StopSignals::name(signals.signal_number())
                                : "stopped as asked (--stop-after)";
    std::cerr << "surge train: " << why << " after iteration " << done << " of " << trainer.num_iterations()
              << "; metrics.csv and checkpoint.h5 are written"
              << "; continue with: "
              << (ranks.size() > 1 ? "mpirun -np " + std::to_string(ranks.size()) + " " : std::string()) +
                     "surge train --resume " + checkpoint_path
              << "\n";
    if (signals.requested()) outcome.exit_code = StopSignals::exit_code(signals.signal_number());
  }
  if (outcome.exit_code == 0) outcome.result.greedy = final_evaluation(trainer, plan.physics, config);
  return outcome;
}

int train_command(const Args& args) {
  Command cmd("train",
              "Trains a PPO agent (separate actor and critic MLPs; a categorical policy for discrete actions,\n"
              "a diagonal Gaussian with a state-independent log-std for continuous ones, whose samples reach\n"
              "the environment clipped to the action bounds) on N environments of a scenario. Every iteration\n"
              "steps each environment T times, computes GAE, and runs E epochs of M minibatch updates, all on\n"
              "one device with no host synchronisation inside the iteration.\n"
              "Writes DIR/metrics.csv (one row per iteration), DIR/config.toml (the whole config, scenario and\n"
              "seed included), DIR/checkpoint.h5 (parameters, optimiser state, config; see `surge eval`) and\n"
              "DIR/tb (TensorBoard), and ends with a one-line summary.");
  declare(cmd);
  if (!cmd.parse_or_print_usage(args)) return 0;
  RunPlan plan;
  const rl::RankPlace place = rl::rank_place();
  plan.device = rank_device(resolve_device(cmd.get("device")), place);
  if (place.size > 1)
    if (cmd.has("seeds"))
      throw InputError(cmd.complaint("--seeds is for one process, not " + std::to_string(place.size) +
                                     " ranks under mpirun; run it without mpirun"));
  std::vector<std::uint64_t> seeds;
  std::vector<rl::GridAxis> file_grid;
  if (cmd.has("resume") && is_agents_run(cmd.get("resume"))) return resume_agents(cmd, plan.device);
  if (cmd.has("resume")) {
    read_resume(cmd, plan, place.size);
  } else {
    BuiltConfig built = build_train_config(cmd, plan.device);
    if (cmd.has("seeds")) {
      if (cmd.has("seed")) throw InputError(cmd.complaint("give --seed or --seeds, not both"));
      seeds = parse_seeds(cmd.get("seeds"), cmd);
    }
    if (built.auto_num_envs && place.size > 1)
      throw InputError(
          cmd.complaint("--num-envs auto measures this process alone; under mpirun give every rank "
                        "its number, e.g. --num-envs 256"));
    if (built.auto_num_envs) {
      // The rest of the config first: the sweep trains with it, only N varies.
      const AutoNumEnvs choice = recommend_num_envs(built.config.scenario, plan.device, built.config);
      std::cerr << "surge train: " << choice.summary << "\n";
      built.config.num_envs = choice.num_envs;
      built.config.validate();
    }
    plan.config = built.config;
    file_grid = built.grid;
    plan.reuse = cmd.flag_set("overwrite") ? RunFolder::Reuse::Overwrite : RunFolder::Reuse::Refuse;
  }
  rl::require_trainable(plan.config);
  const std::vector<rl::AgentSpec> agents = plan_agents(cmd, plan.config, file_grid);
  const std::string& scenario = plan.config.scenario;
  const ScenarioSpec& spec = scenario_spec(scenario);
  plan.physics = resolve_physics(spec, plan.config.physics);
  for (const rl::AgentSpec& agent : agents) resolve_physics(spec, agent.config.physics);  // a grid's physics.NAME
  if (!agents.empty()) return start_agents(cmd, agents, plan.device);
  if (!cmd.get_all("target-mode").empty())
    throw InputError(cmd.complaint("--target-mode says when a run of several agents stops; give --agents or --grid"));
  if (!cmd.get_all("learner").empty())
    throw InputError(cmd.complaint("--learner says which learner trains several agents; give --agents or --grid"));
  if (cmd.has("target-return")) plan.target = cmd.get_double("target-return", -1e300, 1e300);
  // Every buffer is sized from the config: a run that would not fit stops here, before it allocates.
  MemoryPlan memory = engine_memory_plan(scenario, plan.device, plan.config.num_envs);
  memory.append(rl::Trainer::memory_plan(plan.config, spec, plan.device, place.size));
  add_frame_store_plan(memory, plan.config, spec);
  // The default takes at most all the environments there are; a number asked for must fit.
  const std::int64_t log_envs = cmd.get_all("log-envs").empty() ? std::min<std::int64_t>(64, plan.config.num_envs)
                                                                : cmd.get_int("log-envs", 1, plan.config.num_envs);
  if (cmd.has("log-rollouts")) memory.append(rollout_log_memory_plan(plan.config, spec, plan.device, log_envs));
  if (cmd.flag_set("dry-run")) {
    const AvailableMemory available = available_memory(plan.device);
    if (place.rank == 0) std::cout << memory.table(available);
    return memory.fits(available) || !available.known ? 0 : 2;
  }
  memory.require_fits("surge train on " + plan.device.str(),
                      "lower --num-envs or --num-steps, or raise num_minibatches (--dry-run shows the plan)");
  plan.checkpoint_every = cmd.get_int("checkpoint-every", 0, std::int64_t(1) << 40);
  if (cmd.has("stop-after")) plan.stop_after = cmd.get_int("stop-after", 1, std::int64_t(1) << 40);

  if (!cmd.get_all("out").empty() && cmd.get("out").empty())
    throw InputError(cmd.complaint("--out '' names no folder; give one, or leave --out out for a new dated one"));
  std::string out_dir = cmd.get_all("out").empty() ? "" : cmd.get("out");
  if (out_dir.empty()) {
    const std::string resume_folder = std::filesystem::path(plan.resume_path).parent_path().string();
    out_dir = plan.resumed     ? (resume_folder.empty() ? "." : resume_folder)
              : !seeds.empty() ? RunFolder::default_dir(scenario, "seeds" + cmd.get("seeds"))
                               : RunFolder::default_dir(scenario, "seed" + std::to_string(plan.config.seed));
  }
  if (cmd.has("log-rollouts")) {
    if (!seeds.empty())
      throw InputError(cmd.complaint("--log-rollouts takes one run; train the seed to log on its own (--seed K)"));
    RolloutLogRequest request;
    request.path = cmd.get("log-rollouts");
    if (request.path.empty()) throw InputError(cmd.complaint("--log-rollouts '' names no file; give FILE.h5"));
    plan.log_ranks = parse_log_ranks(cmd.get("log-ranks"), place.size, cmd);
    // A log is laid out beside its path and renamed onto it: only a regular file (or none) can be replaced.
    // Every chosen rank's path is checked here, on every rank, before rank 0 makes anything.
    for (int r = 0; r < place.size; ++r) {
      if (r > 0 && !plan.log_ranks[r]) continue;
      const std::string path = r == 0 ? request.path : rank_log_path(request.path, r);
      const std::filesystem::file_status existing = std::filesystem::symlink_status(path);
      if (std::filesystem::exists(existing) && !std::filesystem::is_regular_file(existing))
        throw InputError(cmd.complaint("--log-rollouts " + request.path + ": " + path +
                                       " is not a regular file (a folder, a link, a FIFO or a device); give the path "
                                       "of an HDF5 file to write"));
      if (r > 0) RunFolder::require_not_an_output(out_dir, path, "--log-rollouts", "surge train");
    }
    request.every = cmd.get_int("log-every", 1, std::int64_t(1) << 40);
    request.envs = log_envs;
    request.queue_depth = static_cast<int>(cmd.get_int("log-queue", 1, 64));
    RunFolder::require_not_an_output(out_dir, request.path, "--log-rollouts", "surge train");
    // A log inside the run's folder may wait for the folder; anywhere else its folder must exist.
    std::error_code error;
    const std::filesystem::path folder = std::filesystem::absolute(request.path).parent_path();
    if (std::filesystem::weakly_canonical(folder, error) !=
        std::filesystem::weakly_canonical(std::filesystem::absolute(out_dir), error))
      require_writable(request.path, "the rollout log");
    plan.log = request;
  } else if (!cmd.get_all("log-ranks").empty()) {
    throw InputError(
        cmd.complaint("--log-ranks chooses the ranks that --log-rollouts logs; give --log-rollouts FILE.h5"));
  }
  if (seeds.empty()) {
    if (plan.reuse == RunFolder::Reuse::Refuse && place.rank == 0)
      RunFolder::require_free(out_dir, false, "surge train");
    return train_run(plan, out_dir).exit_code;
  }
  // Several seeds: every folder is checked before the first run starts.
  for (std::uint64_t seed : seeds)
    RunFolder::require_free(seed_dir(out_dir, seed), plan.reuse == RunFolder::Reuse::Overwrite, "surge train");
  std::vector<SeedResult> results;
  for (std::uint64_t seed : seeds) {
    plan.config.seed = seed;
    RunOutcome outcome = train_run(plan, seed_dir(out_dir, seed));
    results.push_back(outcome.result);
    if (outcome.exit_code != 0) return outcome.exit_code;
  }
  report_seeds(results, spec, out_dir);
  return 0;
}

}  // namespace

int run_train(const Args& args) {
  const int code = train_command(args);
  // Every rank gets here together. After an exception none does: MPI stays up, the process ends with
  // exit code 2, and mpirun stops the other ranks instead of leaving them waiting for a sum.
  rl::finish_ranks();
  return code;
}

}  // namespace surge::cli
