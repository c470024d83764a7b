#pragma once
// Gymnasium's one-step transitions (../shared/golden/gymnasium/<scenario>.csv) as the tests use them,
// and the tolerance they are compared with.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/io.hpp"

namespace surge::testing {

// The golden README's tolerance: float32 arithmetic against Gymnasium's float64.
constexpr double kGoldenAtol = 1e-5;
constexpr double kGoldenRtol = 1e-5;

inline double golden_tolerance(double reference) { return kGoldenAtol + kGoldenRtol * std::abs(reference); }

// |value - ref| <= atol + rtol*|ref|.
inline bool within_golden_tolerance(double value, double ref) { return std::abs(value - ref) <= golden_tolerance(ref); }

// Columns: s_<state>, action, next_<state>, obs_<i>, reward, terminated; one row per transition, as
// doubles, row-major.
struct GoldenSet {
  std::int64_t rows = 0;
  int state_dim = 0, obs_dim = 0, action_dim = 1;  // the files hold one column `action`
  std::vector<double> state;                       // [rows][state_dim] as Gymnasium holds it (float64)
  std::vector<double> action;                      // [rows][action_dim] (discrete: the index)
  std::vector<double> next_state;                  // [rows][state_dim]
  std::vector<double> obs;                         // [rows][obs_dim], float32 values printed exactly
  std::vector<double> reward;                      // [rows]
  std::vector<int> terminated;                     // [rows]

  // The actions of a scenario with discrete ones, as its engine takes them.
  std::vector<std::int32_t> discrete_actions() const { return {action.begin(), action.end()}; }
};

inline std::string golden_path(const std::string& scenario) {
  return std::string(SURGE_GOLDEN_DIR) + "/gymnasium/" + scenario + ".csv";
}

inline GoldenSet load_golden(const std::string& scenario, const std::vector<std::string>& state_names, int obs_dim) {
  const cli::CsvTable table = cli::CsvTable::read(golden_path(scenario));
  auto column = [&](const std::string& name) {
    const int c = table.column(name);
    INFO("golden column " << name << " of " << table.path);
    REQUIRE(c >= 0);
    return c;
  };
  GoldenSet golden;
  golden.rows = static_cast<std::int64_t>(table.rows.size());
  golden.state_dim = static_cast<int>(state_names.size());
  golden.obs_dim = obs_dim;
  std::vector<int> state_columns, next_columns, obs_columns;
  for (const std::string& name : state_names) {
    state_columns.push_back(column("s_" + name));
    next_columns.push_back(column("next_" + name));
  }
  for (int k = 0; k < obs_dim; ++k) obs_columns.push_back(column("obs_" + std::to_string(k)));
  const int action_column = column("action"), reward_column = column("reward"),
            terminated_column = column("terminated");
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    for (int c : state_columns) golden.state.push_back(cli::parse_cell(table, row, c));
    for (int c : next_columns) golden.next_state.push_back(cli::parse_cell(table, row, c));
    for (int c : obs_columns) golden.obs.push_back(cli::parse_cell(table, row, c));
    golden.action.push_back(cli::parse_cell(table, row, action_column));
    golden.reward.push_back(cli::parse_cell(table, row, reward_column));
    golden.terminated.push_back(static_cast<int>(cli::parse_cell(table, row, terminated_column)));
  }
  return golden;
}

}  // namespace surge::testing
