// The outputs both learners of `surge train --agents K` write (tools/cli/train_agents_output.hpp).
#include "tools/cli/train_agents_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/train_ranks.hpp"
#include "tools/cli/train_seeds.hpp"

namespace surge::cli {
namespace {

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
std::string combined_metrics(const std::vector<const AgentRecord*>& agents) {
  std::ostringstream csv;
  csv << "agent,grid_point,seed";
  for (const auto& [key, value] : agents.front()->spec.grid_values) csv << ",grid." << key;
  for (const std::string& column : TrainOutput::columns()) csv << "," << column;
  csv << "\n";
  std::size_t rows = 0;
  for (const AgentRecord* agent : agents) rows = std::max(rows, agent->output->rows().size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < agents.size(); ++k) {
      const AgentRecord& agent = *agents[k];
      if (r >= agent.output->rows().size()) continue;
      csv << k << "," << agent.spec.grid_point << "," << agent.spec.config.seed;
      for (const auto& [key, value] : agent.spec.grid_values) csv << "," << csv_text(value);
      const std::vector<double>& row = agent.output->rows()[r];
      for (std::size_t c = 0; c < row.size(); ++c) csv << "," << number_cell(row[c], c == 0 || c == 1 || c == 4);
      csv << "\n";
    }
  return csv.str();
}

std::string agents_manifest(const std::vector<const AgentRecord*>& agents) {
  std::ostringstream csv;
  csv << "agent,grid_point,seed,dir";
  for (const auto& [key, value] : agents.front()->spec.grid_values) csv << ",grid." << key;
  csv << "\n";
  for (std::size_t k = 0; k < agents.size(); ++k) {
    csv << k << "," << agents[k]->spec.grid_point << "," << agents[k]->spec.config.seed << ",agents/" << k;
    for (const auto& [key, value] : agents[k]->spec.grid_values) csv << "," << csv_text(value);
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

// The final table: a row per agent, then per grid point the mean ± std across its seeds; the same per
// agent in RUN/agents_summary.csv.
void report_agents(const std::vector<const AgentRecord*>& agents, double threshold, const std::string& dir) {
  const std::string shown = format_significant(threshold);
  std::vector<std::vector<std::string>> table = {
      {"agent", "grid point", "seed", "values", "return_last100", "steps to " + shown, "time to " + shown}};
  std::ostringstream csv;
  csv << "agent,grid_point,seed";
  for (const auto& [key, value] : agents.front()->spec.grid_values) csv << ",grid." << key;
  csv << ",return_last100,threshold,threshold_step,threshold_time_s\n";
  std::vector<SeedResult> results;
  for (std::size_t k = 0; k < agents.size(); ++k) {
    const AgentRecord& a = *agents[k];
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
  const std::int64_t points = agents.back()->spec.grid_point + 1;
  for (std::int64_t p = 0; p < points; ++p) {
    std::vector<double> finals, steps, times;
    std::string values;
    for (std::size_t k = 0; k < agents.size(); ++k) {
      if (agents[k]->spec.grid_point != p) continue;
      finals.push_back(results[k].return_last100);
      steps.push_back(results[k].threshold_step);
      times.push_back(results[k].threshold_time);
      values.clear();
      for (const auto& [key, value] : agents[k]->spec.grid_values)
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
            << agents.front()->spec.config.scenario << " (threshold " << shown << "), in " << dir << "\n"
            << aligned_table(table);
  write_atomically(dir + "/agents_summary.csv", csv.str());
}

}  // namespace

void AgentRecord::add_rows(const std::vector<rl::IterationMetrics>& ready, double wall, double wall_offset,
                           double target) {
  for (const rl::IterationMetrics& m : ready) {
    output->add_row(m, wall);
    return_last100 = m.return_last100;
    if (std::isnan(target_time) && target_reached(target, m)) {
      target_time = wall + wall_offset;
      target_step = m.global_step;
    }
  }
}

ResumedAgent read_resumed_agent(const std::string& run_dir, std::size_t k) {
  const std::string path = run_dir + "/agents/" + std::to_string(k) + "/checkpoint.h5";
  ResumedAgent resumed{rl::read_checkpoint(path), rl::read_resume_state(path)};
  TrainOutput::check_rows(resumed.state.metrics_rows, resumed.state.metrics_columns, "checkpoint '" + path + "'");
  return resumed;
}

void ResumedAgent::drop_restored() {
  checkpoint = rl::Checkpoint{};
  state.engine.clear();
  state.other_ranks.clear();
  std::erase_if(state.trainer, [](const SavedBuffer& saved) { return saved.name != "train_state"; });
}

void prepare_agent(AgentRecord& agent, const AgentsPlan& plan, const std::string& run_dir, std::size_t k) {
  agent.spec = plan.agents[k];
  agent.dir = run_dir + "/agents/" + std::to_string(k);
  agent.physics = resolve_physics(scenario_spec(agent.spec.config.scenario), agent.spec.config.physics);
}

void open_agent_outputs(AgentRecord& agent, const AgentsPlan& plan, const std::string& run_dir, std::size_t k,
                        const ResumedAgent* resumed) {
  const rl::TrainConfig& config = agent.spec.config;
  const ScenarioSpec& spec = scenario_spec(config.scenario);
  std::filesystem::create_directories(agent.dir);
  const std::string tb = run_dir + "/tb/agent_" + std::to_string(k);
  if (resumed) {
    agent.done = resumed->state.iteration();
    agent.output =
        std::make_unique<TrainOutput>(agent.dir, resumed->state.metrics_rows, resumed->state.metrics_columns, tb);
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

void write_agents_manifest(const std::string& run_dir, const std::vector<const AgentRecord*>& agents) {
  write_atomically(run_dir + "/agents.csv", agents_manifest(agents));
}

void write_combined_metrics(const std::string& run_dir, const std::vector<const AgentRecord*>& agents) {
  write_atomically(run_dir + "/metrics.csv", combined_metrics(agents));
}

std::string start_line(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, std::int64_t iterations,
                       std::int64_t done, const std::string& detail, const std::string& dir) {
  const rl::TrainConfig& first = agents.front()->spec.config;
  std::size_t paused = 0;
  for (const AgentRecord* agent : agents) paused += agent->paused;
  const bool resume = plan.reuse == RunFolder::Reuse::Resume;
  return "surge train: " + plural(static_cast<long long>(agents.size()), "agent") + " of " + first.scenario + " on " +
         plan.device.str() + ", each " + std::to_string(first.num_envs) + " envs x " + std::to_string(first.num_steps) +
         " steps, " + plural(iterations, "iteration") + detail +
         (resume ? ", resumed after iteration " + std::to_string(done) : std::string()) +
         (paused ? " (" + plural(static_cast<long long>(paused), "agent") +
                       " already at the target, left where they stopped)"
                 : std::string()) +
         "; into " + dir;
}

std::int64_t most_done(const std::vector<const AgentRecord*>& agents) {
  std::int64_t done = 0;
  for (const AgentRecord* agent : agents) done = std::max(done, agent->done);
  return done;
}

double earlier_wall_time(const std::vector<const AgentRecord*>& agents) {
  double wall = 0.0;
  for (const AgentRecord* agent : agents)
    if (!agent->output->rows().empty()) wall = std::max(wall, agent->output->rows().back()[2]);
  return wall;
}

std::string progress_line(const std::vector<const AgentRecord*>& agents, std::int64_t done, std::int64_t iterations,
                          double wall) {
  std::vector<double> returns;
  std::size_t reached = 0;
  for (const AgentRecord* agent : agents) {
    returns.push_back(agent->return_last100);
    reached += !std::isnan(agent->target_time);
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

bool mode_met(TargetMode mode, const std::vector<const AgentRecord*>& agents) {
  std::size_t reached = 0;
  for (const AgentRecord* agent : agents) reached += !std::isnan(agent->target_time);
  if (mode == TargetMode::Any) return reached >= 1;
  if (mode == TargetMode::All) return reached == agents.size();
  return 2 * reached >= agents.size();
}

RoundEnd::RoundEnd() : tty_(::isatty(STDERR_FILENO) != 0) {}

bool RoundEnd::operator()(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, const std::string& dir,
                          std::int64_t done, std::int64_t iterations, double wall, double wall_offset, bool saved) {
  const bool stop = !std::isnan(plan.target) && mode_met(plan.mode, agents);
  if (wall - last_print_ >= (tty_ ? 0.5 : 5.0)) {
    std::cerr << progress_line(agents, done, iterations, wall + wall_offset) << "\n";
    last_print_ = wall;
  }
  if (saved) write_combined_metrics(dir, agents);
  return stop;
}

int finish_agents(const std::vector<const AgentRecord*>& agents, const AgentsPlan& plan, const std::string& dir,
                  std::int64_t done, std::int64_t iterations, double wall, bool stop, bool written,
                  const StopSignals& signals) {
  try {
    write_combined_metrics(dir, agents);
  } catch (const std::exception& e) {
    std::cerr << "surge train: " << e.what() << "\n";
    written = false;
  }
  std::cerr << progress_line(agents, done, iterations, wall) << "\n";
  const ScenarioSpec& spec = scenario_spec(agents.front()->spec.config.scenario);
  const double threshold = std::isnan(plan.target) ? spec.reward_threshold : plan.target;
  report_agents(agents, threshold, dir);
  if (!std::isnan(plan.target))
    std::cout << "surge train: target " << format_significant(plan.target) << " (--target-mode "
              << target_mode_name(plan.mode) << ") " << (stop ? "met" : "not met") << " after iteration " << done
              << "\n";
  if (!written) {
    std::cerr << "surge train: some outputs could not be written (is the disk full?)\n";
    return 2;
  }
  bool unfinished = false;
  for (const AgentRecord* agent : agents) unfinished = unfinished || (!agent->paused && agent->done < iterations);
  if (unfinished && !stop) {
    const std::string why = signals.requested()
                                ? std::string("stopped by ") + StopSignals::name(signals.signal_number())
                                : "stopped as asked (--stop-after)";
    std::cerr << "surge train: " << why << " after iteration " << done << " of " << iterations
              << "; every agent's checkpoint is written; continue with: surge train --resume " << dir << "\n";
    if (signals.requested()) return StopSignals::exit_code(signals.signal_number());
  }
  return 0;
}

}  // namespace surge::cli
