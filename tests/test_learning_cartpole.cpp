// Learning, end to end: `surge train` on the CPU backend with the built-in CartPole config must reach a
// mean return of 475 over the last 100 finished episodes, and say so in metrics.csv and its summary.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tools/cli/io.hpp"

namespace {

std::string run(const std::string& command, int& status) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  status = ::pclose(pipe);
  return output;
}

}  // namespace

TEST_CASE("PPO on the CPU solves CartPole (return_last100 >= 475)", "[learning]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "surge_test_learning_cartpole";
  std::filesystem::remove_all(dir);
  int status = 0;
  const std::string output =
      run(std::string(SURGE_BINARY) + " train --scenario cartpole --device cpu --seed 3 --target-return 475 --out " + dir.string(),
          status);
  INFO(output);
  REQUIRE(status == 0);
  CHECK(output.find("target 475 reached") != std::string::npos);

  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  const std::vector<std::string> columns = {
      "iteration", "global_step", "wall_time_s", "sps", "episodes", "episodic_return_mean", "return_last100",
      "episodic_length_mean", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
      "learning_rate"};
  CHECK(table.header == columns);
  REQUIRE_FALSE(table.rows.empty());
  const int last100 = table.column("return_last100");
  const int step = table.column("global_step");
  const double final_return = surge::cli::parse_cell(table, table.rows.size() - 1, last100);
  CHECK(final_return >= 475.0);
  CHECK(surge::cli::parse_cell(table, table.rows.size() - 1, step) <= 500000);
  // It learnt: the first iterations were far from it.
  CHECK(surge::cli::parse_cell(table, 0, table.column("episodic_return_mean")) < 100.0);
  std::filesystem::remove_all(dir);
}
