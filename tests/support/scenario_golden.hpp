#pragma once
// Gymnasium's golden transitions replayed through a scenario: its SURGE_HD functions, an engine's
// batched transition and `surge step`, each compared with the reference (tests/support/golden.hpp)
// value by value. Part of tests/support/scenario_testing.hpp, which includes it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "scenarios/registry.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/scenario.hpp"
#include "sim/stream.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
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
  for (std::size_t j = 0; j < S::kParams.size(); ++j)
    fields[j] = static_cast<typename S::ParamType>(S::kParams[j].default_value);
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
    step_once<S>(state_from<S>(&golden.state[row * golden.state_dim]),
                 action_from<S>(&golden.action[row * golden.action_dim]), out);
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
  DeviceBuffer<float> states_in(device, n * spec.state_dim), next(device, n * spec.state_dim),
      obs(device, n * spec.obs_dim), reward(device, n),
      continuous_in(device, static_cast<std::int64_t>(continuous.size()));
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
  CHECK(engine->episode_stats(stream).episodes == 0);  // a pure transition leaves the engine's own state alone
  return out;
}

// Every golden row through `surge step --device <device>`, read back from the CSV it writes.
inline Transitions step_golden_cli(const ScenarioSpec& spec, const GoldenSet& golden,
                                   const std::string& device = "cpu") {
  const std::string input = golden_path(spec.name);
  // A folder of this process's own: ctest runs the same test program at once under several names (the
  // order_* variants), which a shared file name in the working directory let race.
  const ScratchFolder folder("step_" + spec.name + "_" + device);
  const std::string output = folder / "output.csv";
  const Result run = run_surge("step --scenario " + spec.name + " --input '" + input + "' --output '" + output +
                               "' --device " + device);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const cli::CsvTable table = cli::CsvTable::read(output);
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
    return std::find(comparison.angle_states.begin(), comparison.angle_states.end(), k) !=
           comparison.angle_states.end();
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
      for (int k = 0; k < S::kObsDim; ++k)
        comparison.obs_extra[row * S::kObsDim + k] += std::abs(double(obs[k]) - base_obs[k]);
    }
  }
}

// How close one implementation came: the worst |error| / tolerance with the comparison's allowance, and
// against the bare tolerance, with the number of values outside that.
struct GoldenScore {
  double worst = 0, worst_bare = 0;
  int over_bare = 0;
};

// Compares every value with the golden tolerance (plus the comparison's allowance); reports the first
// few mismatches and how close the values came.
inline GoldenScore compare_with_golden(const std::string& what, const ScenarioSpec& spec, const GoldenSet& golden,
                                       const Transitions& ours, const GoldenComparison& options = {}) {
  REQUIRE(static_cast<std::int64_t>(ours.reward.size()) == golden.rows);
  GoldenScore score;
  double& worst = score.worst;
  std::string worst_where;
  int mismatches = 0;
  auto check = [&](double value, double reference, double extra, bool angle, const std::string& field,
                   std::int64_t row) {
    const double error = angle ? std::abs(angle_difference(value, reference)) : std::abs(value - reference);
    const double ratio = error / (golden_tolerance(reference) + extra),
                 bare_ratio = error / golden_tolerance(reference);
    score.worst_bare = std::max(score.worst_bare, bare_ratio);
    score.over_bare += bare_ratio > 1.0;
    if (!(ratio <= worst)) {
      worst = ratio;
      worst_where = field + " in row " + std::to_string(row + 1);
    }
    if (!(ratio <= 1.0) && ++mismatches <= 5)
      FAIL_CHECK(what << ": row " << row + 1 << " " << field << " = " << value << ", Gymnasium " << reference
                      << " (error " << error << ", tolerance " << golden_tolerance(reference) + extra << ")");
  };
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    for (int k = 0; k < spec.state_dim; ++k) {
      const std::size_t at = row * spec.state_dim + k;
      const bool angle =
          std::find(options.angle_states.begin(), options.angle_states.end(), k) != options.angle_states.end();
      check(ours.next_state[at], golden.next_state[at], options.next_extra.empty() ? 0.0 : options.next_extra[at],
            angle, "next_" + spec.state_names[k], row);
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
  std::printf("%s: %lld rows, worst |error| / tolerance = %.3g (%s)", what.c_str(), static_cast<long long>(golden.rows),
              worst, worst_where.c_str());
  if (!options.next_extra.empty() || !options.obs_extra.empty())
    std::printf("; without the allowance %.3g, %d values outside it", score.worst_bare, score.over_bare);
  std::printf("\n");
  CHECK(mismatches == 0);
  return score;
}

// S's golden transitions.
template <class S>
GoldenSet load_golden() {
  return load_golden(scenario_spec(S::kName));
}

// How many golden rows end in a terminal state, to show a test exercises its termination branch.
inline int terminated_rows(const GoldenSet& golden) {
  int rows = 0;
  for (int flag : golden.terminated) rows += flag;
  return rows;
}

// Every golden row through S's SURGE_HD functions, a CPU engine and `surge step`, each compared with
// Gymnasium's; returns the SURGE_HD functions' score.
template <class S>
GoldenScore check_golden(const GoldenSet& golden, const GoldenComparison& comparison = {}) {
  const ScenarioSpec& spec = scenario_spec(S::kName);
  const GoldenScore score =
      compare_with_golden(spec.name + " SURGE_HD step", spec, golden, step_golden_hd<S>(golden), comparison);
  compare_with_golden(spec.name + " CPU engine", spec, golden, step_golden_engine(spec.name, golden), comparison);
  compare_with_golden(spec.name + " surge step", spec, golden, step_golden_cli(spec, golden), comparison);
  return score;
}

}  // namespace surge::testing
