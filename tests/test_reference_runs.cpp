// No behaviour change from the code's own reshaping: `surge train --scenario S --seed 1` on the CPU gives
// the metrics.csv that the release before it wrote (tests/data/reference_runs, every column but
// wall_time_s and sps), and checkpoints written by that release resume to the same rows as it did.
// tests/data/README.md says how the files were made. The fresh runs take the CPU's BLAS MLP path, as that
// release did (the fused path, the default since, rounds differently); its checkpoints resume on it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tools/cli/io.hpp"

namespace {

using surge::cli::CsvTable;
using surge::testing::Result;
using surge::testing::run_surge;
using surge::testing::ScratchFolder;

const std::filesystem::path kData = std::filesystem::path(SURGE_SOURCE_DIR) / "tests" / "data";
// "" for a build whose CPU hot loops use AVX-512, "_avx2" for one that has AVX2 only: the same code rounds
// differently in the two (tests/data/README.md), so each has its files.
const std::string kIsa = SURGE_REFERENCE_ISA;

// Every row of `run` equals `reference` cell for cell (as text), leaving out the columns that time the run
// and the evaluation columns (added later, empty without eval_every). The reference release wrote `nan`
// where today's leaves the cell empty (no episode had ended).
void check_same_metrics(const std::filesystem::path& run, const std::filesystem::path& reference) {
  const CsvTable got = CsvTable::read(run.string());
  const CsvTable want = CsvTable::read(reference.string());
  std::vector<int> kept;
  for (std::size_t c = 0; c < got.header.size(); ++c)
    if (got.header[c] != "wall_time_s" && got.header[c] != "sps" && got.header[c].rfind("eval_", 0) != 0)
      kept.push_back(static_cast<int>(c));
  std::vector<std::string> header;
  for (int c : kept) header.push_back(got.header[static_cast<std::size_t>(c)]);
  REQUIRE(header == want.header);
  REQUIRE(got.rows.size() == want.rows.size());
  for (std::size_t r = 0; r < got.rows.size(); ++r) {
    for (std::size_t k = 0; k < kept.size(); ++k) {
      INFO(reference.filename().string() << " row " << r + 1 << " column " << want.header[k]);
      const std::string& cell = got.rows[r][static_cast<std::size_t>(kept[k])];
      REQUIRE((cell.empty() ? "nan" : cell) == want.rows[r][k]);
    }
  }
}

}  // namespace

TEST_CASE("surge train --seed 1 gives the reference metrics for every scenario", "[reference]") {
  const std::string scenario =
      GENERATE(as<std::string>{}, "cartpole", "acrobot", "mountain_car", "pendulum", "mountain_car_continuous");
  ScratchFolder out("reference_" + scenario);
  const Result result =
      run_surge("train --scenario " + scenario + " --seed 1 --device cpu --set cpu_fused_mlp=false --out '" +
                out.path().string() + "'");
  INFO(result.output());
  REQUIRE(result.exit_code == 0);
  check_same_metrics(out.path() / "metrics.csv", kData / ("reference_runs" + kIsa) / (scenario + ".csv"));
}

TEST_CASE("checkpoints written by the previous release resume exactly as it resumed them", "[reference]") {
  const std::string name = GENERATE(as<std::string>{}, "mountain_car", "mountain_car_continuous");
  ScratchFolder out("reference_resume_" + name);
  const std::filesystem::path checkpoint = out.path() / "checkpoint.h5";
  const std::string original =
      name == "mountain_car" ? "mountain_car_iteration10.h5" : "mountain_car_continuous_iteration5.h5";
  std::filesystem::copy_file(kData / "checkpoints" / original, checkpoint);
  const Result result = run_surge("train --resume '" + checkpoint.string() + "' --device cpu");
  INFO(result.output());
  REQUIRE(result.exit_code == 0);
  check_same_metrics(out.path() / "metrics.csv", kData / "checkpoints" / (name + "_resumed" + kIsa + ".csv"));
}
