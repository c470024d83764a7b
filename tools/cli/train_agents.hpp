#pragma once
// `surge train --agents K --grid KEY=V1,V2,...` (docs/agents.md): the agents one process would train.
#include <string>
#include <vector>

#include "rl/agent_grid.hpp"
#include "tools/cli/args.hpp"

namespace surge::cli {

// --grid (repeated), with the keys a grid may vary in its help.
Command& add_grid_option(Command& cmd);

// The run's agents from --grid and config.num_agents (--agents): empty for a run of one agent and no
// grid. Throws InputError for a key a grid may not vary, a bad value, or --grid/--agents beside --seeds
// or --resume.
std::vector<rl::AgentSpec> plan_agents(const Command& cmd, const rl::TrainConfig& config);

// One line per agent (agent, grid point, seed, then each grid key's value) under a summary line:
// "6 agents: 3 grid points x 2 seeds".
std::string agents_table(const std::vector<rl::AgentSpec>& agents);

}  // namespace surge::cli
