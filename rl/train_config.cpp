// TOML config files and --set overrides for the trainer.
#include "rl/train_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>

#include <toml++/toml.h>

#include "rl/precision.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl {
namespace {

// The shortest text that reads back to the same double, kept a TOML float so it reads back as one.
std::string toml_float(double value) {
  std::string text = format_shortest(value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

// One config key: how to read it from a TOML node and how to write it back.
struct Key {
  const char* name;
  const char* kind;  // for messages: "an integer", "a number", ...
  std::function<void(TrainConfig&, const toml::node&, const std::string&)> read;
  std::function<std::string(const TrainConfig&)> write;
};

[[noreturn]] void bad_type(const std::string& where, const char* name, const char* kind) {
  throw InputError(where + ": " + name + " must be " + kind);
}

constexpr std::int64_t kMaxNumEnvs = std::int64_t(1) << 32;
constexpr std::int64_t kMaxNumSteps = std::int64_t(1) << 24;
constexpr std::int64_t kMaxTotalSteps = std::int64_t(1) << 50;
constexpr std::int64_t kMaxBatchSize = std::int64_t(1) << 36;  // keeps every planned size far below 2^64 bytes
constexpr std::int64_t kMaxNumAgents = 65536;
constexpr std::int64_t kMaxUpdateEpochs = 1 << 20;
constexpr std::size_t kMaxHiddenLayers = 64;

std::int64_t read_integer(const toml::node& node, const std::string& where, const char* name) {
  if (const auto* integer = node.as_integer()) return integer->get();
  if (const auto* floating = node.as_floating_point()) {  // 1e6 is a TOML float; accept it when whole
    const double value = floating->get();
    if (std::isfinite(value) && value == std::floor(value) && std::abs(value) < 9.0e18)
      return static_cast<std::int64_t>(value);
  }
  bad_type(where, name, "an integer");
}

// The learner computes in float32, so a number key must be finite and within float32's range:
// 1e300 would become inf there.
double read_number(const toml::node& node, const std::string& where, const char* name) {
  double value = NAN;
  if (const auto* floating = node.as_floating_point()) value = floating->get();
  if (const auto* integer = node.as_integer()) value = static_cast<double>(integer->get());
  if (std::isnan(value) && !node.is_number()) bad_type(where, name, "a number");
  if (!(std::abs(value) <= std::numeric_limits<float>::max()))
    throw InputError(where + ": " + name + " = " + format_shortest(value) +
                     " does not fit the key's type: a finite number of magnitude at most 3.4e38 (float32)");
  return value;
}

template <class Field>
Key integer_key(const char* name, Field TrainConfig::*field) {
  return {name, "an integer",
          [name, field](TrainConfig& c, const toml::node& n, const std::string& where) {
            c.*field = static_cast<Field>(read_integer(n, where, name));
          },
          [field](const TrainConfig& c) { return std::to_string(c.*field); }};
}

Key number_key(const char* name, double TrainConfig::*field) {
  return {name, "a number",
          [name, field](TrainConfig& c, const toml::node& n, const std::string& where) {
            c.*field = read_number(n, where, name);
          },
          [field](const TrainConfig& c) { return toml_float(c.*field); }};
}

Key bool_key(const char* name, bool TrainConfig::*field) {
  return {name, "true or false",
          [name, field](TrainConfig& c, const toml::node& n, const std::string& where) {
            const auto* value = n.as_boolean();
            if (!value) bad_type(where, name, "true or false");
            c.*field = value->get();
          },
          [field](const TrainConfig& c) { return std::string(c.*field ? "true" : "false"); }};
}

// A string key that must be one of `choices`; `allowed` lists them for messages.
Key choice_key(const char* name, std::string TrainConfig::*field, std::vector<std::string> choices,
               const char* allowed) {
  return {name, allowed,
          [name, field, choices, allowed](TrainConfig& c, const toml::node& n, const std::string& where) {
            const auto* value = n.as_string();
            if (!value || std::find(choices.begin(), choices.end(), value->get()) == choices.end())
              bad_type(where, name, allowed);
            c.*field = value->get();
          },
          [field](const TrainConfig& c) { return quoted_escaped(c.*field); }};
}

const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      {"scenario", "a scenario name such as \"cartpole\"",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const auto* value = n.as_string();
         if (!value) bad_type(where, "scenario", "a scenario name such as \"cartpole\"");
         c.scenario = value->get();
       },
       [](const TrainConfig& c) { return quoted_escaped(c.scenario); }},
      integer_key("num_envs", &TrainConfig::num_envs),
      integer_key("num_steps", &TrainConfig::num_steps),
      integer_key("total_steps", &TrainConfig::total_steps),
      {"seed", "a non-negative integer",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const std::int64_t value = read_integer(n, where, "seed");
         if (value < 0) throw InputError(where + ": seed must be a non-negative integer, got " + std::to_string(value));
         c.seed = static_cast<std::uint64_t>(value);
       },
       [](const TrainConfig& c) { return std::to_string(c.seed); }},
      integer_key("num_agents", &TrainConfig::num_agents),
      number_key("learning_rate", &TrainConfig::learning_rate),
      bool_key("anneal_lr", &TrainConfig::anneal_lr),
      number_key("gamma", &TrainConfig::gamma),
      number_key("gae_lambda", &TrainConfig::gae_lambda),
      integer_key("num_minibatches", &TrainConfig::num_minibatches),
      integer_key("update_epochs", &TrainConfig::update_epochs),
      bool_key("norm_adv", &TrainConfig::norm_adv),
      number_key("clip_coef", &TrainConfig::clip_coef),
      bool_key("clip_vloss", &TrainConfig::clip_vloss),
      number_key("ent_coef", &TrainConfig::ent_coef),
      number_key("vf_coef", &TrainConfig::vf_coef),
      number_key("max_grad_norm", &TrainConfig::max_grad_norm),
      number_key("target_kl", &TrainConfig::target_kl),
      number_key("adam_eps", &TrainConfig::adam_eps),
      bool_key("normalize_obs", &TrainConfig::normalize_obs),
      number_key("obs_clip", &TrainConfig::obs_clip),
      bool_key("normalize_reward", &TrainConfig::normalize_reward),
      number_key("reward_clip", &TrainConfig::reward_clip),
      {"hidden", "a list of layer widths such as [64, 64]",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const auto* array = n.as_array();
         if (!array) bad_type(where, "hidden", "a list of layer widths such as [64, 64]");
         std::vector<int> widths;
         for (const toml::node& element : *array) {
           const std::int64_t width = read_integer(element, where, "every entry of hidden");
           if (width < 1 || width > 65536)
             throw InputError(where + ": hidden layer width " + std::to_string(width) + " is out of range 1..65536");
           widths.push_back(static_cast<int>(width));
         }
         c.hidden = widths;
       },
       [](const TrainConfig& c) {
         std::string text = "[";
         for (std::size_t k = 0; k < c.hidden.size(); ++k) text += (k ? ", " : "") + std::to_string(c.hidden[k]);
         return text + "]";
       }},
      {"activation", "\"tanh\" or \"relu\"",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const auto* value = n.as_string();
         if (!value || (value->get() != "tanh" && value->get() != "relu"))
           bad_type(where, "activation", "\"tanh\" or \"relu\"");
         c.activation = value->get();
       },
       [](const TrainConfig& c) { return quoted_escaped(c.activation); }},
      bool_key("cpu_fused_mlp", &TrainConfig::cpu_fused_mlp),
      bool_key("cuda_fused_mlp", &TrainConfig::cuda_fused_mlp),
      integer_key("eval_every", &TrainConfig::eval_every),
      integer_key("eval_episodes", &TrainConfig::eval_episodes),
      bool_key("cuda_graph", &TrainConfig::cuda_graph),
      {"precision", "\"fp32\", \"tf32\" or \"bf16\"",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const auto* value = n.as_string();
         if (!value || !is_precision_name(value->get()))
           throw InputError(where + ": precision must be \"fp32\", \"tf32\" or \"bf16\"" +
                            (value ? ", got '" + format_excerpt(value->get()) + "'" : std::string()));
         c.precision = value->get();
       },
       [](const TrainConfig& c) { return quoted_escaped(c.precision); }},
      // The key before precision existed, read as its alias (tf32 = true is precision = "tf32"); never written.
      {"tf32", "true or false (an alias: precision = \"tf32\" or \"fp32\")",
       [](TrainConfig& c, const toml::node& n, const std::string& where) {
         const auto* value = n.as_boolean();
         if (!value) bad_type(where, "tf32", "true or false (an alias: precision = \"tf32\" or \"fp32\")");
         if (value->get())
           c.precision = "tf32";
         else if (c.precision == "tf32")
           c.precision = "fp32";
       },
       nullptr},
      integer_key("cpu_threads", &TrainConfig::cpu_threads),
      number_key("rank_timeout_s", &TrainConfig::rank_timeout_s),
      choice_key("observation", &TrainConfig::observation, {"vector", "pixels"}, "\"vector\" or \"pixels\""),
      integer_key("frame_size", &TrainConfig::frame_size),
      bool_key("grayscale", &TrainConfig::grayscale),
      integer_key("frame_stack", &TrainConfig::frame_stack),
      choice_key("encoder", &TrainConfig::encoder, {"nature", "small"}, "\"nature\" or \"small\""),
  };
  return table;
}

const Key* find_key(const std::string& name) {
  for (const Key& key : keys())
    if (name == key.name) return &key;
  return nullptr;
}

std::string known_keys() {
  std::string list;
  for (const Key& key : keys()) list += (list.empty() ? "" : ", ") + std::string(key.name);
  return list + ", physics.<parameter>";
}

// One entry of a [physics] table: a number fixes the parameter, [low, high] gives it a range.
// Whether the scenario has such a parameter, and whether the values make sense, is resolve_physics()'s
// business: the config does not know its scenario yet.
void read_physics_entry(TrainConfig& config, const std::string& name, const toml::node& node,
                        const std::string& where) {
  const std::string what =
      "physics." + format_excerpt(name) + " must be a number (a fixed value) or a range [low, high] of two numbers";
  const std::string key = "physics." + format_excerpt(name);
  // A parameter's name is a bare TOML key (every scenario's are): anything else could not be written back.
  const bool bare = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!bare) throw InputError(where + ": '" + key + "' is not a physics parameter name (letters, digits and _ only)");
  PhysicsSetting setting;
  setting.name = name;
  if (const auto* array = node.as_array()) {
    if (array->size() != 2) throw InputError(where + ": " + what);
    setting.is_range = true;
    const auto bound = [&](std::size_t k) {
      const toml::node& element = *array->get(k);
      if (!element.is_number()) throw InputError(where + ": " + what);
      return read_number(element, where, key.c_str());
    };
    setting.low = bound(0);
    setting.high = bound(1);
  } else {
    if (!node.is_number()) throw InputError(where + ": " + what);
    setting.low = setting.high = read_number(node, where, key.c_str());
  }
  if (!std::isfinite(setting.low) || !std::isfinite(setting.high))
    throw InputError(where + ": physics." + format_excerpt(name) + " must be finite");
  set_physics(config.physics, setting);
}

void read_physics_table(TrainConfig& config, const toml::node& node, const std::string& where) {
  const toml::table* table = node.as_table();
  if (!table)
    throw InputError(where + ": 'physics' must be a table of parameters, e.g. [physics] masspole = [0.05, 0.2]");
  // In the order the file gives them (toml++ iterates a table by name), so config.toml reads as written.
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (const auto& [name, value] : *table) entries.emplace_back(std::string(name.str()), &value);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const toml::source_position pa = a.second->source().begin, pb = b.second->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  for (const auto& [name, value] : entries) read_physics_entry(config, name, *value, where + " [physics]");
}

// Applies every key of `table` except the sub-tables named in `skip`.
void apply_table(TrainConfig& config, const toml::table& table, const std::string& where,
                 const std::vector<std::string>& skip) {
  for (const auto& [name, node] : table) {
    const std::string key(name.str());
    bool skipped = false;
    for (const std::string& s : skip) skipped = skipped || key == s;
    if (skipped) continue;
    if (key == "physics") {
      read_physics_table(config, node, where);
      continue;
    }
    const Key* known = find_key(key);
    if (!known)
      throw InputError(where + ": unknown config key '" + format_excerpt(key) + "'; known keys are " + known_keys());
    known->read(config, node, where);
  }
}

toml::table parse(const std::string& text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    const auto& begin = error.source().begin;
    throw InputError(source + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) + ": " +
                     std::string(error.description()));
  }
}

void require_range(bool ok, const std::string& key, const std::string& value, const std::string& allowed) {
  if (!ok) throw InputError("config " + key + " = " + value + " is out of range: " + allowed);
}

}  // namespace

void require_trainable(const TrainConfig& config) {
  if (config.pixel_observations() && config.normalize_obs)
    throw InputError(
        "config normalize_obs = true does not apply to observation = \"pixels\" (frames are scaled by 1/255); "
        "set normalize_obs = false");
}

std::vector<std::string> train_config_keys() {
  std::vector<std::string> names;
  for (const Key& key : keys())
    if (key.write) names.emplace_back(key.name);
  return names;
}

void TrainConfig::validate() const {
  auto text = [](auto value) {
    std::ostringstream out;
    out << value;
    return out.str();
  };
  // Sizes first, each bounded so that the products below and every buffer size of the memory plan fit
  // in 64 bits; the plan then says whether the run fits the device.
  require_range(num_envs >= 1 && num_envs <= kMaxNumEnvs, "num_envs", text(num_envs),
                "it must lie in 1.." + text(kMaxNumEnvs));
  require_range(num_steps >= 1 && num_steps <= kMaxNumSteps, "num_steps", text(num_steps),
                "it must lie in 1.." + text(kMaxNumSteps));
  require_range(total_steps >= 1 && total_steps <= kMaxTotalSteps, "total_steps", text(total_steps),
                "it must lie in 1.." + text(kMaxTotalSteps));
  require_range(num_agents >= 1 && num_agents <= kMaxNumAgents, "num_agents", text(num_agents),
                "it must lie in 1.." + text(kMaxNumAgents));
  require_range(num_minibatches >= 1, "num_minibatches", text(num_minibatches), "it must be at least 1");
  require_range(update_epochs >= 1 && update_epochs <= kMaxUpdateEpochs, "update_epochs", text(update_epochs),
                "it must lie in 1.." + text(kMaxUpdateEpochs));
  require_range(hidden.size() <= kMaxHiddenLayers, "hidden", "a list of " + text(hidden.size()) + " widths",
                "give at most " + text(kMaxHiddenLayers) + " hidden layers");
  std::int64_t batch = 0;
  if (__builtin_mul_overflow(num_envs, num_steps, &batch) || batch > kMaxBatchSize)
    throw InputError("the batch of num_envs x num_steps = " + text(num_envs) + " x " + text(num_steps) +
                     " is larger than " + text(kMaxBatchSize) + " samples; lower num_envs or num_steps");
  require_range(learning_rate > 0 && std::isfinite(learning_rate), "learning_rate", text(learning_rate),
                "it must be positive");
  require_range(gamma >= 0 && gamma <= 1, "gamma", text(gamma), "it must lie in [0, 1]");
  require_range(gae_lambda >= 0 && gae_lambda <= 1, "gae_lambda", text(gae_lambda), "it must lie in [0, 1]");
  require_range(clip_coef > 0 && std::isfinite(clip_coef), "clip_coef", text(clip_coef), "it must be positive");
  require_range(ent_coef >= 0 && std::isfinite(ent_coef), "ent_coef", text(ent_coef), "it must be >= 0");
  require_range(vf_coef >= 0 && std::isfinite(vf_coef), "vf_coef", text(vf_coef), "it must be >= 0");
  require_range(max_grad_norm >= 0 && std::isfinite(max_grad_norm), "max_grad_norm", text(max_grad_norm),
                "it must be >= 0 (0 turns clipping off)");
  require_range(target_kl >= 0 && std::isfinite(target_kl), "target_kl", text(target_kl),
                "it must be >= 0 (0 turns the early stop off)");
  require_range(adam_eps > 0 && std::isfinite(adam_eps), "adam_eps", text(adam_eps), "it must be positive");
  require_range(obs_clip > 0 && !std::isnan(obs_clip), "obs_clip", text(obs_clip), "it must be positive");
  require_range(reward_clip > 0 && !std::isnan(reward_clip), "reward_clip", text(reward_clip), "it must be positive");
  require_range(cpu_threads >= 0 && cpu_threads <= 4096, "cpu_threads", text(cpu_threads),
                "it must lie in 0..4096 (0 leaves OpenMP's default)");
  require_range(rank_timeout_s >= 0.1 && rank_timeout_s <= 1e6, "rank_timeout_s", text(rank_timeout_s),
                "it must lie in 0.1..1000000 (seconds a rank waits for the others)");
  require_range(eval_every >= 0, "eval_every", text(eval_every), "it must be >= 0 (0 turns evaluation off)");
  require_range(eval_episodes >= 1 && eval_episodes <= (std::int64_t(1) << 24), "eval_episodes", text(eval_episodes),
                "it must lie in 1..16777216");
  require_range(frame_size >= 8 && frame_size <= 512, "frame_size", text(frame_size),
                "it must lie in 8..512 (pixels a side of a square frame; 84 is usual)");
  require_range(frame_stack >= 1 && frame_stack <= 16 && frame_stack <= num_steps, "frame_stack", text(frame_stack),
                "it must lie in 1..16 and not exceed num_steps (4 is usual)");
  require_range(!hidden.empty(), "hidden", "[]", "give at least one hidden layer, e.g. [64, 64]");
  if (batch_size() % num_minibatches != 0)
    throw InputError("the batch of num_envs x num_steps = " + text(num_envs) + " x " + text(num_steps) + " = " +
                     text(batch_size()) + " does not split into num_minibatches = " + text(num_minibatches) +
                     " equal minibatches; change one of the three");
  if (norm_adv && minibatch_size() < 2)
    throw InputError("minibatches of " + text(minibatch_size()) +
                     " sample cannot normalise advantages; use fewer minibatches or set norm_adv = false");
  if (total_steps < batch_size())
    throw InputError("total_steps = " + text(total_steps) + " is less than one iteration of num_envs x num_steps = " +
                     text(batch_size()) + " steps; raise total_steps or shrink the batch");
}

std::string TrainConfig::to_toml() const {
  std::string text;
  for (const Key& key : keys())
    // A config that leaves the scenario open says nothing of it; an alias is never written.
    if (key.write && (std::string(key.name) != "scenario" || !scenario.empty()))
      text += std::string(key.name) + " = " + key.write(*this) + "\n";
  if (!physics.empty()) {
    text += "\n[physics]\n";
    for (const PhysicsSetting& setting : physics) text += physics_toml_line(setting) + "\n";
  }
  return text;
}

TrainConfig load_train_config(const std::string& toml_text, const std::string& source, bool on_cuda,
                              const std::string& preset) {
  const toml::table root = parse(toml_text, source);
  TrainConfig config;
  apply_table(config, root, source, {"cuda", "presets", "grid"});  // [grid]: grid_axes_from_toml
  if (const toml::node* cuda = root.get("cuda")) {
    const toml::table* table = cuda->as_table();
    if (!table) throw InputError(source + ": 'cuda' must be a table of keys for runs on a GPU");
    if (on_cuda) apply_table(config, *table, source + " [cuda]", {});
  }
  if (!preset.empty()) {
    const std::vector<std::string> known = train_config_presets(toml_text, source);
    const toml::table* table = root["presets"][preset].as_table();
    if (!table) {
      std::string list;
      for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
      throw InputError("unknown preset '" + format_excerpt(preset) + "'" +
                       (list.empty() ? " (" + source + " defines none)" : "; " + source + " defines " + list));
    }
    apply_table(config, *table, source + " [presets." + preset + "]", {});
  }
  return config;
}

bool train_config_sets(const std::string& toml_text, const std::string& source, const std::string& key) {
  return parse(toml_text, source).contains(key);
}

std::vector<std::string> train_config_presets(const std::string& toml_text, const std::string& source) {
  const toml::table root = parse(toml_text, source);
  std::vector<std::string> names;
  if (const toml::table* presets = root["presets"].as_table())
    for (const auto& [name, node] : *presets)
      if (node.is_table()) names.emplace_back(name.str());
  return names;
}

void apply_config_value(TrainConfig& config, const std::string& key, std::string value, const std::string& where) {
  if (key.rfind("physics.", 0) == 0) {
    toml::table parsed;
    try {
      parsed = toml::parse("value = " + value);
    } catch (const toml::parse_error&) {
      throw InputError(where + ": cannot read '" + format_excerpt(value) + "' as a number or a range [low, high]");
    }
    read_physics_entry(config, key.substr(8), *parsed.get("value"), where);
    return;
  }
  const Key* known = find_key(key);
  if (!known)
    throw InputError(where + ": unknown config key '" + format_excerpt(key) + "'; known keys are " + known_keys());
  if (key == "hidden" && !value.empty() && value.front() != '[') value = "[" + value + "]";
  toml::table parsed;
  try {
    parsed = toml::parse("value = " + value);
  } catch (const toml::parse_error&) {
    // A bare word (relu) is a string.
    try {
      parsed = toml::parse("value = \"" + value + "\"");
    } catch (const toml::parse_error&) {
      throw InputError(where + ": cannot read '" + format_excerpt(value) + "' as " + known->kind);
    }
  }
  known->read(config, *parsed.get("value"), where);
}

void apply_config_setting(TrainConfig& config, const std::string& setting) {
  const std::string shown = format_excerpt(setting);
  // One key per --set: a line break would let the TOML below read a second key, silently dropped.
  for (const char c : setting)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
      throw InputError("--set '" + shown +
                       "' holds a line break or another control character; give one key=value per --set");
  const auto eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set '" + shown + "' is not of the form key=value (e.g. --set learning_rate=3e-4)");
  // Spaces around the key are layout, as in TOML ("physics.a = 0" names parameter "a").
  std::string key = setting.substr(0, eq);
  key.erase(0, key.find_first_not_of(" \t"));
  key.erase(key.find_last_not_of(" \t") + 1);
  if (key.empty()) throw InputError("--set '" + shown + "' names no key (e.g. --set learning_rate=3e-4)");
  if (key.rfind("physics.", 0) != 0 && !find_key(key))
    throw InputError("--set: unknown config key '" + format_excerpt(key) + "'; known keys are " + known_keys());
  apply_config_value(config, key, setting.substr(eq + 1), "--set " + shown);
}

}  // namespace surge::rl
