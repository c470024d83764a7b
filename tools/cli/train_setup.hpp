#pragma once
// The options that make a training config, shared by `surge train` and `surge config show`, and the
// config they make: the scenario's built-in config (or --config FILE), its [cuda] table on a GPU, the
// preset, the flags, then --set, with where each value came from.
#include <map>
#include <string>

#include "rl/agent_grid.hpp"
#include "rl/train_config.hpp"
#include "scenarios/registry.hpp"
#include "sim/device.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"

namespace surge::cli {

// --scenario, --config, --preset, --set, --num-envs, --num-steps, --total-steps, --seed, --physics.
Command& add_config_options(Command& cmd);

struct BuiltConfig {
  rl::TrainConfig config;  // config.scenario is set
  // Config key (physics parameters as physics.NAME) -> where its value came from: "built-in default",
  // the config file, "its [cuda] table", "preset NAME", "--num-envs" ..., or "--set".
  std::map<std::string, std::string> origin;
  std::vector<rl::GridAxis> grid;  // the config file's [grid] table (surge train --agents, docs/agents.md)
  bool auto_num_envs = false;      // --num-envs auto: the caller measures N (config.num_envs is the file's)
};

// Builds and (unless --num-envs auto) validates the config; InputError on anything bad.
BuiltConfig build_train_config(const Command& cmd, Device device);

// With pixel observations, what a run's frame store (scenarios/pixel_obs.hpp: every frame once) adds to
// `plan` (one engine's); nothing for vector observations.
void add_frame_store_plan(MemoryPlan& plan, const rl::TrainConfig& config, const ScenarioSpec& spec);

}  // namespace surge::cli
