#pragma once
// `surge train --agents K --grid KEY=V1,V2,...` (docs/agents.md): K independent learners in one process,
// each an engine and a trainer of its own, their iterations run side by side across the CPU's threads.
// Agent k is bit for bit `surge train` alone with its config (seed s_k, the grid point's values).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "rl/agent_grid.hpp"
#include "sim/device.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/run_folder.hpp"

namespace surge::cli {

// --grid (repeated), with the keys a grid may vary in its help, --target-mode and --learner.
Command& add_grid_option(Command& cmd);

// The run's agents from the config's [grid] table, --grid and config.num_agents (--agents): empty for a
// run of one agent and no grid. Throws InputError for a key a grid may not vary, a bad value, or
// --grid/--agents beside --seeds.
// `file_grid` is the config file's [grid] table; a --grid of the same key replaces its axis.
std::vector<rl::AgentSpec> plan_agents(const Command& cmd, const rl::TrainConfig& config,
                                       const std::vector<rl::GridAxis>& file_grid = {});

// One line per agent (agent, grid point, seed, then each grid key's value) under a summary line:
// "6 agents: 3 grid points x 2 seeds".
std::string agents_table(const std::vector<rl::AgentSpec>& agents);

// When the run stops with --target-return: once any agent, every agent, or at least half of them have
// reached it. Each agent stops (pauses) at its first iteration at the target, as a run of it alone does.
enum class TargetMode { Any, All, Median };
TargetMode parse_target_mode(const Command& cmd);
const char* target_mode_name(TargetMode mode);

// Whether `dir` holds a run of several agents (DIR/agents/0/checkpoint.h5), which --resume DIR continues.
bool is_agents_run(const std::string& dir);
// The agents of the run in `dir` as it was configured: each one's config from its checkpoint, its grid
// point and values from DIR/agents/<k>/grid_point.toml. Throws InputError naming the file at fault.
std::vector<rl::AgentSpec> read_agents_run(const std::string& dir);

struct AgentsPlan {
  std::vector<rl::AgentSpec> agents;
  Device device = Device::cpu();
  double target = NAN;
  TargetMode mode = TargetMode::All;
  std::int64_t checkpoint_every = 0, stop_after = -1;
  RunFolder::Reuse reuse = RunFolder::Reuse::Refuse;  // Resume: every agent goes on from its checkpoint
  bool batched = false;  // one BatchedTrainer for all agents (--learner), else one Trainer per agent
};

// --learner separate|batched|auto for these agents: whether the batched learner trains them. auto takes it on
// CUDA where it covers every agent's config, else one learner per agent. Throws InputError (one line) for a
// bad value, and for batched where an agent's config is not covered (rl::BatchedTrainer::supported).
bool choose_batched(const Command& cmd, const std::vector<rl::AgentSpec>& agents, Device device);

// Per agent (one engine and one trainer) and for all of them; `--dry-run` prints both.
MemoryPlan agent_memory_plan(const rl::AgentSpec& agent, Device device);
// The batched learner's: one engine of K agents and one BatchedTrainer of K agents.
MemoryPlan batched_memory_plan(const std::vector<rl::AgentSpec>& agents, Device device);
// Prints the agents, the plan of one (batched: the batched plan) and the total; returns 0 if the total fits
// (or cannot be measured), 2 if not.
int dry_run_agents(const std::vector<rl::AgentSpec>& agents, Device device, bool batched = false);
// Throws InputError when K agents do not fit in the device's free memory.
void require_agents_fit(const std::vector<rl::AgentSpec>& agents, Device device, bool batched = false);

// Trains the agents into `out_dir` with the plan's learner; returns the exit code.
int train_agents(const AgentsPlan& plan, const std::string& out_dir);
int train_agents_separate(const AgentsPlan& plan, const std::string& out_dir);  // train_agents_run.cpp
int train_agents_batched(const AgentsPlan& plan, const std::string& out_dir);   // train_agents_batched.cpp

// `surge train` with --agents or --grid: the dry run, or the run into --out (by default
// runs/<scenario>/<date>-<time>-agents<K>).
int start_agents(const Command& cmd, std::vector<rl::AgentSpec> agents, Device device);
// `surge train --resume DIR` of a run of agents: every agent goes on from its checkpoint, bit for bit.
int resume_agents(const Command& cmd, Device device);

}  // namespace surge::cli
