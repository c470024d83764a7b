#pragma once
// Physics as a user writes it, by parameter name, before it meets a scenario: a fixed value
// (masspole = 0.2) or a uniform range that every environment draws from afresh at each reset
// (masspole = [0.05, 0.2] in TOML, masspole=0.05:0.2 on the command line).
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace surge {

struct PhysicsSetting {
  std::string name;
  double low = 0.0, high = 0.0;  // equal for a fixed value; as written, before the scenario rounds them
  bool is_range = false;
};

// In the order first given; a name appears at most once.
using PhysicsSettings = std::vector<PhysicsSetting>;

// Adds `setting`, or replaces the one of the same name (a later layer overrides an earlier one).
void set_physics(PhysicsSettings& settings, const PhysicsSetting& setting);
void set_physics(PhysicsSettings& settings, const PhysicsSettings& later);

// Reads the --physics option: NAME=VALUE or NAME=LOW:HIGH, several separated by commas. Throws
// InputError naming the malformed part.
PhysicsSettings parse_physics_option(const std::string& text);

// The scenario's default physics with `settings` applied, validated against its parameter table:
// an unknown name (the message lists the scenario's parameters), low > high, or a value below the
// parameter's smallest sensible one throws InputError.
PhysicsConfig resolve_physics(const ScenarioSpec& spec, const PhysicsSettings& settings);

// "masspole = [0.05, 0.2]" / "length = 0.6": one TOML line per setting, reading back to the same numbers.
std::string physics_toml_line(const PhysicsSetting& setting);
// "masspole=0.05:0.2,length=0.6", as --physics takes it; "" for none.
std::string physics_option_text(const PhysicsSettings& settings);
// What differs from the defaults, in words: "masspole ~ U(0.05, 0.2), length = 0.6", or "defaults".
std::string describe_physics(const ScenarioSpec& spec, const PhysicsConfig& physics);

}  // namespace surge
