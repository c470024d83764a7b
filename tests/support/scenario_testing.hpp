#pragma once
// Checks every scenario test shares: Gymnasium's golden transitions replayed through a scenario's
// SURGE_HD functions and through a CPU engine, reset distributions, and episodes run through an
// engine to audit time limits, auto-reset and the episode tally.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/scenario.hpp"
#include "sim/stream.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/io.hpp"

namespace surge::testing {

constexpr double kPi = 3.14159265358979323846;

// a - b moved into [-pi, pi]: the distance between two angles.
inline double angle_difference(double a, double b) { return std::remainder(a - b, 2.0 * kPi); }

// One scenario's golden transitions, with the checks every scenario test makes of them.
inline GoldenSet load_golden(const ScenarioSpec& spec) {
  const int action_dim = spec.action_kind == ActionKind::Discrete ? 1 : spec.action_dim;
  REQUIRE(action_dim == 1);  // the golden files hold one column `action`
  GoldenSet golden = load_golden(spec.name, spec.state_names, spec.obs_dim);
  REQUIRE(golden.state_dim == spec.state_dim);
  REQUIRE(golden.rows >= 1000);
  return golden;
}

// What one implementation produced for every golden row.
struct Transitions {
  std::vector<double> next_state;  // [rows][state_dim]
  std::vector<double> obs;         // [rows][obs_dim]
  std::vector<double> reward;      // [rows]
  std::vector<int> terminated;     // [rows]
};

template <class S>
typename S::Params default_params() {
  typename S::Params params;
  auto* fields = reinterpret_cast<typename S::ParamType*>(&params);
  for (std::size_t j = 0; j < S::kParams.size(); ++j) fields[j] = static_cast<typename S::ParamType>(S::kParams[j].default_value);
  return params;
}

template <class S>
typename S::State state_from(const double* values) {
  float fields[S::kStateNames.size()];
  for (std::size_t k = 0; k < S::kStateNames.size(); ++k) fields[k] = static_cast<float>(values[k]);
  typename S::State state;
  std::memcpy(&state, fields, sizeof state);
  return state;
}

template <class S>
typename S::Action action_from(const double* values) {
  if constexpr (S::kActionKind == ActionKind::Discrete) {
    return static_cast<std::int32_t>(values[0]);
  } else {
    typename S::Action action;
    for (int k = 0; k < S::kActionDim; ++k) action.v[k] = static_cast<float>(values[k]);
    return action;
  }
}

// One step of S from `state` under default physics, appended to `out`.
template <class S>
void step_once(typename S::State state, const typename S::Action& action, Transitions& out) {
  const StepResult result = S::step(state, default_params<S>(), action);
  float fields[S::kStateNames.size()];
  std::memcpy(fields, &state, sizeof state);
  for (float v : fields) out.next_state.push_back(v);
  float obs[S::kObsDim];
  S::observe(state, obs);
  for (float v : obs) out.obs.push_back(v);
  out.reward.push_back(result.reward);
  out.terminated.push_back(result.terminated ? 1 : 0);
}

// Every golden row through the scenario's SURGE_HD step and observe, on the host.
template <class S>
Transitions step_golden_hd(const GoldenSet& golden) {
  Transitions out;
  for (std::int64_t row = 0; row < golden.rows; ++row)
    step_once<S>(state_from<S>(&golden.state[row * golden.state_dim]), action_from<S>(&golden.action[row * golden.action_dim]),
                 out);
  return out;
}

// Every golden row through an engine's batched transition, one environment per row.
inline Transitions step_golden_engine(const std::string& name, const GoldenSet& golden, Device device = Device::cpu()) {
  Stream stream(device);
  const std::int64_t n = golden.rows;
  auto engine = make_engine(name, device, n, 0);
  const ScenarioSpec& spec = engine->spec();
  std::vector<float> states(golden.state.begin(), golden.state.end());
  std::vector<std::int32_t> discrete;
  std::vector<float> continuous;
  if (spec.action_kind == ActionKind::Discrete)
    for (double a : golden.action) discrete.push_back(static_cast<std::int32_t>(a));
  else
    continuous.assign(golden.action.begin(), golden.action.end());
  DeviceBuffer<float> states_in(device, n * spec.state_dim), next(device, n * spec.state_dim), obs(device, n * spec.obs_dim),
      reward(device, n), continuous_in(device, static_cast<std::int64_t>(continuous.size()));
  DeviceBuffer<std::int32_t> discrete_in(device, static_cast<std::int64_t>(discrete.size()));
  DeviceBuffer<std::uint8_t> terminated(device, n);
  from_host(states_in.span(), states, stream);
  if (!discrete.empty()) from_host(discrete_in.span(), discrete, stream);
  if (!continuous.empty()) from_host(continuous_in.span(), continuous, stream);
  engine->transition(states_in.cspan(), ActionView{discrete_in.cspan(), continuous_in.cspan()}, next.span(), obs.span(),
                     reward.span(), terminated.span(), stream);
  Transitions out;
  for (float v : to_host(next.cspan(), stream)) out.next_state.push_back(v);
  for (float v : to_host(obs.cspan(), stream)) out.obs.push_back(v);
  for (float v : to_host(reward.cspan(), stream)) out.reward.push_back(v);
  for (std::uint8_t v : to_host(terminated.cspan(), stream)) out.terminated.push_back(v);
  return out;
}

// Every golden row through `surge step --device <device>`, read back from the CSV it writes.
inline Transitions step_golden_cli(const ScenarioSpec& spec, const GoldenSet& golden, const std::string& device = "cpu") {
  const std::string input = golden_path(spec.name);
  const std::string output = "surge_step_" + spec.name + "_" + device + "_output.csv";  // in the test's working directory
  const Result run =
      run_surge("step --scenario " + spec.name + " --input '" + input + "' --output " + output + " --device " + device);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const cli::CsvTable table = cli::CsvTable::read(output);
  std::remove(output.c_str());
  REQUIRE(static_cast<std::int64_t>(table.rows.size()) == golden.rows);
  auto column = [&](const std::string& name) {
    const int c = table.column(name);
    INFO("surge step output column " << name);
    REQUIRE(c >= 0);
    return c;
  };
  std::vector<int> next_columns, obs_columns;
  for (const std::string& name : spec.state_names) next_columns.push_back(column("next_" + name));
  for (int k = 0; k < spec.obs_dim; ++k) obs_columns.push_back(column("obs_" + std::to_string(k)));
  const int reward_column = column("reward"), terminated_column = column("terminated");
  Transitions out;
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    for (int c : next_columns) out.next_state.push_back(cli::parse_cell(table, row, c));
    for (int c : obs_columns) out.obs.push_back(cli::parse_cell(table, row, c));
    out.reward.push_back(cli::parse_cell(table, row, reward_column));
    out.terminated.push_back(static_cast<int>(cli::parse_cell(table, row, terminated_column)));
  }
  return out;
}

struct GoldenComparison {
  std::vector<int> angle_states;   // state coordinates compared modulo 2*pi
  std::vector<double> next_extra;  // [rows][state_dim] added to the tolerance, or empty
  std::vector<double> obs_extra;   // [rows][obs_dim] added to the tolerance, or empty
};

// Allows, on top of the golden tolerance, for how far rounding the golden float64 state to float32
// alone moves each output: each input coordinate is moved one whole float32 ulp (at least twice its
// rounding error) and the changes of the outputs are summed. Needed where one step amplifies input
// errors strongly (Acrobot at velocities near 9 pi).
template <class S>
void allow_for_input_rounding(const GoldenSet& golden, GoldenComparison& comparison) {
  constexpr int kStateDim = static_cast<int>(S::kStateNames.size());
  auto is_angle = [&](int k) {
    return std::find(comparison.angle_states.begin(), comparison.angle_states.end(), k) != comparison.angle_states.end();
  };
  const typename S::Params params = default_params<S>();
  comparison.next_extra.assign(golden.rows * kStateDim, 0.0);
  comparison.obs_extra.assign(golden.rows * S::kObsDim, 0.0);
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    float start[kStateDim];
    for (int k = 0; k < kStateDim; ++k) start[k] = static_cast<float>(golden.state[row * kStateDim + k]);
    const auto action = action_from<S>(&golden.action[row * golden.action_dim]);
    auto step_from = [&](const float* fields, float* next, float* obs) {
      typename S::State state;
      std::memcpy(&state, fields, sizeof state);
      S::step(state, params, action);
      std::memcpy(next, &state, sizeof state);
      S::observe(state, obs);
    };
    float base_next[kStateDim], base_obs[S::kObsDim];
    step_from(start, base_next, base_obs);
    for (int moved_coordinate = 0; moved_coordinate < kStateDim; ++moved_coordinate) {
      float moved[kStateDim];
      std::memcpy(moved, start, sizeof moved);
      moved[moved_coordinate] = std::nextafter(moved[moved_coordinate], INFINITY);
      float next[kStateDim], obs[S::kObsDim];
      step_from(moved, next, obs);
      for (int k = 0; k < kStateDim; ++k)
        comparison.next_extra[row * kStateDim + k] +=
            is_angle(k) ? std::abs(angle_difference(next[k], base_next[k])) : std::abs(double(next[k]) - base_next[k]);
      for (int k = 0; k < S::kObsDim; ++k) comparison.obs_extra[row * S::kObsDim + k] += std::abs(double(obs[k]) - base_obs[k]);
    }
  }
}

// Compares every value with the golden tolerance; reports the first few mismatches and returns the
// worst |error| / tolerance seen.
inline double compare_with_golden(const std::string& what, const ScenarioSpec& spec, const GoldenSet& golden,
                                  const Transitions& ours, const GoldenComparison& options = {}) {
  REQUIRE(static_cast<std::int64_t>(ours.reward.size()) == golden.rows);
  double worst = 0;
  std::string worst_where;
  int mismatches = 0;
  auto check = [&](double value, double reference, double extra, bool angle, const std::string& field, std::int64_t row) {
    const double error = angle ? std::abs(angle_difference(value, reference)) : std::abs(value - reference);
    const double ratio = error / (golden_tolerance(reference) + extra);
    if (!(ratio <= worst)) {
      worst = ratio;
      worst_where = field + " in row " + std::to_string(row + 1);
    }
    if (!(ratio <= 1.0) && ++mismatches <= 5)
      FAIL_CHECK(what << ": row " << row + 1 << " " << field << " = " << value << ", Gymnasium " << reference << " (error "
                      << error << ", tolerance " << golden_tolerance(reference) + extra << ")");
  };
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    for (int k = 0; k < spec.state_dim; ++k) {
      const std::size_t at = row * spec.state_dim + k;
      const bool angle = std::find(options.angle_states.begin(), options.angle_states.end(), k) != options.angle_states.end();
      check(ours.next_state[at], golden.next_state[at], options.next_extra.empty() ? 0.0 : options.next_extra[at], angle,
            "next_" + spec.state_names[k], row);
    }
    for (int k = 0; k < spec.obs_dim; ++k) {
      const std::size_t at = row * spec.obs_dim + k;
      check(ours.obs[at], golden.obs[at], options.obs_extra.empty() ? 0.0 : options.obs_extra[at], false,
            "obs_" + std::to_string(k), row);
    }
    check(ours.reward[row], golden.reward[row], 0.0, false, "reward", row);
    if (ours.terminated[row] != golden.terminated[row] && ++mismatches <= 5)
      FAIL_CHECK(what << ": row " << row + 1 << " terminated = " << ours.terminated[row] << ", Gymnasium "
                      << golden.terminated[row]);
  }
  std::printf("%s: %lld rows, worst |error| / tolerance = %.3g (%s)\n", what.c_str(), static_cast<long long>(golden.rows),
              worst, worst_where.c_str());
  CHECK(mismatches == 0);
  return worst;
}

// The states of n freshly reset environments, [n][state_dim].
inline std::vector<float> reset_states(const std::string& name, std::int64_t n, std::uint64_t seed) {
  auto engine = make_engine(name, Device::cpu(), n, seed);
  Stream stream(Device::cpu());
  return to_host(engine->states(), stream);
}

// Coordinate k of rows of width `width` must look like U(low, high): inside the bounds, with mean
// within four standard errors and variance within 3% of (high - low)^2 / 12.
inline void check_uniform(const std::vector<float>& rows, int width, int k, double low, double high, const std::string& what) {
  const std::size_t n = rows.size() / width;
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = rows[i * width + k];
    INFO(what << " of row " << i << " = " << v);
    REQUIRE(v >= low);
    REQUIRE(v <= high);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  const double expected_variance = (high - low) * (high - low) / 12.0;
  INFO(what << ": mean " << mean << ", variance " << variance);
  CHECK(std::abs(mean - 0.5 * (low + high)) < 4.0 * std::sqrt(expected_variance / n));
  CHECK(std::abs(variance - expected_variance) < 0.03 * expected_variance);
}

// Coordinate k of every row must equal `value` exactly.
inline void check_constant(const std::vector<float>& rows, int width, int k, float value, const std::string& what) {
  for (std::size_t i = 0; i < rows.size() / width; ++i) {
    INFO(what << " of row " << i);
    REQUIRE(rows[i * width + k] == value);
  }
}

// A policy writes the action for one observation: action[0] is the index for discrete scenarios.
using Policy = std::function<void(const float* obs, float* action)>;

// T steps of every environment of an engine under `policy` (run on the host), as a rollout records them.
struct PolicyRun {
  std::int64_t steps = 0, envs = 0;
  std::vector<float> obs;             // [T+1][N][obs_dim]; obs[t] is what the policy saw at step t
  std::vector<float> final_obs;       // [T][N][obs_dim]; meaningful where the episode ended at t
  std::vector<float> reward;          // [T][N]
  std::vector<std::uint8_t> terminated, truncated;  // [T][N]
};

inline PolicyRun run_policy(Engine& engine, std::int64_t steps, const Policy& policy) {
  const Device device = engine.device();
  Stream stream(device);
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t n = engine.num_envs();
  const int obs_dim = spec.obs_dim;
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  const int action_width = discrete ? 1 : spec.action_dim;
  PolicyRun run;
  run.steps = steps;
  run.envs = n;
  DeviceBuffer<float> obs(device, n * obs_dim), final_obs(device, n * obs_dim), reward(device, n);
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n);
  DeviceBuffer<std::int32_t> discrete_actions(device, discrete ? n : 0);
  DeviceBuffer<float> continuous_actions(device, discrete ? 0 : n * spec.action_dim);
  engine.observe(obs.span(), stream);
  std::vector<float> current = to_host(obs.cspan(), stream);
  run.obs = current;
  std::vector<float> action(action_width);
  for (std::int64_t t = 0; t < steps; ++t) {
    std::vector<std::int32_t> discrete_host;
    std::vector<float> continuous_host;
    for (std::int64_t i = 0; i < n; ++i) {
      policy(&current[i * obs_dim], action.data());
      if (discrete)
        discrete_host.push_back(static_cast<std::int32_t>(action[0]));
      else
        continuous_host.insert(continuous_host.end(), action.begin(), action.end());
    }
    if (discrete)
      from_host(discrete_actions.span(), discrete_host, stream);
    else
      from_host(continuous_actions.span(), continuous_host, stream);
    engine.step(ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
                StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
    current = to_host(obs.cspan(), stream);
    run.obs.insert(run.obs.end(), current.begin(), current.end());
    const auto final_host = to_host(final_obs.cspan(), stream);
    run.final_obs.insert(run.final_obs.end(), final_host.begin(), final_host.end());
    const auto reward_host = to_host(reward.cspan(), stream);
    run.reward.insert(run.reward.end(), reward_host.begin(), reward_host.end());
    const auto terminated_host = to_host(terminated.cspan(), stream);
    run.terminated.insert(run.terminated.end(), terminated_host.begin(), terminated_host.end());
    const auto truncated_host = to_host(truncated.cspan(), stream);
    run.truncated.insert(run.truncated.end(), truncated_host.begin(), truncated_host.end());
  }
  return run;
}

// What the flags of a run say about its episodes, after checking them against the time limit.
struct EpisodeAudit {
  std::int64_t ended = 0, terminated = 0, truncated = 0;
  double return_sum = 0, length_sum = 0;
  std::vector<std::int64_t> lengths;  // of every episode that ended, in order of (env, time)
};

// Walks each environment's run: an episode is truncated exactly when its step count reaches the
// limit, and the observation after every end must be a first observation (`is_reset_obs`).
inline EpisodeAudit audit_episodes(const PolicyRun& run, const ScenarioSpec& spec,
                                   const std::function<bool(const float* obs)>& is_reset_obs) {
  EpisodeAudit audit;
  const int obs_dim = spec.obs_dim;
  for (std::int64_t i = 0; i < run.envs; ++i) {
    std::int64_t length = 0;
    double episode_return = 0;
    for (std::int64_t t = 0; t < run.steps; ++t) {
      const std::int64_t slot = t * run.envs + i;
      length += 1;
      episode_return += run.reward[slot];
      INFO("env " << i << ", step " << t << ", episode length " << length);
      REQUIRE(run.truncated[slot] == (length >= spec.max_episode_steps ? 1 : 0));
      if (run.terminated[slot] || run.truncated[slot]) {
        audit.ended += 1;
        audit.terminated += run.terminated[slot];
        audit.truncated += run.truncated[slot];
        audit.return_sum += episode_return;
        audit.length_sum += length;
        audit.lengths.push_back(length);
        REQUIRE(is_reset_obs(&run.obs[((t + 1) * run.envs + i) * obs_dim]));
        length = 0;
        episode_return = 0;
      }
    }
  }
  return audit;
}

// Every episode ran out of time: `episodes` of them ended, each truncated at exactly `time_limit` steps.
inline void check_all_truncated(const EpisodeAudit& audit, std::int64_t episodes, std::int64_t time_limit) {
  CHECK(audit.ended == episodes);
  CHECK(audit.terminated == 0);
  CHECK(audit.truncated == episodes);
  for (auto length : audit.lengths) CHECK(length == time_limit);
}

// The engine's own tally must agree with the audit of the flags and rewards.
inline void check_episode_stats(Engine& engine, const EpisodeAudit& audit) {
  Stream stream(engine.device());
  const EpisodeStats stats = engine.episode_stats(stream);
  CHECK(stats.episodes == audit.ended);
  CHECK(stats.length_sum == audit.length_sum);
  // The engine accumulates each return in float32.
  CHECK(stats.return_sum == Approx(audit.return_sum).epsilon(1e-5).margin(1e-3));
}

// Domain randomisation: with `ranges` randomised ({name, low, high}), every env's parameters lie in
// their ranges and differ across envs, the rest keep their defaults, and an episode's end redraws them.
struct ParamRange {
  const char* name;
  double low, high;
};

inline void check_randomized_params(const std::string& name, const std::vector<ParamRange>& ranges, const Policy& policy,
                                    std::int64_t steps_until_every_env_ended) {
  const ScenarioSpec& spec = scenario_spec(name);
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  std::vector<int> randomized;
  for (const ParamRange& range : ranges) {
    const int j = spec.param_index(range.name);
    INFO("parameter " << range.name);
    REQUIRE(j >= 0);
    physics.low[j] = spec.round_param(range.low);
    physics.high[j] = spec.round_param(range.high);
    physics.randomized[j] = 1;
    randomized.push_back(j);
  }
  const std::int64_t n = 256;
  auto engine = make_engine(name, Device::cpu(), n, 11, physics);
  Stream stream(Device::cpu());
  const int width = spec.param_count();
  auto check_params = [&](const std::vector<double>& params) {
    for (int j = 0; j < width; ++j) {
      const bool is_randomized = std::find(randomized.begin(), randomized.end(), j) != randomized.end();
      std::vector<double> values;
      for (std::int64_t i = 0; i < n; ++i) values.push_back(params[i * width + j]);
      INFO("parameter " << spec.params[j].name);
      if (is_randomized) {
        for (double v : values) {
          REQUIRE(v >= physics.low[j]);
          REQUIRE(v <= physics.high[j]);
        }
        std::sort(values.begin(), values.end());
        const auto distinct = std::unique(values.begin(), values.end()) - values.begin();
        CHECK(distinct > n * 9 / 10);
      } else {
        for (double v : values) REQUIRE(v == spec.params[j].default_value);
      }
    }
  };
  const std::vector<double> first = params_to_host(*engine, stream);
  check_params(first);
  const PolicyRun run = run_policy(*engine, steps_until_every_env_ended, policy);
  const std::vector<double> later = params_to_host(*engine, stream);
  check_params(later);
  // Every env has ended at least one episode, so each has drawn fresh parameters.
  for (std::int64_t i = 0; i < n; ++i) {
    bool ended = false;
    for (std::int64_t t = 0; t < run.steps; ++t) ended |= run.terminated[t * n + i] || run.truncated[t * n + i];
    REQUIRE(ended);
    for (int j : randomized) {
      INFO("env " << i << ", parameter " << spec.params[j].name);
      CHECK(later[i * width + j] != first[i * width + j]);
    }
  }
}

// A value outside physical sense is bad input, named in the message.
inline void check_rejects_bad_physics(const std::string& name, const std::string& param, float bad_low) {
  const ScenarioSpec& spec = scenario_spec(name);
  PhysicsConfig physics = PhysicsConfig::defaults(spec);
  const int j = spec.param_index(param);
  REQUIRE(j >= 0);
  physics.randomized[j] = 1;
  physics.low[j] = bad_low;
  physics.high[j] = spec.params[j].default_value;
  CHECK_THROWS_AS(make_engine(name, Device::cpu(), 4, 1, physics), InputError);
  CHECK_THROWS_WITH(make_engine(name, Device::cpu(), 4, 1, physics), Catch::Contains(param));
  physics.low[j] = spec.params[j].default_value * 2 + 1;  // low > high
  CHECK_THROWS_WITH(make_engine(name, Device::cpu(), 4, 1, physics), Catch::Contains(param));
}

}  // namespace surge::testing
