// The agents of `surge train --agents K --grid ...`: planning, the memory plan and reading a run back.
#include "tools/cli/train_agents.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "rl/batched_trainer.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/train_setup.hpp"

namespace surge::cli {
namespace {

std::string agent_dir(const std::string& dir, std::size_t k) { return dir + "/agents/" + std::to_string(k); }

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace

Command& add_grid_option(Command& cmd) {
  std::string keys;
  for (const std::string& key : rl::grid_keys()) keys += key + ", ";
  return cmd
      .repeated("grid", "KEY=V1,V2,...",
                "train one agent per value (lr names learning_rate); several --grid make the cross product, "
                "times --agents seeds each. A grid may vary " +
                    keys + "physics.NAME; not num_envs, num_steps, hidden or other keys that change shapes")
      .option("target-mode", "MODE",
              "with several agents and --target-return: stop once any agent, all of them, or the median one "
              "(at least half) reached it; each agent stops at its own first iteration at the target, as a run "
              "alone with --target-return does",
              "all")
      .option("learner", "KIND",
              "with several agents: separate (one learner per agent, their iterations side by side), batched (one "
              "learner of all the agents, every launch serving all of them; vector observations, fp32, at most "
              "65535 agents) or auto (batched on CUDA where it covers the config, else separate)",
              "auto");
}

bool choose_batched(const Command& cmd, const std::vector<rl::AgentSpec>& agents, Device device) {
  const std::string learner = cmd.get("learner");
  if (learner != "separate" && learner != "batched" && learner != "auto")
    throw InputError(
        cmd.complaint("--learner '" + format_excerpt(learner) + "' is not a learner; give separate, batched or auto"));
  if (learner == "separate") return false;
  std::string why;
  if (static_cast<std::int64_t>(agents.size()) > rl::BatchedTrainer::kMaxAgents) {
    if (learner == "auto") return false;
    throw InputError(cmd.complaint("--learner batched holds at most " + std::to_string(rl::BatchedTrainer::kMaxAgents) +
                                   " agents, and this run has " + std::to_string(agents.size()) +
                                   "; use --learner separate"));
  }
  for (const rl::AgentSpec& agent : agents)
    if (!rl::BatchedTrainer::supported(agent.config, scenario_spec(agent.config.scenario), &why)) {
      if (learner == "auto") return false;
      throw InputError(cmd.complaint("--learner batched: " + why + "; use --learner separate"));
    }
  return learner == "batched" || device.is_cuda();
}

std::vector<rl::AgentSpec> plan_agents(const Command& cmd, const rl::TrainConfig& config,
                                       const std::vector<rl::GridAxis>& file_grid) {
  const std::vector<std::string> grids = cmd.get_all("grid");
  if (cmd.has("resume") && (!grids.empty() || cmd.has("agents")))
    throw InputError(cmd.complaint("--resume continues the run as it was configured; drop --agents and --grid"));
  if (grids.empty() && file_grid.empty() && config.num_agents == 1) return {};
  for (const char* other : {"seeds", "log-rollouts"})
    if (cmd.has(other))
      throw InputError(cmd.complaint("--" + std::string(other) + " takes single-agent runs; drop --agents and --grid"));
  std::vector<rl::GridAxis> axes = file_grid;
  for (const std::string& text : grids) {
    rl::GridAxis axis = rl::parse_grid_axis(text);
    const auto same = std::find_if(axes.begin(), axes.end(), [&](const rl::GridAxis& a) { return a.key == axis.key; });
    if (same != axes.end() && same - axes.begin() < static_cast<std::ptrdiff_t>(file_grid.size()))
      *same = std::move(axis);
    else
      axes.push_back(std::move(axis));
  }
  return rl::expand_agents(config, axes);
}

std::string agents_table(const std::vector<rl::AgentSpec>& agents) {
  if (agents.empty()) return "";
  const rl::AgentSpec& last = agents.back();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"agent", "grid_point", "seed"};
  for (const auto& [key, value] : last.grid_values) header.push_back(key);
  rows.push_back(header);
  for (std::size_t k = 0; k < agents.size(); ++k) {
    std::vector<std::string> row = {std::to_string(k), std::to_string(agents[k].grid_point),
                                    std::to_string(agents[k].config.seed)};
    for (const auto& [key, value] : agents[k].grid_values) row.push_back(value);
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::ostringstream out;
  out << plural(static_cast<long long>(agents.size()), "agent") << ": " << plural(last.grid_point + 1, "grid point")
      << " x " << plural(last.seed_index + 1, "seed") << "\n";
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c)
      out << (c ? "  " : "") << row[c] << (c + 1 < row.size() ? std::string(width[c] - row[c].size(), ' ') : "");
    out << "\n";
  }
  return out.str();
}

TargetMode parse_target_mode(const Command& cmd) {
  const std::string mode = cmd.get("target-mode");
  if (mode == "any") return TargetMode::Any;
  if (mode == "all") return TargetMode::All;
  if (mode == "median") return TargetMode::Median;
  throw InputError(
      cmd.complaint("--target-mode '" + format_excerpt(mode) + "' is not a mode; give any, all or median"));
}

const char* target_mode_name(TargetMode mode) {
  return mode == TargetMode::Any ? "any" : mode == TargetMode::All ? "all" : "median";
}

bool is_agents_run(const std::string& dir) {
  std::error_code error;
  return std::filesystem::is_directory(dir, error) &&
         std::filesystem::is_regular_file(agent_dir(dir, 0) + "/checkpoint.h5", error);
}

std::vector<rl::AgentSpec> read_agents_run(const std::string& dir) {
  std::vector<rl::AgentSpec> agents;
  std::error_code error;
  for (std::size_t k = 0; std::filesystem::exists(agent_dir(dir, k) + "/checkpoint.h5", error); ++k) {
    const std::string path = agent_dir(dir, k) + "/grid_point.toml";
    rl::AgentSpec agent;
    const rl::Checkpoint checkpoint = rl::read_checkpoint(agent_dir(dir, k) + "/checkpoint.h5");
    agent.config = checkpoint.config;
    agent.config.scenario = checkpoint.scenario;
    // "grid_point = P", "seed_index = J", then "[grid]" and one "key = value" per axis, as written below.
    std::istringstream lines(read_text_file(path, "the agent's grid point"));
    std::string line;
    bool grid = false, point = false, seed = false;
    while (std::getline(lines, line)) {
      line = trimmed(line);
      if (line.empty() || line.front() == '#') continue;
      if (line == "[grid]") {
        grid = true;
        continue;
      }
      const auto eq = line.find('=');
      if (eq == std::string::npos) throw InputError(path + ": '" + format_excerpt(line) + "' is not key = value");
      const std::string key = trimmed(line.substr(0, eq)), value = trimmed(line.substr(eq + 1));
      try {
        if (grid) {
          if (!rl::grid_key_allowed(key)) throw InputError("");
          agent.grid_values.emplace_back(key, value);
        } else if (key == "grid_point") {
          agent.grid_point = std::stoll(value);
          point = agent.grid_point >= 0;
        } else if (key == "seed_index") {
          agent.seed_index = std::stoll(value);
          seed = agent.seed_index >= 0;
        }
      } catch (const std::exception&) {
        throw InputError(path + ": '" + format_excerpt(line) +
                         "' is not a grid point's value; the run's folder is "
                         "damaged, train it again");
      }
    }
    if (!point || !seed)
      throw InputError(path + " names no grid_point or seed_index; the run's folder is damaged, train it again");
    agents.push_back(std::move(agent));
  }
  if (agents.empty()) throw InputError(dir + " holds no agents/0/checkpoint.h5; give the folder of a run of agents");
  return agents;
}

MemoryPlan agent_memory_plan(const rl::AgentSpec& agent, Device device) {
  const rl::TrainConfig& config = agent.config;
  MemoryPlan memory = engine_memory_plan(config.scenario, device, config.num_envs);
  memory.append(rl::Trainer::memory_plan(config, scenario_spec(config.scenario), device));
  add_frame_store_plan(memory, config, scenario_spec(config.scenario));  // each agent draws into its own
  return memory;
}

MemoryPlan batched_memory_plan(const std::vector<rl::AgentSpec>& agents, Device device) {
  const rl::TrainConfig& config = agents.front().config;
  const auto count = static_cast<std::int64_t>(agents.size());
  MemoryPlan memory = engine_memory_plan(config.scenario, device, config.num_envs, count);
  memory.append(
      rl::BatchedTrainer::memory_plan(config, scenario_spec(config.scenario), device, static_cast<int>(count)));
  return memory;
}

namespace {

// Every agent allocates what the first one does: the grid varies no shape.
std::size_t total_bytes(const std::vector<rl::AgentSpec>& agents, Device device, bool batched) {
  if (batched) return batched_memory_plan(agents, device).allocated_bytes();
  return agents.size() * agent_memory_plan(agents.front(), device).allocated_bytes();
}

std::string total_line(const std::vector<rl::AgentSpec>& agents, Device device, bool batched,
                       const AvailableMemory& available) {
  const std::size_t total = total_bytes(agents, device, batched);
  std::string line = "all " + plural(static_cast<long long>(agents.size()), "agent") + ": " + format_bytes(total) +
                     (batched ? std::string(" (one batched learner)")
                              : " (" + std::to_string(agents.size()) + " x " +
                                    format_bytes(agent_memory_plan(agents.front(), device).allocated_bytes()) + ")");
  if (available.known)
    line += ", " + format_bytes(available.free_bytes) +
            " free: " + (total <= available.free_bytes ? "fits" : "does not fit");
  return line;
}

}  // namespace

int dry_run_agents(const std::vector<rl::AgentSpec>& agents, Device device, bool batched) {
  const AvailableMemory available = available_memory(device);
  std::cout << agents_table(agents);
  if (batched)
    std::cout << "one batched learner of " << plural(static_cast<long long>(agents.size()), "agent") << ":\n"
              << batched_memory_plan(agents, device).table(available);
  else
    std::cout << "each agent:\n" << agent_memory_plan(agents.front(), device).table(available);
  std::cout << total_line(agents, device, batched, available) << "\n";
  return !available.known || total_bytes(agents, device, batched) <= available.free_bytes ? 0 : 2;
}

void require_agents_fit(const std::vector<rl::AgentSpec>& agents, Device device, bool batched) {
  const AvailableMemory available = available_memory(device);
  if (!available.known || total_bytes(agents, device, batched) <= available.free_bytes) return;
  throw InputError("surge train: on " + device.str() + ", " + total_line(agents, device, batched, available) +
                   "; give fewer agents, fewer grid values or a smaller --num-envs (--dry-run shows the plan)");
}

}  // namespace surge::cli

namespace surge::cli {
namespace {

AgentsPlan common_plan(const Command& cmd, Device device) {
  AgentsPlan plan;
  plan.device = device;
  if (cmd.has("target-return")) plan.target = cmd.get_double("target-return", -1e300, 1e300);
  plan.mode = parse_target_mode(cmd);
  plan.checkpoint_every = cmd.get_int("checkpoint-every", 0, std::int64_t(1) << 40);
  if (cmd.has("stop-after")) plan.stop_after = cmd.get_int("stop-after", 1, std::int64_t(1) << 40);
  for (const char* single : {"log-rollouts", "log-ranks"})
    if (!cmd.get_all(single).empty())
      throw InputError(
          cmd.complaint("--" + std::string(single) + " takes single-agent runs; drop --agents and --grid"));
  return plan;
}

}  // namespace

int train_agents(const AgentsPlan& plan, const std::string& out_dir) {
  return plan.batched ? train_agents_batched(plan, out_dir) : train_agents_separate(plan, out_dir);
}

int start_agents(const Command& cmd, std::vector<rl::AgentSpec> agents, Device device) {
  const bool batched = choose_batched(cmd, agents, device);
  if (cmd.flag_set("dry-run")) return dry_run_agents(agents, device, batched);
  require_agents_fit(agents, device, batched);
  AgentsPlan plan = common_plan(cmd, device);
  plan.batched = batched;
  plan.agents = std::move(agents);
  plan.reuse = cmd.flag_set("overwrite") ? RunFolder::Reuse::Overwrite : RunFolder::Reuse::Refuse;
  if (!cmd.get_all("out").empty() && cmd.get("out").empty())
    throw InputError(cmd.complaint("--out '' names no folder; give one, or leave --out out for a new dated one"));
  const std::string out_dir =
      cmd.get_all("out").empty()
          ? RunFolder::default_dir(plan.agents.front().config.scenario, "agents" + std::to_string(plan.agents.size()))
          : cmd.get("out");
  if (plan.reuse == RunFolder::Reuse::Refuse) RunFolder::require_free(out_dir, false, "surge train");
  return train_agents(plan, out_dir);
}

int resume_agents(const Command& cmd, Device device) {
  const std::string dir = cmd.get("resume");
  for (const char* fixed : {"scenario", "config", "preset", "set", "physics", "num-envs", "num-steps", "seed", "seeds",
                            "agents", "grid", "out", "total-steps"})
    if (!cmd.get_all(fixed).empty())
      throw InputError(cmd.complaint("--resume continues the agents as they were configured, so --" +
                                     std::string(fixed) + " cannot be given with it"));
  if (cmd.flag_set("overwrite") || cmd.flag_set("dry-run"))
    throw InputError(cmd.complaint("--resume continues the agents in " + dir + "; drop --overwrite and --dry-run"));
  AgentsPlan plan = common_plan(cmd, device);
  plan.agents = read_agents_run(dir);
  if (cmd.flag_set("no-graph"))
    for (rl::AgentSpec& agent : plan.agents) agent.config.cuda_graph = false;
  for (const rl::AgentSpec& agent : plan.agents) agent.config.validate();
  plan.batched = choose_batched(cmd, plan.agents, device);
  require_agents_fit(plan.agents, device, plan.batched);
  plan.reuse = RunFolder::Reuse::Resume;
  return train_agents(plan, dir);
}

}  // namespace surge::cli
