#include "tools/cli/physics_option.hpp"

namespace surge::cli {

Command& add_physics_option(Command& cmd) {
  return cmd.repeated(
      "physics", "NAME=V|NAME=LO:HI",
      "fix a physics parameter (masspole=0.2) or draw it per env at every reset from U(LO, HI) "
      "(masspole=0.05:0.2); several may be comma-separated; `surge --help` lists each scenario's parameters");
}

PhysicsSettings physics_options(const Command& cmd) {
  PhysicsSettings settings;
  for (const std::string& text : cmd.get_all("physics")) set_physics(settings, parse_physics_option(text));
  return settings;
}

JsonObject physics_json(const ScenarioSpec& spec, const PhysicsConfig& physics) {
  JsonObject json;
  for (int j = 0; j < spec.param_count(); ++j) {
    if (physics.randomized[j])
      json.add(spec.params[j].name, std::vector<double>{physics.low[j], physics.high[j]});
    else
      json.add(spec.params[j].name, static_cast<double>(physics.value[j]));
  }
  return json;
}

}  // namespace surge::cli
