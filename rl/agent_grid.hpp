#pragma once
// The agents of one process (docs/agents.md): `--grid key=v1,v2,...` axes, their cross product and the
// seeds, as one single-agent TrainConfig per agent. Agent k of a run equals `surge train` alone with
// that agent's config.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rl/train_config.hpp"

namespace surge::rl {

// One --grid option: a key and the values it takes, each as TOML text that --set would read.
struct GridAxis {
  std::string key;                  // a config key ("learning_rate") or physics.NAME
  std::vector<std::string> values;  // "1e-4", "[0.05, 0.2]"
};

// Reads "key=v1,v2,...": commas inside brackets or quotes belong to one value, spaces around a value are
// layout, and `lr` names learning_rate. Throws InputError starting "--grid 'TEXT'" for a missing key or
// value, and for a key a grid may not vary (one that changes buffer shapes, or is not per agent), naming
// the keys it may vary.
GridAxis parse_grid_axis(const std::string& text);

// A config's [grid] table (`learning_rate = [1e-4, 3e-4]`, and `[grid.physics]` entries as physics.NAME),
// one axis per key in the file's order, checked as --grid checks them; none without the table.
// InputError messages start with `source`.
std::vector<GridAxis> grid_axes_from_toml(const std::string& toml_text, const std::string& source);

// The keys a grid may vary, as `--help` lists them; physics.NAME (any physics parameter) besides.
const std::vector<std::string>& grid_keys();
bool grid_key_allowed(const std::string& key);

struct AgentSpec {
  std::int64_t grid_point = 0;  // index into the cross product, the first axis varying slowest
  std::int64_t seed_index = 0;  // 0 .. base.num_agents - 1
  std::vector<std::pair<std::string, std::string>> grid_values;  // (key, value text), one per axis
  TrainConfig config;  // the base with the point's values, seed = base.seed + seed_index, num_agents = 1
};

// Every agent of a run: grid point p's seed j is agent p * base.num_agents + j, so each grid point gets
// the same seeds. Without axes, base.num_agents agents of base's values. Each agent's config is
// validated; throws InputError for a key given by two axes, a value --set would refuse (naming the
// --grid option), or more than 65536 agents in all.
std::vector<AgentSpec> expand_agents(const TrainConfig& base, const std::vector<GridAxis>& axes);

}  // namespace surge::rl
