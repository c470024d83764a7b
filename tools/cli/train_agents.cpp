#include "tools/cli/train_agents.hpp"

#include <algorithm>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::cli {

Command& add_grid_option(Command& cmd) {
  std::string keys;
  for (const std::string& key : rl::grid_keys()) keys += key + ", ";
  return cmd.repeated("grid", "KEY=V1,V2,...",
                      "train one agent per value (lr names learning_rate); several --grid make the cross product, "
                      "times --agents seeds each. A grid may vary " +
                          keys + "physics.NAME; not num_envs, num_steps, hidden or other keys that change shapes");
}

std::vector<rl::AgentSpec> plan_agents(const Command& cmd, const rl::TrainConfig& config) {
  const std::vector<std::string> grids = cmd.get_all("grid");
  if (grids.empty() && config.num_agents == 1) return {};
  for (const char* other : {"seeds", "resume"})
    if (cmd.has(other))
      throw InputError(cmd.complaint("--" + std::string(other) + " takes single-agent runs; drop --agents and --grid"));
  std::vector<rl::GridAxis> axes;
  for (const std::string& text : grids) axes.push_back(rl::parse_grid_axis(text));
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

}  // namespace surge::cli
