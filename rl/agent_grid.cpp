// --grid axes and the agents they make (docs/agents.md).
#include "rl/agent_grid.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <toml++/toml.h>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl {
namespace {

constexpr std::int64_t kMaxAgents = 65536;  // as TrainConfig::num_agents allows

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Splits at commas outside brackets and quotes: "[0.05, 0.2], 0.1" is two values.
std::vector<std::string> split_values(const std::string& text) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (const char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      values.push_back(trimmed(current));
      current.clear();
      continue;
    }
    current += c;
  }
  values.push_back(trimmed(current));
  return values;
}

std::string allowed_list() {
  std::string list;
  for (const std::string& key : grid_keys()) list += key + ", ";
  return list + "physics.NAME";
}

// A value as the file writes it ("1e-3", not 0.001): its source region, lines and columns from 1.
std::string source_text(const std::string& toml_text, const toml::node& node) {
  const toml::source_region& region = node.source();
  std::vector<std::size_t> line_starts = {0};
  for (std::size_t i = 0; i < toml_text.size(); ++i)
    if (toml_text[i] == '\n') line_starts.push_back(i + 1);
  auto offset = [&](const toml::source_position& position) {
    SURGE_CHECK(position.line >= 1 && position.line <= line_starts.size(), "a TOML position outside its text");
    return std::min(toml_text.size(), line_starts[position.line - 1] + position.column - 1);
  };
  const std::size_t begin = offset(region.begin), end = offset(region.end);
  return trimmed(toml_text.substr(begin, end > begin ? end - begin : 0));
}

}  // namespace

const std::vector<std::string>& grid_keys() {
  // Per-agent scalars no buffer's size and no launch depends on: each becomes an entry of the agents'
  // device array of hyperparameters.
  static const std::vector<std::string> keys = {
      "learning_rate", "anneal_lr", "clip_coef", "ent_coef", "vf_coef",     "gamma",    "gae_lambda",
      "max_grad_norm", "target_kl", "adam_eps",  "obs_clip", "reward_clip", "norm_adv", "clip_vloss"};
  return keys;
}

bool grid_key_allowed(const std::string& key) {
  if (key.rfind("physics.", 0) == 0) return key.size() > 8;
  const std::vector<std::string>& keys = grid_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

GridAxis parse_grid_axis(const std::string& text) {
  const std::string where = "--grid '" + format_excerpt(text) + "'";
  for (const char c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
      throw InputError(where + " holds a line break or another control character; give one key=v1,v2,... per --grid");
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError(where + " is not of the form key=v1,v2,... (e.g. --grid learning_rate=1e-4,3e-4)");
  GridAxis axis;
  axis.key = trimmed(text.substr(0, eq));
  if (axis.key.empty()) throw InputError(where + " names no key (e.g. --grid learning_rate=1e-4,3e-4)");
  if (axis.key == "lr") axis.key = "learning_rate";
  if (!grid_key_allowed(axis.key)) {
    const bool shapes = axis.key == "num_envs" || axis.key == "num_steps" || axis.key == "num_minibatches" ||
                        axis.key == "update_epochs" || axis.key == "hidden" || axis.key == "activation";
    const std::string why = axis.key == "seed" ? " is what --agents K varies (seeds seed .. seed + K - 1)"
                            : shapes           ? " changes the agents' buffer shapes, so every agent must share it"
                                               : " cannot vary across the agents of one process";
    throw InputError(where + ": " + format_excerpt(axis.key) + why + " (give it with --set); a grid may vary " +
                     allowed_list());
  }
  axis.values = split_values(text.substr(eq + 1));
  for (const std::string& value : axis.values)
    if (value.empty())
      throw InputError(where + " has an empty value; give values separated by commas (e.g. " + axis.key +
                       "=1e-4,3e-4)");
  return axis;
}

std::vector<GridAxis> grid_axes_from_toml(const std::string& toml_text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& error) {
    throw InputError(source + ": " + std::string(error.description()));
  }
  const toml::node* grid = root.get("grid");
  if (!grid) return {};
  const toml::table* table = grid->as_table();
  if (!table)
    throw InputError(source + ": 'grid' must be a table of keys and their values, e.g. [grid] lr = [1e-4, 3e-4]");
  // The file's order: toml++ iterates a table by name.
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (const auto& [name, node] : *table) {
    const toml::table* physics = std::string(name.str()) == "physics" ? node.as_table() : nullptr;
    if (!physics) {
      entries.emplace_back(std::string(name.str()), &node);
      continue;
    }
    for (const auto& [parameter, values] : *physics)
      entries.emplace_back("physics." + std::string(parameter.str()), &values);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.second->source().begin < b.second->source().begin; });
  std::vector<GridAxis> axes;
  for (const auto& [key, node] : entries) {
    const toml::array* values = node->as_array();
    if (!values || values->empty())
      throw InputError(source + " [grid] " + format_excerpt(key) + ": give a list of values, e.g. " +
                       format_excerpt(key) + " = [1e-4, 3e-4]");
    std::string text = key + "=";
    for (std::size_t i = 0; i < values->size(); ++i) {
      if (i) text += ',';
      text += source_text(toml_text, *values->get(i));
    }
    try {
      axes.push_back(parse_grid_axis(text));
    } catch (const InputError& error) {
      throw InputError(source + " [grid]: " + error.what());
    }
  }
  return axes;
}

std::vector<AgentSpec> expand_agents(const TrainConfig& base, const std::vector<GridAxis>& axes) {
  base.validate();
  std::int64_t points = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (axes[j].key == axes[i].key)
        throw InputError("--grid " + axes[i].key + " is given twice; give all its values in one --grid");
    SURGE_CHECK(!axes[i].values.empty(), "a grid axis without values");
    points *= static_cast<std::int64_t>(axes[i].values.size());
    if (points > kMaxAgents) break;
  }
  if (points > kMaxAgents || points * base.num_agents > kMaxAgents)
    throw InputError("the grid makes " +
                     (points > kMaxAgents ? "more than " + std::to_string(kMaxAgents) : std::to_string(points)) +
                     " points x " + plural(base.num_agents, "seed") + ", more than " + std::to_string(kMaxAgents) +
                     " agents; give fewer values or seeds");

  if (base.seed > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) -
                      static_cast<std::uint64_t>(base.num_agents - 1))
    throw InputError("seed = " + std::to_string(base.seed) + " leaves no room for " + plural(base.num_agents, "seed") +
                     " below 2^63; give a smaller seed");

  // Each grid point's config, checked once.
  std::vector<TrainConfig> point_configs;
  std::vector<std::vector<std::pair<std::string, std::string>>> point_values;
  for (std::int64_t p = 0; p < points; ++p) {
    TrainConfig config = base;
    config.num_agents = 1;
    std::vector<std::pair<std::string, std::string>> values;
    std::int64_t rest = p;
    std::int64_t stride = points;
    for (const GridAxis& axis : axes) {
      stride /= static_cast<std::int64_t>(axis.values.size());
      const std::string& value = axis.values[static_cast<std::size_t>(rest / stride)];
      rest %= stride;
      apply_config_value(config, axis.key, value, "--grid " + axis.key + "=" + format_excerpt(value));
      values.emplace_back(axis.key, value);
    }
    try {
      config.validate();
    } catch (const InputError& error) {
      std::string point;
      for (const auto& [key, value] : values) point += (point.empty() ? "" : ", ") + key + "=" + format_excerpt(value);
      throw InputError("--grid point " + point + ": " + error.what());
    }
    point_configs.push_back(std::move(config));
    point_values.push_back(std::move(values));
  }

  std::vector<AgentSpec> agents;
  agents.reserve(static_cast<std::size_t>(points * base.num_agents));
  for (std::int64_t p = 0; p < points; ++p)
    for (std::int64_t j = 0; j < base.num_agents; ++j) {
      AgentSpec agent;
      agent.grid_point = p;
      agent.seed_index = j;
      agent.grid_values = point_values[static_cast<std::size_t>(p)];
      agent.config = point_configs[static_cast<std::size_t>(p)];
      agent.config.seed = base.seed + static_cast<std::uint64_t>(j);
      agents.push_back(std::move(agent));
    }
  return agents;
}

}  // namespace surge::rl
