#include "sim/physics_settings.hpp"

#include <cmath>
#include <cstdlib>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge {
namespace {

const char* kOptionForm = "write NAME=VALUE or NAME=LOW:HIGH, e.g. masspole=0.05:0.2";

double option_number(const std::string& text, const std::string& part) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = text.empty() ? NAN : std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(value))
    throw InputError("--physics '" + part + "': '" + text + "' is not a finite number; " + kOptionForm);
  return value;
}

}  // namespace

void set_physics(PhysicsSettings& settings, const PhysicsSetting& setting) {
  for (PhysicsSetting& existing : settings)
    if (existing.name == setting.name) {
      existing = setting;
      return;
    }
  settings.push_back(setting);
}

void set_physics(PhysicsSettings& settings, const PhysicsSettings& later) {
  for (const PhysicsSetting& setting : later) set_physics(settings, setting);
}

PhysicsSettings parse_physics_option(const std::string& text) {
  PhysicsSettings settings;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
      throw InputError("--physics '" + part +
                       "' is not of the form NAME=VALUE or NAME=LOW:HIGH (e.g. masspole=0.05:0.2)");
    PhysicsSetting setting;
    setting.name = part.substr(0, eq);
    const std::string value = part.substr(eq + 1);
    const std::size_t colon = value.find(':');
    if (colon == std::string::npos) {
      setting.low = setting.high = option_number(value, part);
    } else {
      setting.is_range = true;
      setting.low = option_number(value.substr(0, colon), part);
      setting.high = option_number(value.substr(colon + 1), part);
    }
    set_physics(settings, setting);
  }
  return settings;
}

PhysicsConfig resolve_physics(const ScenarioSpec& spec, const PhysicsSettings& settings) {
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  for (const PhysicsSetting& setting : settings) {
    const int j = spec.param_index(setting.name);
    if (j < 0) {
      std::string known;
      for (const ParamInfo& param : spec.params) known += (known.empty() ? "" : ", ") + std::string(param.name);
      throw InputError(spec.name + " has no physics parameter '" + setting.name + "'; its parameters are " + known);
    }
    physics.randomized[j] = setting.is_range ? 1 : 0;
    physics.low[j] = spec.round_param(setting.low);
    physics.high[j] = spec.round_param(setting.high);
    if (!setting.is_range) physics.value[j] = physics.low[j];
  }
  physics.validate(spec);
  return physics;
}

std::string physics_toml_line(const PhysicsSetting& setting) {
  if (setting.is_range)
    return setting.name + " = [" + format_shortest(setting.low) + ", " + format_shortest(setting.high) + "]";
  return setting.name + " = " + format_shortest(setting.low);
}

std::string physics_option_text(const PhysicsSettings& settings) {
  std::string text;
  for (const PhysicsSetting& s : settings) {
    if (!text.empty()) text += ',';
    text.append(s.name).append("=").append(format_shortest(s.low));
    if (s.is_range) text.append(":").append(format_shortest(s.high));
  }
  return text;
}

std::string describe_physics(const ScenarioSpec& spec, const PhysicsConfig& physics) {
  std::string text;
  for (std::size_t j = 0; j < spec.params.size(); ++j) {
    std::string item;
    if (physics.randomized[j])
      item = std::string(spec.params[j].name) + " ~ U(" + spec.param_text(physics.low[j]) + ", " +
             spec.param_text(physics.high[j]) + ")";
    else if (physics.value[j] != spec.params[j].default_value)
      item = std::string(spec.params[j].name) + " = " + spec.param_text(physics.value[j]);
    if (!item.empty()) text += (text.empty() ? "" : ", ") + item;
  }
  return text.empty() ? "defaults" : text;
}

}  // namespace surge
