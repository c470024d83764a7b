#pragma once
// Learning, end to end: `surge train` with a scenario's built-in config on the CPU backend must reach
// a mean return over the last 100 finished episodes, say so in its summary, and show it in metrics.csv.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "sim/format.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/io.hpp"

namespace surge::testing {

struct LearningGoal {
  std::string scenario;
  double target_return = 0;     // what return_last100 must reach (the run stops there)
  std::int64_t max_steps = 0;   // within this many environment steps
  std::string extra_arguments;  // e.g. "--seed 3"
};

inline void check_learns(const LearningGoal& goal) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("surge_test_learning_" + std::to_string(::getpid()) + "_" + goal.scenario);
  std::filesystem::remove_all(dir);
  std::ostringstream target;
  target << goal.target_return;
  const Result result = run_surge("train --scenario " + goal.scenario + " --device cpu --target-return " +
                                  target.str() + " " + goal.extra_arguments + " --out '" + dir.string() + "'");
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  // The summary gives the target in four significant digits, as every summary number.
  CHECK(result.out.find("target " + surge::format_significant(goal.target_return) + " reached") != std::string::npos);

  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  const std::vector<std::string> columns = {
      "iteration",      "global_step",          "wall_time_s",    "sps",
      "episodes",       "episodic_return_mean", "return_last100", "episodic_length_mean",
      "policy_loss",    "value_loss",           "entropy",        "approx_kl",
      "clipfrac",       "explained_variance",   "learning_rate",  "eval_return_mean",
      "eval_return_std"};
  CHECK(table.header == columns);
  REQUIRE_FALSE(table.rows.empty());
  const std::size_t last = table.rows.size() - 1;
  CHECK(surge::cli::parse_cell(table, last, table.column("return_last100")) >= goal.target_return);
  CHECK(surge::cli::parse_cell(table, last, table.column("global_step")) <= static_cast<double>(goal.max_steps));
  // It learnt: the first finished episodes were far below the goal.
  const int mean_column = table.column("episodic_return_mean");
  for (std::size_t row = 0; row <= last; ++row) {
    if (table.rows[row][static_cast<std::size_t>(mean_column)].empty()) continue;  // no episode finished yet
    CHECK(surge::cli::parse_cell(table, row, mean_column) < goal.target_return);
    break;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace surge::testing
