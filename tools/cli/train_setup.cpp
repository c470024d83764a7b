#include "tools/cli/train_setup.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "scenarios/train_configs.hpp"
#include "sim/error.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/physics_option.hpp"

namespace surge::cli {
namespace {

// to_toml() as key -> value text, physics parameters as physics.NAME.
std::map<std::string, std::string> values_of(const rl::TrainConfig& config) {
  std::map<std::string, std::string> values;
  std::istringstream in(config.to_toml());
  std::string line, prefix;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.front() == '[') {
      prefix = line.substr(1, line.find(']') - 1) + ".";
      continue;
    }
    const std::size_t equals = line.find(" = ");
    if (equals != std::string::npos) values[prefix + line.substr(0, equals)] = line.substr(equals + 3);
  }
  return values;
}

// Records `label` as the origin of every key whose value `config` changed since `before`.
void note_changes(BuiltConfig& built, std::map<std::string, std::string>& before, const std::string& label) {
  std::map<std::string, std::string> after = values_of(built.config);
  for (const auto& [key, value] : after)
    if (auto it = before.find(key); it == before.end() || it->second != value) built.origin[key] = label;
  before = std::move(after);
}

std::string read_config_file(const Command& cmd, const std::string& path) {
  try {
    return read_text_file(path, "config file");
  } catch (const InputError& error) {
    throw InputError(cmd.complaint(error.what()));
  }
}

}  // namespace

Command& add_config_options(Command& cmd) {
  cmd.option("scenario", "NAME",
             "scenario to train on (default: the config file's scenario key, else cartpole); see `surge --help`")
      .option("config", "FILE.toml",
              "read the config from FILE instead of the scenario's built-in one (a run's config.toml reproduces it)")
      .option("preset", "NAME", "apply the config's [presets.NAME] table, e.g. cleanrl (CleanRL's ppo.py defaults)")
      .option("num-envs", "N",
              "environments stepped together (config key num_envs), or auto: what a short training "
              "sweep on this device recommends (surge bench sweep --what train)")
      .option("num-steps", "T", "steps per environment per iteration (num_steps)")
      .option("total-steps", "S", "environment steps in the whole run (total_steps)")
      .option("seed", "K", "random seed of environments, initialisation, actions and shuffles (seed)")
      .option("agents", "K", "independent learners in one process, seeds seed .. seed+K-1 (num_agents; docs/agents.md)")
      .repeated("set", "KEY=VALUE",
                "set one config key, in TOML syntax (e.g. learning_rate=1e-3, hidden=[32,32], "
                "physics.masspole=[0.05,0.2])");
  return add_physics_option(cmd);
}

BuiltConfig build_train_config(const Command& cmd, Device device) {
  BuiltConfig built;
  std::string text, source;
  const bool from_file = cmd.has("config");
  if (from_file) {
    source = cmd.get("config");
    text = read_config_file(cmd, source);
  }
  // The scenario: the config file's, or --scenario, or cartpole; the two may not disagree.
  std::string scenario = from_file ? rl::load_train_config(text, source, false, "").scenario : "";
  const std::vector<std::string> flag = cmd.get_all("scenario");
  if (!flag.empty() && !scenario.empty() && flag.back() != scenario)
    throw InputError(cmd.complaint("--scenario " + flag.back() + " disagrees with scenario = \"" + scenario + "\" in " +
                                   source + "; drop one of them"));
  if (scenario.empty()) scenario = flag.empty() ? "cartpole" : flag.back();
  scenario_spec(scenario);  // an unknown name stops here, with the list of known ones
  if (!from_file) {
    text = default_train_config(scenario);
    source = default_train_config_name(scenario);
    if (text.empty() && cmd.has("preset"))
      throw InputError(cmd.complaint("scenario " + scenario + " has no built-in config to take preset '" +
                                     cmd.get("preset") + "' from; pass --config FILE.toml"));
  }
  const std::string file_label = std::filesystem::path(source).filename().string();
  built.config.scenario = scenario;
  std::map<std::string, std::string> values = values_of(built.config);
  for (const auto& [key, value] : values) built.origin[key] = "built-in default";
  built.origin["scenario"] = from_file ? file_label : flag.empty() ? "built-in default" : "--scenario";
  auto load = [&](bool on_cuda, const std::string& preset, const std::string& label) {
    built.config = rl::load_train_config(text, source, on_cuda, preset);
    built.config.scenario = scenario;
    note_changes(built, values, label);
  };
  load(false, "", file_label);
  built.grid = rl::grid_axes_from_toml(text, source);
  if (device.is_cuda()) load(true, "", file_label + " [cuda]");
  if (cmd.has("preset")) load(device.is_cuda(), cmd.get("preset"), "preset " + cmd.get("preset"));

  built.auto_num_envs = cmd.has("num-envs") && cmd.get("num-envs") == "auto";
  rl::TrainConfig& config = built.config;
  if (cmd.has("num-envs") && !built.auto_num_envs) {
    config.num_envs = cmd.get_int("num-envs", 1, std::int64_t(1) << 32);
    note_changes(built, values, "--num-envs");
  }
  if (cmd.has("num-steps")) {
    config.num_steps = cmd.get_int("num-steps", 1, std::int64_t(1) << 24);
    note_changes(built, values, "--num-steps");
  }
  if (cmd.has("total-steps")) {
    config.total_steps = cmd.get_int("total-steps", 1, std::int64_t(1) << 50);
    note_changes(built, values, "--total-steps");
  }
  if (cmd.has("seed")) {
    config.seed = cmd.get_u64("seed");
    note_changes(built, values, "--seed");
  }
  if (cmd.has("agents")) {
    config.num_agents = cmd.get_int("agents", 1, 65536);
    note_changes(built, values, "--agents");
  }
  if (cmd.flag_set("no-graph")) {
    config.cuda_graph = false;
    note_changes(built, values, "--no-graph");
  }
  set_physics(config.physics, physics_options(cmd));
  note_changes(built, values, "--physics");
  for (const std::string& setting : cmd.get_all("set")) {
    rl::apply_config_setting(config, setting);
    if (config.scenario != scenario)
      throw InputError(cmd.complaint("--set " + setting + " cannot change the scenario; use --scenario"));
    note_changes(built, values, "--set");
  }
  if (!built.auto_num_envs) config.validate();
  return built;
}

void add_frame_store_plan(MemoryPlan& plan, const rl::TrainConfig& config, const ScenarioSpec& spec) {
  if (!config.pixel_observations()) return;
  const int side = static_cast<int>(config.frame_size);
  PixelFrameStore::table(spec, config.num_steps, config.num_envs, FrameSize{side, side, config.grayscale ? 1 : 3},
                         static_cast<int>(config.frame_stack))
      .add_to(plan);
}

}  // namespace surge::cli
