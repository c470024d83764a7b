// The precision key through the config and the real program: its values, the old tf32 key as its alias,
// what config.toml keeps, a bf16 run's metrics, and the one-line refusals (exit 2, nothing written).
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "rl/fused_mlp_bf16.hpp"
#include "rl/train_config.hpp"
#include "sim/error.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/io.hpp"

using surge::rl::TrainConfig;
using surge::testing::read_text;
using surge::testing::Result;
using surge::testing::run_surge;

namespace {

std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("surge_test_precision_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// surge train on CartPole on the CPU into `dir`, with the given --set options and flags.
Result train(const std::filesystem::path& dir, const std::string& options) {
  return run_surge("train --scenario cartpole --device cpu " + options + " --out '" + dir.string() + "'");
}

// One line on stderr, starting with the command's name, holding every one of `words`; exit 2.
void check_refusal(const Result& result, const std::vector<std::string>& words) {
  INFO(result.out << result.err);
  CHECK(result.exit_code == 2);
  CHECK(result.err.rfind("surge train: ", 0) == 0);
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  for (const std::string& word : words) CHECK(result.err.find(word) != std::string::npos);
}

}  // namespace

TEST_CASE("precision is fp32 by default, takes its three values and refuses others", "[precision][config]") {
  CHECK(TrainConfig{}.precision == "fp32");
  for (const char* value : {"fp32", "tf32", "bf16"}) {
    TrainConfig config;
    surge::rl::apply_config_setting(config, std::string("precision=") + value);
    CHECK(config.precision == value);
    const TrainConfig back = surge::rl::load_train_config(config.to_toml(), "round trip", false, "");
    CHECK(back.precision == value);
  }
  TrainConfig config;
  CHECK_THROWS_AS(surge::rl::apply_config_setting(config, "precision=fp16"), surge::InputError);
  CHECK_THROWS_AS(surge::rl::apply_config_setting(config, "precision=1"), surge::InputError);
  CHECK_THROWS_AS(surge::rl::load_train_config("precision = \"BF16\"\n", "x.toml", false, ""), surge::InputError);
}

TEST_CASE("the old tf32 key reads as an alias of precision and is no longer written", "[precision][config]") {
  CHECK(surge::rl::load_train_config("tf32 = true\n", "old.toml", false, "").precision == "tf32");
  CHECK(surge::rl::load_train_config("tf32 = false\n", "old.toml", false, "").precision == "fp32");
  // false undoes only tf32: a checkpoint's config holds tf32 = false after whatever came before it.
  CHECK(surge::rl::load_train_config("precision = \"bf16\"\ntf32 = false\n", "x.toml", false, "").precision == "bf16");
  CHECK(surge::rl::load_train_config("precision = \"tf32\"\ntf32 = false\n", "x.toml", false, "").precision == "fp32");
  CHECK_THROWS_AS(surge::rl::load_train_config("tf32 = 1\n", "old.toml", false, ""), surge::InputError);
  TrainConfig config;
  config.precision = "tf32";
  const std::string toml = config.to_toml();
  CHECK(toml.find("precision = \"tf32\"") != std::string::npos);
  CHECK(toml.find("tf32 =") == std::string::npos);
}

TEST_CASE("surge train refuses tf32 on the CPU with one line and writes nothing", "[precision][cli]") {
  const auto dir = scratch_dir("tf32");
  const Result result = train(dir, "--set precision=tf32");
  check_refusal(result, {"precision = \"tf32\"", "--set precision=fp32"});
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("surge train refuses bf16 off the fused MLP path with one line", "[precision][cli]") {
  if (!surge::rl::bf16_native_supported()) return;  // refused sooner, for the CPU (checked below)
  for (const char* setting : {"--set cpu_fused_mlp=false", "--set hidden=512"}) {
    const auto dir = scratch_dir("off_fused");
    const Result result = train(dir, "--set precision=bf16 " + std::string(setting));
    check_refusal(result, {"precision = \"bf16\"", "cpu_fused_mlp", "--set precision=fp32"});
    CHECK_FALSE(std::filesystem::exists(dir));
  }
}

TEST_CASE("surge train in bf16: trains where the CPU has AVX-512 BF16, refuses with one line where not",
          "[precision][cli]") {
  const auto dir = scratch_dir("bf16");
  const Result result = train(dir, "--seed 2 --set precision=bf16 --set total_steps=16384");
  if (!surge::rl::bf16_native_supported()) {
    check_refusal(result, {"precision = \"bf16\"", "AVX-512 BF16", "--set precision=fp32"});
    CHECK_FALSE(std::filesystem::exists(dir));
    return;
  }
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(read_text(dir / "config.toml").find("precision = \"bf16\"") != std::string::npos);
  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  REQUIRE(table.rows.size() == 64);  // 16384 steps of CartPole's 16 envs x 16 steps
  for (const char* column : {"policy_loss", "value_loss", "entropy", "approx_kl"})
    for (std::size_t row = 0; row < table.rows.size(); ++row) {
      INFO(column << " in row " << row);
      CHECK(std::isfinite(surge::cli::parse_cell(table, row, table.column(column))));
    }
  // It learns a little in 16k steps: the mean return of the last 100 episodes grows well past its start.
  const int last100 = table.column("return_last100");
  CHECK(surge::cli::parse_cell(table, table.rows.size() - 1, last100) > 2 * surge::cli::parse_cell(table, 0, last100));
  std::filesystem::remove_all(dir);
}

TEST_CASE("surge doctor lists the precisions this machine runs", "[precision][cli]") {
  const bool bf16 = surge::rl::bf16_native_supported();
  const Result text = run_surge("doctor");
  INFO(text.out << text.err);
  CHECK(text.out.find(bf16 ? "precisions             fp32, bf16 (bf16 on AVX-512 BF16)"
                           : "precisions             fp32 (bf16 needs AVX-512 BF16") != std::string::npos);
  const Result json = run_surge("doctor --json");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j.at("cpu").at("avx512_bf16").get<bool>() == bf16);
  CHECK(j.at("cpu").at("precisions") ==
        (bf16 ? nlohmann::json::array({"fp32", "bf16"}) : nlohmann::json::array({"fp32"})));
  for (const auto& gpu : j.at("gpus")) CHECK(gpu.at("precisions").is_array());
}
