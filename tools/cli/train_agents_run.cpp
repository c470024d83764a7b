// `surge train --agents K`: the agents' iterations side by side, their outputs and the final table.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "rl/agent_set.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/cli/train_agents.hpp"
#include "tools/cli/train_eval.hpp"
#include "tools/cli/train_output.hpp"
#include "tools/cli/train_ranks.hpp"
#include "tools/cli/train_seeds.hpp"

namespace surge::cli {
namespace {

// One learner: an engine and a trainer of its own, and a folder agents/<k> that holds what a run of one
// agent holds (config.toml, metrics.csv, checkpoint.h5), its TensorBoard events in RUN/tb/agent_<k>.
struct Agent {
  rl::AgentSpec spec;
  std::string dir;
  PhysicsConfig physics;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PixelFrameStore> frames;  // pixel observations: the agent's own frame store, else null
  std::unique_ptr<rl::Trainer> trainer;
  std::unique_ptr<TrainOutput> output;
  std::unique_ptr<TrainEvaluator> evaluator;
  std::int64_t done = 0;      // iterations done, by this run and the runs it continues
  std::int64_t this_run = 0;  // iterations done by this run
  bool paused = false;        // reached --target-return: no further iteration, its outputs final
  bool best_checkpoints = true;
  double target_time = NAN, target_step = NAN;
  double return_last100 = NAN;
};

std::string csv_text(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number_cell(double value, bool whole) {
  if (std::isnan(value)) return "";
  return whole ? std::to_string(std::llround(value)) : format_precise(value);
}

std::string grid_point_text(const rl::AgentSpec& spec) {
  std::string text = "grid_point = " + std::to_string(spec.grid_point) +
                     "\nseed_index = " + std::to_string(spec.seed_index) + "\n[grid]\n";
  for (const auto& [key, value] : spec.grid_values) text += key + " = " + value + "\n";
  return text;
}

// RUN/metrics.csv: a row per agent per iteration, the agent, its grid point, seed and grid values first.
std::string combined_metrics(const std::vector<Agent>& agents) {
  std::ostringstream csv;
  csv << "agent,grid_point,seed";
  for (const auto& [key, value] : agents.front().spec.grid_values) csv << ",grid." << key;
  for (const std::string& column : TrainOutput::columns()) csv << "," << column;
  csv << "\n";
  std::size_t rows = 0;
  for (const Agent& agent : agents) rows = std::max(rows, agent.output->rows().size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < agents.size(); ++k) {
      const Agent& agent = agents[k];
      if (r >= agent.output->rows().size()) continue;
      csv << k << "," << agent.spec.grid_point << "," << agent.spec.config.seed;
      for (const auto& [key, value] : agent.spec.grid_values) csv << "," << csv_text(value);
      const std::vector<double>& row = agent.output->rows()[r];
      for (std::size_t c = 0; c < row.size(); ++c) csv << "," << number_cell(row[c], c == 0 || c == 1 || c == 4);
      csv << "\n";
    }
  return csv.str();
}

std::string agents_manifest(const std::vector<Agent>& agents) {
  std::ostringstream csv;
  csv << "agent,grid_point,seed,dir";
  for (const auto& [key, value] : agents.front().spec.grid_values) csv << ",grid." << key;
  csv << "\n";
  for (std::size_t k = 0; k < agents.size(); ++k) {
    csv << k << "," << agents[k].spec.grid_point << "," << agents[k].spec.config.seed << ",agents/" << k;
    for (const auto& [key, value] : agents[k].spec.grid_values) csv << "," << csv_text(value);
    csv << "\n";
  }
  return csv.str();
}

double median_of(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string progress_line(const std::vector<Agent>& agents, std::int64_t done, std::int64_t iterations, double wall) {
  std::vector<double> returns;
  std::size_t reached = 0;
  for (const Agent& agent : agents) {
    returns.push_back(agent.return_last100);
    reached += !std::isnan(agent.target_time);
  }
  const double median = median_of(returns);
  double low = NAN, high = NAN;
  for (double v : returns)
    if (!std::isnan(v)) low = std::isnan(low) ? v : std::min(low, v), high = std::isnan(high) ? v : std::max(high, v);
  auto shown = [](double v) { return std::isnan(v) ? std::string("—") : format_significant(v); };
  return "surge train: iteration " + std::to_string(done) + "/" + std::to_string(iterations) + ", " +
         format_number("%.1f", wall) + " s, return_last100 min/median/max " + shown(low) + "/" + shown(median) + "/" +
         shown(high) + ", " + std::to_string(reached) + "/" + std::to_string(agents.size()) + " at target";
}

bool mode_met(TargetMode mode, const std::vector<Agent>& agents) {
  std::size_t reached = 0;
  for (const Agent& agent : agents) reached += !std::isnan(agent.target_time);
  if (mode == TargetMode::Any) return reached >= 1;
  if (mode == TargetMode::All) return reached == agents.size();
  return 2 * reached >= agents.size();
}

// The final table: a row per agent, then per grid point the mean ± std across its seeds; the same per
// agent in RUN/agents_summary.csv.
void report_agents(const std::vector<Agent>& agents, double threshold, const std::string& dir) {
  const std::string shown = format_significant(threshold);
  std::vector<std::vector<std::string>> table = {
      {"agent", "grid point", "seed", "values", "return_last100", "steps to " + shown, "time to " + shown}};
  std::ostringstream csv;
  csv << "agent,grid_point,seed";
  for (const auto& [key, value] : agents.front().spec.grid_values) csv << ",grid." << key;
  csv << ",return_last100,threshold,threshold_step,threshold_time_s\n";
  std::vector<SeedResult> results;
  for (std::size_t k = 0; k < agents.size(); ++k) {
    const Agent& a = agents[k];
    results.push_back(
        summarize_run(a.output->rows(), threshold, a.target_time, a.target_step, a.dir, a.spec.config.seed));
    const SeedResult& r = results.back();
    std::string values;
    for (const auto& [key, value] : a.spec.grid_values) values += (values.empty() ? "" : " ") + key + "=" + value;
    const bool reached = !std::isnan(r.threshold_step);
    table.push_back({std::to_string(k), std::to_string(a.spec.grid_point), std::to_string(r.seed),
                     values.empty() ? "—" : values, format_significant(r.return_last100),
                     reached ? format_grouped(r.threshold_step) : "not reached",
                     reached ? format_number("%.2f", r.threshold_time) + " s" : "—"});
    csv << k << "," << a.spec.grid_point << "," << r.seed;
    for (const auto& [key, value] : a.spec.grid_values) csv << "," << csv_text(value);
    csv << "," << number_cell(r.return_last100, false) << "," << number_cell(threshold, false) << ","
        << number_cell(r.threshold_step, true) << "," << number_cell(r.threshold_time, false) << "\n";
  }
  const std::int64_t points = agents.back().spec.grid_point + 1;
  for (std::int64_t p = 0; p < points; ++p) {
    std::vector<double> finals, steps, times;
    std::string values;
    for (std::size_t k = 0; k < agents.size(); ++k) {
      if (agents[k].spec.grid_point != p) continue;
      finals.push_back(results[k].return_last100);
      steps.push_back(results[k].threshold_step);
      times.push_back(results[k].threshold_time);
      values.clear();
      for (const auto& [key, value] : agents[k].spec.grid_values)
        values += (values.empty() ? "" : " ") + key + "=" + value;
    }
    std::size_t reached = 0;
    const std::string steps_text = mean_std(steps, &reached);
    table.push_back({"mean ± std", std::to_string(p), plural(static_cast<long long>(finals.size()), "seed"),
                     values.empty() ? "—" : values, mean_std(finals),
                     steps_text + " (" + std::to_string(reached) + "/" + std::to_string(finals.size()) + " reached)",
                     mean_std(times) + (reached ? " s" : "")});
  }
  std::cout << "surge train: " << plural(static_cast<long long>(agents.size()), "agent") << " of "
            << agents.front().spec.config.scenario << " (threshold " << shown << "), in " << dir << "\n"
            << aligned_table(table);
  write_atomically(dir + "/agents_summary.csv", csv.str());
}

}  // namespace

int train_agents(const AgentsPlan& plan, const std::string& out_dir) {
  const std::unique_ptr<rl::Collective> opened = rl::open_collective(plan.device);
  const rl::Collective& ranks = *opened;
  if (ranks.size() > 1)
    throw InputError("surge train: --agents and --grid run in one process; run them without mpirun");
  RunFolder folder(out_dir, plan.reuse, "surge train");
  const bool resume = plan.reuse == RunFolder::Reuse::Resume;
  const ScenarioSpec& spec = scenario_spec(plan.agents.front().config.scenario);
  std::vector<Agent> agents(plan.agents.size());
  std::filesystem::create_directories(folder.dir() + "/tb");
  for (std::size_t k = 0; k < agents.size(); ++k) {
    Agent& agent = agents[k];
    agent.spec = plan.agents[k];
    const rl::TrainConfig& config = agent.spec.config;
    agent.dir = folder.dir() + "/agents/" + std::to_string(k);
    std::filesystem::create_directories(agent.dir);
    agent.physics = resolve_physics(spec, config.physics);
    agent.engine = make_engine(config.scenario, plan.device, config.num_envs, config.seed, agent.physics);
    agent.frames = make_frame_store(*agent.engine, config.pixel_observations(), config.num_steps, config.frame_size,
                                    config.grayscale, config.frame_stack);
    agent.trainer = std::make_unique<rl::Trainer>(*agent.engine, config, ranks, agent.frames.get());
    const std::string tb = folder.dir() + "/tb/agent_" + std::to_string(k);
    if (resume) {
      const std::string path = agent.dir + "/checkpoint.h5";
      const rl::Checkpoint checkpoint = rl::read_checkpoint(path);
      rl::ResumeState state = rl::read_resume_state(path);
      TrainOutput::check_rows(state.metrics_rows, state.metrics_columns, "checkpoint '" + path + "'");
      state.restore(checkpoint, *agent.trainer, *agent.engine);
      agent.done = state.iteration();
      agent.output = std::make_unique<TrainOutput>(agent.dir, state.metrics_rows, state.metrics_columns, tb);
      const SeedResult earlier = summarize_run(agent.output->rows(), plan.target, NAN, NAN, "", 0);
      agent.target_time = std::isnan(plan.target) ? NAN : earlier.threshold_time;
      agent.target_step = std::isnan(plan.target) ? NAN : earlier.threshold_step;
      agent.paused = !std::isnan(agent.target_time);  // it stopped there, as a run alone would have
    } else {
      agent.output =
          std::make_unique<TrainOutput>(agent.dir, std::vector<std::vector<double>>{}, TrainOutput::columns(), tb);
      write_atomically(agent.dir + "/grid_point.toml", grid_point_text(agent.spec));
    }
    agent.output->write_config(config, spec, plan.device);
    agent.evaluator = std::make_unique<TrainEvaluator>(config.scenario, agent.physics, config);
  }
  write_atomically(folder.dir() + "/agents.csv", agents_manifest(agents));
  write_atomically(folder.dir() + "/metrics.csv", combined_metrics(agents));
  folder.keep();

  const rl::TrainConfig& first = agents.front().spec.config;
  const std::int64_t iterations = agents.front().trainer->num_iterations();
  std::int64_t done = 0;  // the most iterations any agent has done
  std::size_t paused = 0;
  for (const Agent& agent : agents) done = std::max(done, agent.done), paused += agent.paused;
  say_device_notice();
  std::cerr << "surge train: " << plural(static_cast<long long>(agents.size()), "agent") << " of " << first.scenario
            << " on " << plan.device.str() << ", each " << first.num_envs << " envs x " << first.num_steps << " steps, "
            << plural(iterations, "iteration")
            << (plan.device.is_cpu() ? ", " + plural(rl::agent_threads(agents.size()), "thread") + " across the agents"
                                     : std::string())
            << (resume ? ", resumed after iteration " + std::to_string(done) : std::string())
            << (paused ? " (" + plural(static_cast<long long>(paused), "agent") +
                             " already at the target, left where they stopped)"
                       : std::string())
            << "; into " << folder.dir() << "\n";

  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double wall_offset = 0.0;  // the time the runs this one continues took
  for (const Agent& agent : agents)
    if (!agent.output->rows().empty()) wall_offset = std::max(wall_offset, agent.output->rows().back()[2]);
  auto consume = [&](Agent& agent, const std::vector<rl::IterationMetrics>& ready) {
    for (const rl::IterationMetrics& m : ready) {
      const double wall = seconds_since_start();
      agent.output->add_row(m, wall);
      agent.return_last100 = m.return_last100;
      if (std::isnan(agent.target_time) && target_reached(plan.target, m)) {
        agent.target_time = wall + wall_offset;
        agent.target_step = m.global_step;
      }
    }
  };
  auto save_checkpoint = [&](Agent& agent, const std::string& name) {
    consume(agent, agent.trainer->drain());
    rl::ResumeState state = rl::ResumeState::capture(*agent.trainer, *agent.engine);
    state.metrics_columns = TrainOutput::columns();
    state.metrics_rows = agent.output->rows();
    try {
      rl::write_resumable_checkpoint(agent.dir + "/" + name, *agent.trainer, state);
      return true;
    } catch (const std::exception& e) {
      std::cerr << "surge train: could not write " << agent.dir << "/" << name << " (" << e.what() << ")\n";
      return false;
    }
  };

  // Each agent does what `surge train --seed s_k` alone does after an iteration: its rows, its evaluation
  // (best.h5 when it is the best so far), and with --target-return, once it has reached the target, it
  // stops there: its last rows and checkpoint are written and it iterates no more.
  // On the CPU a round is up to rl::kAgentIterationsPerRound iterations of each agent, back to back on one thread
  // that also adds the agent's rows (metrics.csv, TensorBoard) after each; an agent's run of iterations
  // ends early at an iteration after which the host has work for it (evaluation, target, checkpoint); a
  // stop signal ends the run after the round. With --target-mode any or median the run ends in the round
  // that meets the mode, so there every agent does one iteration per round, as on CUDA.
  StopSignals signals;
  bool stop = false, written = true, said_fallback = false;
  double last_print = -1e300;
  const bool tty = ::isatty(STDERR_FILENO);
  const std::int64_t per_round = plan.device.is_cpu() && (std::isnan(plan.target) || plan.mode == TargetMode::All)
                                     ? rl::kAgentIterationsPerRound
                                     : 1;
  auto host_work_after = [&](const Agent& agent) {
    return agent.evaluator->due(agent.done) || (!std::isnan(plan.target) && !std::isnan(agent.target_time)) ||
           (plan.checkpoint_every > 0 && agent.done % plan.checkpoint_every == 0 && agent.done < iterations);
  };
  auto after_iteration = [&](Agent& agent) {
    ++agent.done;
    ++agent.this_run;
    consume(agent, agent.trainer->ready_metrics());
    return !host_work_after(agent);
  };
  std::vector<Agent*> active;
  std::vector<rl::Trainer*> trainers;
  std::vector<std::int64_t> limits;
  rl::AgentIterations iterations_of_all(plan.device);  // after the agents: it waits for its work first
  while (!stop && !signals.requested()) {
    active.clear();
    trainers.clear();
    limits.clear();
    for (Agent& agent : agents) {
      std::int64_t limit = std::min(per_round, iterations - agent.done);
      if (plan.stop_after >= 0) limit = std::min(limit, plan.stop_after - agent.this_run);
      if (agent.paused || limit <= 0) continue;
      active.push_back(&agent);
      trainers.push_back(agent.trainer.get());
      limits.push_back(limit);
    }
    if (active.empty()) break;
    if (plan.device.is_cpu()) {
      rl::iterate_agents_for(trainers, limits, [&](std::size_t k) { return after_iteration(*active[k]); });
    } else {
      iterations_of_all.iterate(trainers);
      for (Agent* agent : active) after_iteration(*agent);
      if (!said_fallback && !iterations_of_all.fallback().empty()) {
        std::cerr << "surge train: could not capture " << iterations_of_all.fallback()
                  << "; the agents go on without that graph, their kernels launched one by one\n";
        said_fallback = true;
      }
    }
    bool saved = false;
    for (Agent* agent : active) {
      done = std::max(done, agent->done);
      if (agent->evaluator->due(agent->done)) {
        iterations_of_all.settle();
        consume(*agent, agent->trainer->drain());
        const double best = agent->output->best_eval();
        const EvalResult eval = agent->evaluator->run(*agent->trainer, agent->done);
        agent->output->set_eval(eval.mean, eval.std);
        if (agent->best_checkpoints && !(eval.mean <= best) && rl::checkpoints_available())
          agent->best_checkpoints = save_checkpoint(*agent, "best.h5");
      }
      agent->output->append_rows();
      if (!std::isnan(plan.target) && !std::isnan(agent->target_time)) {
        iterations_of_all.settle();
        agent->paused = true;
        consume(*agent, agent->trainer->drain());
        written = agent->output->append_rows(true) && written;
        if (rl::checkpoints_available()) written = save_checkpoint(*agent, "checkpoint.h5") && written;
      } else if (plan.checkpoint_every > 0 && agent->done % plan.checkpoint_every == 0 && agent->done < iterations) {
        iterations_of_all.settle();
        save_checkpoint(*agent, "checkpoint.h5");
        saved = true;
      }
    }
    stop = !std::isnan(plan.target) && mode_met(plan.mode, agents);
    const double wall = seconds_since_start();
    if (wall - last_print >= (tty ? 0.5 : 5.0)) {
      std::cerr << progress_line(agents, done, iterations, wall + wall_offset) << "\n";
      last_print = wall;
    }
    if (saved) write_atomically(folder.dir() + "/metrics.csv", combined_metrics(agents));
  }
  iterations_of_all.settle();
  for (Agent& agent : agents)
    if (!agent.paused) consume(agent, agent.trainer->drain());
  signals.shield();  // what follows is written whole: a further Ctrl-C waits for it
  for (Agent& agent : agents)
    if (!agent.paused) written = agent.output->append_rows(true) && written;
  if (rl::checkpoints_available()) {
    for (Agent& agent : agents)
      if (!agent.paused) written = save_checkpoint(agent, "checkpoint.h5") && written;
  } else {
    std::cerr << "surge train: this build has no HDF5, so no checkpoints were written (install libhdf5-dev and "
                 "rebuild)\n";
  }
  try {
    write_atomically(folder.dir() + "/metrics.csv", combined_metrics(agents));
  } catch (const std::exception& e) {
    std::cerr << "surge train: " << e.what() << "\n";
    written = false;
  }
  std::cerr << progress_line(agents, done, iterations, seconds_since_start() + wall_offset) << "\n";
  const double threshold = std::isnan(plan.target) ? spec.reward_threshold : plan.target;
  report_agents(agents, threshold, folder.dir());
  if (!std::isnan(plan.target))
    std::cout << "surge train: target " << format_significant(plan.target) << " (--target-mode "
              << target_mode_name(plan.mode) << ") " << (stop ? "met" : "not met") << " after iteration " << done
              << "\n";
  if (!written) {
    std::cerr << "surge train: some outputs could not be written (is the disk full?)\n";
    return 2;
  }
  bool unfinished = false;
  for (const Agent& agent : agents) unfinished = unfinished || (!agent.paused && agent.done < iterations);
  if (unfinished && !stop) {
    const std::string why = signals.requested()
                                ? std::string("stopped by ") + StopSignals::name(signals.signal_number())
                                : "stopped as asked (--stop-after)";
    std::cerr << "surge train: " << why << " after iteration " << done << " of " << iterations
              << "; every agent's checkpoint is written; continue with: surge train --resume " << folder.dir() << "\n";
    if (signals.requested()) return StopSignals::exit_code(signals.signal_number());
  }
  return 0;
}

}  // namespace surge::cli
