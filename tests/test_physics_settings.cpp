// Physics as users give it (sim/physics_settings.hpp): the --physics text, resolution against each
// scenario's parameter table with its bad-input lines, and, for every scenario, engines built from
// such settings: fixed values applied, randomised ones inside their ranges, different across
// environments, and redrawn at exactly the steps where an environment's episode ended.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/physics_settings.hpp"
#include "sim/stream.hpp"

using surge::InputError;
using surge::PhysicsSetting;
using surge::PhysicsSettings;

TEST_CASE("--physics text: values, ranges, comma lists, later names override", "[physics]") {
  const PhysicsSettings settings = surge::parse_physics_option("masspole=0.05:0.2,length=0.6,gravity=-1e1:2.5e1");
  REQUIRE(settings.size() == 3);
  CHECK(settings[0].name == "masspole");
  CHECK(settings[0].is_range);
  CHECK(settings[0].low == 0.05);
  CHECK(settings[0].high == 0.2);
  CHECK(settings[1].name == "length");
  CHECK_FALSE(settings[1].is_range);
  CHECK(settings[1].low == 0.6);
  CHECK(settings[1].high == 0.6);
  CHECK(settings[2].low == -10.0);
  CHECK(settings[2].high == 25.0);

  PhysicsSettings merged = settings;
  surge::set_physics(merged, surge::parse_physics_option("masspole=0.3"));
  REQUIRE(merged.size() == 3);
  CHECK(merged[0].name == "masspole");
  CHECK_FALSE(merged[0].is_range);
  CHECK(merged[0].low == 0.3);

  // The option text and the TOML lines read back to the same numbers.
  CHECK(surge::parse_physics_option(surge::physics_option_text(settings)).size() == 3);
  const PhysicsSettings again = surge::parse_physics_option(surge::physics_option_text(settings));
  for (std::size_t k = 0; k < settings.size(); ++k) {
    CHECK(again[k].name == settings[k].name);
    CHECK(again[k].low == settings[k].low);
    CHECK(again[k].high == settings[k].high);
    CHECK(again[k].is_range == settings[k].is_range);
  }
  CHECK(surge::physics_toml_line(settings[0]) == "masspole = [0.05, 0.2]");
  CHECK(surge::physics_toml_line(settings[1]) == "length = 0.6");
}

TEST_CASE("malformed --physics text is bad input naming the part", "[physics]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "NAME=VALUE"},
      {"masspole", "'masspole'"},
      {"=0.2", "'=0.2'"},
      {"masspole=", "'masspole='"},
      {"masspole=heavy", "'heavy'"},
      {"masspole=0.1:", "''"},
      {":0.2", "':0.2'"},
      {"masspole=0.1:0.2:0.3", "'0.2:0.3'"},
      {"masspole=nan", "'nan'"},
      {"masspole=inf:1", "'inf'"},
      {"masspole=0.1,", "NAME=VALUE"},
      {"masspole=0.1 ", "'0.1 '"},
  };
  for (const auto& [text, named] : cases) {
    INFO("--physics '" << text << "'");
    CHECK_THROWS_AS(surge::parse_physics_option(text), InputError);
    CHECK_THROWS_WITH(surge::parse_physics_option(text), Catch::Contains(named) && Catch::Contains("--physics"));
  }
}

TEST_CASE("resolving settings against a scenario: applied, validated, described", "[physics]") {
  const surge::ScenarioSpec& spec = surge::scenario_spec("cartpole");
  const int masspole = spec.param_index("masspole"), length = spec.param_index("length");
  const surge::PhysicsConfig physics =
      surge::resolve_physics(spec, surge::parse_physics_option("masspole=0.05:0.2,length=0.6"));
  CHECK(physics.randomized[masspole] == 1);
  CHECK(physics.low[masspole] == 0.05f);
  CHECK(physics.high[masspole] == 0.2f);
  CHECK(physics.randomized[length] == 0);
  CHECK(physics.value[length] == 0.6f);
  CHECK(surge::describe_physics(spec, physics) == "masspole ~ U(0.05, 0.2), length = 0.6");
  CHECK(surge::describe_physics(spec, surge::resolve_physics(spec, {})) == "defaults");
  // A range that is a single point is allowed: every env draws that value.
  CHECK_NOTHROW(surge::resolve_physics(spec, surge::parse_physics_option("masspole=0.1:0.1")));

  struct Case {
    const char* scenario;
    const char* text;
    std::vector<std::string> named;
  };
  const Case cases[] = {
      {"cartpole", "mass=0.2", {"'mass'", "gravity, masscart, masspole, length, force_mag, tau"}},
      {"pendulum", "masspole=0.2", {"'masspole'", "gravity, mass, length, dt"}},
      {"cartpole", "masspole=0.3:0.2", {"masspole", "[0.3, 0.2]", "low must not exceed high"}},
      {"cartpole", "masspole=-0.1:0.2", {"masspole", "-0.1"}},
      {"cartpole", "masspole=-1", {"masspole", "-1"}},
      {"acrobot", "link_mass_2=0", {"link_mass_2", ">="}},
      {"mountain_car", "gravity=-0.001:0.002", {"gravity", "-0.001"}},
      {"mountain_car_continuous", "power=-1", {"power"}},
  };
  for (const Case& c : cases) {
    INFO(c.scenario << " --physics " << c.text);
    const surge::ScenarioSpec& s = surge::scenario_spec(c.scenario);
    const PhysicsSettings settings = surge::parse_physics_option(c.text);
    CHECK_THROWS_AS(surge::resolve_physics(s, settings), InputError);
    for (const std::string& word : c.named)
      CHECK_THROWS_WITH(surge::resolve_physics(s, settings), Catch::Contains(word));
  }
}

namespace {

// Every parameter of `spec`: those at even positions randomised over +-20% of their default, the
// others fixed at 1.1 x default, as one --physics text.
std::string mixed_physics_text(const surge::ScenarioSpec& spec) {
  PhysicsSettings settings;
  for (int j = 0; j < spec.param_count(); ++j) {
    const double base = spec.params[j].default_value;
    PhysicsSetting s;
    s.name = spec.params[j].name;
    s.is_range = j % 2 == 0;
    s.low = s.is_range ? 0.8 * base : 1.1 * base;
    s.high = s.is_range ? 1.2 * base : 1.1 * base;
    settings.push_back(s);
  }
  return surge::physics_option_text(settings);
}

}  // namespace

TEST_CASE("every scenario: fixed values applied, ranges drawn per env and redrawn at each auto-reset",
          "[physics][vec_env]") {
  const surge::Device cpu = surge::Device::cpu();
  for (const std::string& name : surge::scenario_names()) {
    INFO("scenario " << name);
    const surge::ScenarioSpec& spec = surge::scenario_spec(name);
    const PhysicsSettings settings = surge::parse_physics_option(mixed_physics_text(spec));
    const surge::PhysicsConfig physics = surge::resolve_physics(spec, settings);
    const std::int64_t n = 128;
    const int width = spec.param_count();
    auto engine = surge::make_engine(name, cpu, n, 5, physics);
    surge::Stream stream(cpu);

    auto check_ranges = [&](const std::vector<double>& params) {
      for (int j = 0; j < width; ++j) {
        INFO("parameter " << spec.params[j].name);
        std::vector<double> column;
        for (std::int64_t i = 0; i < n; ++i) column.push_back(params[i * width + j]);
        if (physics.randomized[j]) {
          for (double v : column) {
            REQUIRE(v >= physics.low[j]);
            REQUIRE(v <= physics.high[j]);
          }
          std::sort(column.begin(), column.end());
          CHECK(std::unique(column.begin(), column.end()) - column.begin() > n * 9 / 10);
        } else {
          for (double v : column) REQUIRE(v == physics.value[j]);
          CHECK(physics.value[j] == spec.round_param(1.1 * spec.params[j].default_value));
        }
      }
    };
    std::vector<double> previous = surge::params_to_host(*engine, stream);
    check_ranges(previous);

    // Step with random actions past the time limit, so that every env ends at least one episode.
    const bool discrete = spec.action_kind == surge::ActionKind::Discrete;
    surge::DeviceBuffer<std::int32_t> discrete_actions(cpu, discrete ? n : 0);
    surge::DeviceBuffer<float> continuous_actions(cpu, discrete ? 0 : n * spec.action_dim);
    surge::DeviceBuffer<float> obs(cpu, n * spec.obs_dim), reward(cpu, n);
    surge::DeviceBuffer<std::uint8_t> terminated(cpu, n), truncated(cpu, n);
    std::vector<int> resets(static_cast<std::size_t>(n), 0);
    for (int t = 0; t <= spec.max_episode_steps; ++t) {
      engine->random_actions(discrete_actions.span(), continuous_actions.span(), stream);
      engine->step(surge::ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
                   surge::StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), {}}, stream);
      const std::vector<double> params = surge::params_to_host(*engine, stream);
      const std::vector<std::uint8_t> term = surge::to_host(terminated.cspan(), stream);
      const std::vector<std::uint8_t> trunc = surge::to_host(truncated.cspan(), stream);
      for (std::int64_t i = 0; i < n; ++i) {
        const bool ended = term[i] || trunc[i];
        resets[i] += ended;
        for (int j = 0; j < width; ++j) {
          const bool changed = params[i * width + j] != previous[i * width + j];
          // A randomised parameter changes exactly when the env's episode ended (a redraw equal to the
          // old value has probability ~2^-24); a fixed one never does.
          if (physics.randomized[j] && changed != ended) {
            INFO("step " << t << ", env " << i << ", parameter " << spec.params[j].name);
            CHECK(changed == ended);
          }
          if (!physics.randomized[j] && changed) {
            INFO("step " << t << ", env " << i << ", parameter " << spec.params[j].name);
            CHECK_FALSE(changed);
          }
        }
      }
      if (t % 50 == 0) check_ranges(params);
      previous = params;
    }
    CHECK(*std::min_element(resets.begin(), resets.end()) >= 1);
  }
}
