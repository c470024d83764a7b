// `surge train` as a user meets it: the files it writes, its summary, and one line with exit code 2 for
// every kind of bad input.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/io.hpp"

namespace {

using surge::testing::line_count;
using surge::testing::read_text;
using surge::testing::Result;
using surge::testing::run_surge;

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("surge_test_train_cli_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("surge train writes metrics.csv, config.toml and a summary", "[train][cli]") {
  const auto dir = fresh_dir("run");
  const Result r = run_surge(
      "train --scenario cartpole --device cpu --total-steps 768 --seed 2 --set hidden=[16,16] --out " + dir.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output().find("surge train: cartpole on cpu: 768 steps in") != std::string::npos);
  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  CHECK(table.header.size() == 17);
  REQUIRE(table.rows.size() == 3);  // 768 steps of 16 x 16
  for (std::size_t row = 0; row < 3; ++row) {
    CHECK(surge::cli::parse_cell(table, row, table.column("iteration")) == row + 1);
    CHECK(surge::cli::parse_cell(table, row, table.column("global_step")) == 256.0 * (row + 1));
    CHECK(surge::cli::parse_cell(table, row, table.column("sps")) > 0.0);
  }
  // config.toml is the config that ran, and reads back.
  const surge::rl::TrainConfig config =
      surge::rl::load_train_config(read_text(dir / "config.toml"), "config.toml", false, "");
  CHECK(config.total_steps == 768);
  CHECK(config.seed == 2);
  CHECK(config.hidden == std::vector<int>{16, 16});
  std::filesystem::remove_all(dir);
}

TEST_CASE("surge train, eval and bench train run a Gaussian policy on pendulum", "[train][cli][gaussian]") {
  const auto dir = fresh_dir("pendulum");
  const Result r = run_surge(
      "train --scenario pendulum --device cpu --num-envs 8 --num-steps 64 --total-steps 2048 "
      "--seed 3 --set hidden=[16,16] --out " +
      dir.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output().find("surge train: pendulum on cpu: 2,048 steps in") != std::string::npos);
  const auto table = surge::cli::CsvTable::read((dir / "metrics.csv").string());
  REQUIRE(table.rows.size() == 4);
  // 8 envs x 256 steps finish 8 episodes of 200 steps; Pendulum's returns are negative.
  const double last100 = surge::cli::parse_cell(table, 3, table.column("return_last100"));
  CHECK(last100 < 0.0);
  CHECK(last100 > -200.0 * 16.3);

  // eval and --resume read the checkpoint, in builds with HDF5, which writes it; without, they say so.
  const std::string checkpoint = (dir / "checkpoint.h5").string();
  if (std::filesystem::exists(checkpoint)) {
    for (const char* mode : {"greedy", "sampled"}) {
      const Result e = run_surge("eval --checkpoint " + checkpoint + " --episodes 12 --device cpu" +
                                 (std::string(mode) == "sampled" ? " --sample" : ""));
      INFO(e.output());
      REQUIRE(e.exit_code == 0);
      CHECK(e.output().find(std::string("pendulum, 12 episodes (") + mode +
                            ") on cpu after 2048 training steps: return -") != std::string::npos);
    }
    const Result resumed = run_surge("train --resume " + checkpoint + " --device cpu --stop-after 1");
    INFO(resumed.output());
    CHECK(resumed.exit_code == 0);
    // The run's folder stands for its checkpoint, as a run of several agents' folder does.
    const Result by_folder = run_surge("train --resume " + dir.string() + " --device cpu --stop-after 1");
    INFO(by_folder.output());
    CHECK(by_folder.exit_code == 0);
    CHECK(by_folder.output().find(", resumed after iteration 4") != std::string::npos);
    const std::filesystem::path empty = dir / "empty";
    std::filesystem::create_directories(empty);
    const Result none = run_surge("train --resume " + empty.string() + " --device cpu");
    CHECK(none.exit_code == 2);
    CHECK(line_count(none.output()) == 1);
    CHECK(none.output().find("is a folder without checkpoint.h5") != std::string::npos);
  } else {
    const Result e = run_surge("eval --checkpoint " + checkpoint + " --device cpu");
    CHECK(e.exit_code == 2);
    CHECK(e.output().find("this build has no HDF5: install libhdf5-dev and rebuild") != std::string::npos);
    CHECK(line_count(e.output()) == 1);
  }

  const Result bench = run_surge(
      "bench train --scenario mountain_car_continuous --device cpu --num-envs 16 --num-steps 8 "
      "--repeats 1 --iterations 2");
  INFO(bench.output());
  CHECK(bench.exit_code == 0);
  CHECK(bench.output().find("env-steps/s, cpu") != std::string::npos);
  const Result sweep = run_surge(
      "bench sweep --what train --scenario pendulum --device cpu --from 64 --to 64 --repeats 1 "
      "--min-env-steps 2048");
  INFO(sweep.output());
  CHECK(sweep.exit_code == 0);
  CHECK(sweep.output().find("recommended: --num-envs 64") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("surge train --preset cleanrl takes CleanRL's defaults", "[train][cli]") {
  const auto dir = fresh_dir("cleanrl");
  const Result r = run_surge("train --device cpu --preset cleanrl --total-steps 512 --out " + dir.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  const std::string config = read_text(dir / "config.toml");
  CHECK(config.find("num_envs = 4\n") != std::string::npos);
  CHECK(config.find("num_steps = 128\n") != std::string::npos);
  CHECK(config.find("learning_rate = 0.00025\n") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad input to surge train is one line and exit code 2", "[train][cli]") {
  const auto dir = fresh_dir("bad");
  const std::string out = " --out " + dir.string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --device cpu --set nope=1" + out, "unknown config key 'nope'"},
      {"train --device cpu --set learning_rate=fast" + out, "learning_rate"},
      {"train --device cpu --num-envs 0" + out, "--num-envs"},
      {"train --device cpu --preset nope" + out, "unknown preset 'nope'"},
      {"train --device cpu --config /nonexistent/x.toml" + out, "/nonexistent/x.toml"},
      {"train --device cpu --set num_minibatches=3" + out, "num_minibatches = 3"},
      {"train --device cpu --scenario nosuch" + out, "unknown scenario 'nosuch'"},
      {"train --device cpu --bogus" + out, "--bogus"},
      {"train --device cpu --target-return high" + out, "--target-return"},
      {"train --device cpu --out /proc/no/such/dir", "--out"},
  };
  for (const auto& [arguments, expected] : cases) {
    const Result r = run_surge(arguments);
    INFO(arguments << "\n" << r.output());
    CHECK(r.exit_code == 2);
    CHECK(r.output().find(expected) != std::string::npos);
    CHECK(line_count(r.output()) == 1);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("surge bench train reports end-to-end env-steps per second", "[train][cli][bench]") {
  const auto dir = fresh_dir("bench");
  std::filesystem::create_directories(dir);
  const auto json = dir / "bench.json";
  const Result r = run_surge("bench train --device cpu --num-envs 32 --num-steps 8 --repeats 2 --iterations 2 --json " +
                             json.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output().find("env-steps/s, cpu") != std::string::npos);
  const std::string text = read_text(json);
  CHECK(text.find("\"benchmark\": \"train\"") != std::string::npos);
  CHECK(text.find("\"num_envs\": 32") != std::string::npos);
  CHECK(text.find("\"env_steps_per_s\": ") != std::string::npos);
  CHECK(run_surge("bench train --device cpu --num-envs 30 --num-steps 1 --set num_minibatches=7").exit_code == 2);
  // Physics, as surge train takes it, is named on the start line and in the JSON.
  const Result randomised = run_surge(
      "bench train --device cpu --num-envs 32 --num-steps 8 --repeats 1 --iterations 1 "
      "--physics masspole=0.05:0.2 --set physics.length=0.6 --json " +
      json.string());
  INFO(randomised.output());
  REQUIRE(randomised.exit_code == 0);
  CHECK(randomised.output().find("physics: masspole ~ U(0.05, 0.2), length = 0.6") != std::string::npos);
  const std::string physics_json = read_text(json);
  CHECK(physics_json.find("\"masspole\": [0.05") != std::string::npos);
  CHECK(physics_json.find("\"length\": 0.6") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("surge train --dry-run prints the memory plan and writes nothing", "[train][cli]") {
  const auto dir = fresh_dir("dry");
  const Result r = run_surge("train --device cpu --num-envs 64 --num-steps 8 --dry-run --out " + dir.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output().find("rollout.obs") != std::string::npos);
  CHECK(r.output().find("learner.adam_v") != std::string::npos);
  CHECK(r.output().find("workspace.actor_activations") != std::string::npos);
  CHECK(r.output().find("rollout_log.obs_raw") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir));

  // A rollout log of normalised observations keeps the raw ones: (8 + 1) steps x 5 envs x 4 floats.
  const Result logged = run_surge(
      "train --device cpu --num-envs 64 --num-steps 8 --set normalize_obs=true --dry-run "
      "--log-envs 5 --log-rollouts " +
      (dir / "log.h5").string() + " --out " + dir.string());
  INFO(logged.output());
  REQUIRE(logged.exit_code == 0);
  CHECK(logged.output().find("rollout_log.obs_raw           [T+1][M][obs_dim]                 180") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("surge train with domain randomisation: reported, kept in config.toml and the checkpoint, used by eval",
          "[train][cli][physics]") {
  const auto dir = fresh_dir("physics");
  const Result r = run_surge(
      "train --scenario cartpole --device cpu --total-steps 512 --set hidden=[8] "
      "--physics masspole=0.05:0.2 --set physics.length=0.6 --out " +
      dir.string());
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output().find("physics: masspole ~ U(0.05, 0.2), length = 0.6") != std::string::npos);
  const std::string written = read_text(dir / "config.toml");
  CHECK(written.find("\n[physics]\nmasspole = [0.05, 0.2]\nlength = 0.6\n") != std::string::npos);
  const surge::rl::TrainConfig config = surge::rl::load_train_config(written, "config.toml", false, "");
  REQUIRE(config.physics.size() == 2);
  CHECK(config.physics[0].is_range);
  CHECK(config.physics[0].low == 0.05);
  CHECK(config.physics[0].high == 0.2);
  CHECK(config.physics[1].low == 0.6);
  // config.toml runs again as a config file, and gives the same physics.
  const auto again = fresh_dir("physics_again");
  const Result rerun =
      run_surge("train --device cpu --config " + (dir / "config.toml").string() + " --out " + again.string());
  INFO(rerun.output());
  CHECK(rerun.exit_code == 0);
  CHECK(read_text(again / "config.toml").find("\n[physics]\nmasspole = [0.05, 0.2]\nlength = 0.6\n") !=
        std::string::npos);
  std::filesystem::remove_all(again);
  // eval runs under the physics the policy was trained with, and --physics changes it by name (in
  // builds with HDF5, which writes checkpoints).
  const std::string checkpoint = (dir / "checkpoint.h5").string();
  if (std::filesystem::exists(checkpoint)) {
    const Result trained = run_surge("eval --checkpoint " + checkpoint + " --episodes 8 --device cpu");
    INFO(trained.output());
    CHECK(trained.exit_code == 0);
    CHECK(trained.output().find("physics: masspole ~ U(0.05, 0.2), length = 0.6\n") != std::string::npos);
    const Result heavier =
        run_surge("eval --checkpoint " + checkpoint + " --episodes 8 --device cpu --physics masspole=0.5");
    INFO(heavier.output());
    CHECK(heavier.exit_code == 0);
    CHECK(heavier.output().find("physics: masspole = 0.5, length = 0.6\n") != std::string::npos);
    const Result bad =
        run_surge("eval --checkpoint " + checkpoint + " --episodes 8 --device cpu --physics masspole=-1");
    CHECK(bad.exit_code == 2);
    CHECK(bad.output().find("masspole") != std::string::npos);
    CHECK(line_count(bad.output()) == 1);
    // A resumed run keeps the physics it was started with; --physics cannot change it.
    const Result resume = run_surge("train --resume " + checkpoint + " --physics masspole=0.1");
    CHECK(resume.exit_code == 2);
    CHECK(resume.output().find("--physics") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}
