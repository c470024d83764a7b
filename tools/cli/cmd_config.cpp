// surge config show: the effective training config, as TOML, with where each value came from.
#include <iostream>
#include <map>
#include <sstream>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/train_setup.hpp"

namespace surge::cli {
namespace {

int run_config_show(const Args& args) {
  Command cmd("config show",
              "Prints the config `surge train` would use with the same options, as TOML: every key with its\n"
              "value and, in a comment, where that value came from (built-in default, the scenario's config\n"
              "file, its [cuda] table, a preset, a flag or --set). The output is a config file:\n"
              "`surge config show ... > my.toml` then `surge train --config my.toml` trains with it.");
  add_config_options(cmd)
      .option("device", "DEV", device_help() + "; a GPU applies the config's [cuda] table", "auto")
      .flag("no-graph", "cuda_graph = false, as surge train --no-graph")
      .example("surge config show --scenario cartpole")
      .example("surge config show --scenario mountain_car --preset cleanrl --device cpu")
      .example("surge config show --config runs/cartpole/20261201-120000-seed1/config.toml --set learning_rate=1e-3");
  if (!cmd.parse_or_print_usage(args)) return 0;
  const Device device = resolve_device(cmd.get("device"));
  const BuiltConfig built = build_train_config(cmd, device);
  const ScenarioSpec& spec = scenario_spec(built.config.scenario);
  std::cout << "# surge config show: " << spec.name << " (" << spec.gym_id << ") on " << device.str() << "\n";
  // Each line of the TOML gets its origin as a comment, aligned.
  std::istringstream lines(built.config.to_toml());
  std::vector<std::pair<std::string, std::string>> out;  // line, origin
  std::size_t width = 0;
  std::string line, prefix;
  while (std::getline(lines, line)) {
    std::string origin;
    if (!line.empty() && line.front() == '[') prefix = line.substr(1, line.find(']') - 1) + ".";
    const std::size_t equals = line.find(" = ");
    if (equals != std::string::npos) {
      const auto it = built.origin.find(prefix + line.substr(0, equals));
      origin = it == built.origin.end() ? "" : it->second;
      width = std::max(width, line.size());
    }
    out.emplace_back(line, origin);
  }
  for (const auto& [text, origin] : out) {
    std::cout << text;
    if (!origin.empty()) std::cout << std::string(width + 2 - text.size(), ' ') << "# " << origin;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

int run_config(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "Usage: surge config show [options]\n\n"
                 "  show   the effective training config (TOML) and where each value came from;\n"
                 "         `surge config show --help` lists its options\n";
    if (!args.empty()) return 0;
    std::cerr << "surge config: no subcommand given; the one there is: show\n";
    return 2;
  }
  if (args[0] == "show") return run_config_show(Args(args.begin() + 1, args.end()));
  throw InputError("surge config: unknown subcommand '" + args[0] + "'; the one there is: show");
}

}  // namespace surge::cli
