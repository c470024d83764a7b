// Learning with a Gaussian policy, end to end: `surge train` on the CPU backend with the built-in
// Pendulum config must reach a mean return of -250 over the last 100 finished episodes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/run_surge.hpp"
#include "tools/cli/io.hpp"

TEST_CASE("PPO on the CPU swings Pendulum up (return_last100 >= -250)", "[learning][gaussian]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "surge_test_learning_pendulum";
  std::filesystem::remove_all(dir);
  const auto result = surge::testing::run_surge("train --scenario pendulum --device cpu --seed 2 --target-return -250 --out " + dir.string());
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK((result.out + result.err).find("target -250 reached") != std::string::npos);

  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  REQUIRE_FALSE(table.rows.empty());
  const double final_return = surge::cli::parse_cell(table, table.rows.size() - 1, table.column("return_last100"));
  CHECK(final_return >= -250.0);
  // It learnt: a policy that does not swing up loses about 1200 per episode.
  CHECK(surge::cli::parse_cell(table, 0, table.column("episodic_return_mean")) < -900.0);
  std::filesystem::remove_all(dir);
}
