#pragma once
// The --physics option, the same on every command that builds environments: NAME=VALUE fixes a
// physics parameter, NAME=LOW:HIGH draws it from U(LOW, HIGH) per environment at every reset;
// repeatable, or several separated by commas.
#include "sim/physics_settings.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/json.hpp"

namespace surge::cli {

Command& add_physics_option(Command& cmd);
// Every --physics given, in order (a later one overrides an earlier one of the same name).
PhysicsSettings physics_options(const Command& cmd);

// Every parameter of the scenario: its value, or [low, high] where randomised.
JsonObject physics_json(const ScenarioSpec& spec, const PhysicsConfig& physics);

}  // namespace surge::cli
