// What `surge train` leaves for analysis and for picking a run up again: TensorBoard scalars that
// decode to metrics.csv, a rollout log whose rebuilt episodes agree with the returns the trainer
// reported, a clean stop on SIGINT, and a resume that is bit-exact: N iterations, stop, resume, N more
// equal 2N in one go (metrics.csv less its clock columns, the final parameters and optimizer state,
// the environments' state, and the rollout log).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/io/rollout_file.hpp"
#include "rl/io/tensorboard.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/cli/io.hpp"

namespace fs = std::filesystem;
using namespace surge;
using surge::testing::read_text;
using surge::testing::Result;
using surge::testing::run_surge;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("surge_test_train_logs_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A small, quick CartPole run on the CPU: 16 envs x 16 steps per iteration.
const std::string kSmallRun = "train --scenario cartpole --device cpu --set hidden=[16,16] ";
constexpr std::int64_t kBatch = 16 * 16;

// metrics.csv as rows of text cells, without the columns that measure the clock.
std::vector<std::vector<std::string>> deterministic_metrics(const fs::path& dir) {
  const cli::CsvTable table = cli::CsvTable::read((dir / "metrics.csv").string());
  const int wall = table.column("wall_time_s"), sps = table.column("sps");
  REQUIRE(wall >= 0);
  REQUIRE(sps >= 0);
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : table.rows) {
    std::vector<std::string> kept;
    for (std::size_t c = 0; c < row.size(); ++c)
      if (static_cast<int>(c) != wall && static_cast<int>(c) != sps) kept.push_back(row[c]);
    rows.push_back(kept);
  }
  return rows;
}

}  // namespace

TEST_CASE("Every metrics.csv value also goes to TensorBoard, grouped as CleanRL names them", "[train][logs]") {
  const fs::path dir = fresh_dir("tb");
  const Result r = run_surge(kSmallRun + "--total-steps " + std::to_string(6 * kBatch) + " --set eval_every=3 --out '" +
                             dir.string() + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir / "tb")) files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  const std::vector<rl::TensorBoardEvent> events = rl::read_tensorboard_events(files[0]);
  const cli::CsvTable metrics = cli::CsvTable::read((dir / "metrics.csv").string());
  // The header, the config as text and as hparams (no scalars), then one event per row, and one more
  // for each evaluation (rows 3 and 6).
  REQUIRE(events.size() == 3 + metrics.rows.size() + 2);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[1].scalars.empty());
  CHECK(events[2].scalars.empty());
  const std::map<std::string, std::string> tags = {{"sps", "charts/SPS"},
                                                   {"episodes", "charts/episodes"},
                                                   {"episodic_return_mean", "charts/episodic_return"},
                                                   {"return_last100", "charts/return_last100"},
                                                   {"episodic_length_mean", "charts/episodic_length"},
                                                   {"policy_loss", "losses/policy_loss"},
                                                   {"value_loss", "losses/value_loss"},
                                                   {"entropy", "losses/entropy"},
                                                   {"approx_kl", "losses/approx_kl"},
                                                   {"clipfrac", "losses/clipfrac"},
                                                   {"explained_variance", "losses/explained_variance"},
                                                   {"learning_rate", "charts/learning_rate"},
                                                   {"eval_return_mean", "eval/return_mean"},
                                                   {"eval_return_std", "eval/return_std"}};
  // Every (step, tag) -> value that TensorBoard holds.
  std::map<std::pair<std::int64_t, std::string>, float> held;
  for (std::size_t e = 3; e < events.size(); ++e)
    for (const auto& [tag, value] : events[e].scalars) held[{events[e].step, tag}] = value;
  std::size_t expected = 0;
  for (std::size_t row = 0; row < metrics.rows.size(); ++row) {
    const std::int64_t step = (static_cast<std::int64_t>(row) + 1) * kBatch;
    CHECK(metrics.rows[row][1] == std::to_string(step));
    for (std::size_t c = 0; c < metrics.header.size(); ++c) {
      const auto tag = tags.find(metrics.header[c]);
      if (tag == tags.end()) continue;  // iteration, global_step (the step), wall_time_s
      const std::string& cell = metrics.rows[row][c];
      INFO("row " << row + 1 << " column " << metrics.header[c]);
      const auto it = held.find({step, tag->second});
      if (cell.empty()) {  // no episode ended, no evaluation: no point either
        CHECK(it == held.end());
        continue;
      }
      CHECK(cell != "nan");
      REQUIRE(it != held.end());
      ++expected;
      const double csv = std::stod(cell);  // 9 significant digits of the same double
      CHECK(std::abs(it->second - csv) <= 1e-6 * std::abs(csv) + 1e-30);
    }
  }
  CHECK(held.size() == expected);
  CHECK(!metrics.rows[2][metrics.column("eval_return_mean")].empty());
  CHECK(metrics.rows[1][metrics.column("eval_return_mean")].empty());
  CHECK(fs::exists(dir / "best.h5"));
}

TEST_CASE("Episodes rebuilt from the rollout log agree with the returns the trainer reported", "[train][logs]") {
  const fs::path dir = fresh_dir("episodes");
  const std::string log = (dir / "rollouts.h5").string();
  const Result r = run_surge(kSmallRun + "--total-steps " + std::to_string(12 * kBatch) + " --out '" + dir.string() +
                             "' --log-rollouts '" + log + "' --log-every 1 --log-envs 16 --log-queue 64");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("logged 12 iterations to " + log) != std::string::npos);
  const rl::RolloutFile file(log);
  CHECK(file.iterations() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(file.global_steps().back() == 12 * kBatch);
  CHECK(file.attribute("scenario") == std::optional<std::string>("cartpole"));
  CHECK(file.attribute("first_iteration") == std::optional<std::string>("1"));

  const Result episodes = run_surge("h5 episodes '" + log + "' --out '" + (dir / "episodes.csv").string() + "'");
  REQUIRE(episodes.exit_code == 0);
  const cli::CsvTable rebuilt = cli::CsvTable::read((dir / "episodes.csv").string());
  std::map<long, std::pair<double, double>> per_iteration;  // iteration -> (episodes, return sum)
  for (std::size_t row = 0; row < rebuilt.rows.size(); ++row) {
    auto& [count, sum] =
        per_iteration[std::stol(rebuilt.rows[row][static_cast<std::size_t>(rebuilt.column("end_iteration"))])];
    count += 1;
    sum += std::stod(rebuilt.rows[row][static_cast<std::size_t>(rebuilt.column("return"))]);
  }
  const cli::CsvTable metrics = cli::CsvTable::read((dir / "metrics.csv").string());
  REQUIRE(metrics.rows.size() == 12);
  int compared = 0;
  for (std::size_t row = 0; row < metrics.rows.size(); ++row) {
    const long iteration = std::stol(metrics.rows[row][static_cast<std::size_t>(metrics.column("iteration"))]);
    const double reported_count = std::stod(metrics.rows[row][static_cast<std::size_t>(metrics.column("episodes"))]);
    const auto found = per_iteration.find(iteration);
    const double count = found == per_iteration.end() ? 0.0 : found->second.first;
    INFO("iteration " << iteration);
    CHECK(count == reported_count);
    if (count == 0) continue;
    const double reported =
        std::stod(metrics.rows[row][static_cast<std::size_t>(metrics.column("episodic_return_mean"))]);
    const double mean = found->second.second / count;
    CHECK(std::abs(mean - reported) <= 1e-6 * std::abs(reported));
    ++compared;
  }
  CHECK(compared >= 5);
}

TEST_CASE("A resumed run is bit-identical to one run straight through", "[train][logs]") {
  // Also with observation normalisation and reward scaling, whose statistics and accumulators resume
  // too, with a Gaussian policy (pendulum), whose log-std and action draws resume too, and on Acrobot
  // with randomised physics, whose per-env parameters are float64 in the engine and the checkpoint.
  const int variant = GENERATE(0, 1, 2, 3);
  const bool normalized = variant == 1 || variant == 2, gaussian = variant == 2, acrobot = variant == 3;
  const int obs_dim = gaussian ? 3 : acrobot ? 6 : 4;
  const fs::path dir = fresh_dir(acrobot      ? "resume_acrobot"
                                 : gaussian   ? "resume_gaussian"
                                 : normalized ? "resume_normalized"
                                              : "resume");
  const std::string run_start =
      gaussian  ? "train --scenario pendulum --device cpu --set hidden=[16,16] --num-envs 16 --num-steps 16 "
      : acrobot ? "train --scenario acrobot --device cpu --set hidden=[16,16] --num-envs 16 --num-steps 16 "
                  "--physics gravity=9:10.5,dt=0.15:0.25 "
                : kSmallRun;
  const std::string total = " --total-steps " + std::to_string(8 * kBatch) +
                            (normalized ? " --set normalize_obs=true --set normalize_reward=true" : "");
  const std::string first = (dir / "first").string(), straight = (dir / "straight").string();
  // N = 4 iterations, stop; resume for the other 4; against 8 in one go. Both log every iteration.
  Result r = run_surge(run_start + total + " --seed 3 --stop-after 4 --out '" + first + "' --log-rollouts '" + first +
                       "/rollouts.h5' --log-every 1 --log-envs 8 --log-queue 64");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("stopped as asked (--stop-after) after iteration 4 of 8") != std::string::npos);
  r = run_surge("train --device cpu --resume '" + first + "/checkpoint.h5' --log-rollouts '" + first +
                "/rollouts.h5' --log-every 1 --log-envs 8 --log-queue 64");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("resumed after iteration 4") != std::string::npos);
  r = run_surge(run_start + total + " --seed 3 --out '" + straight + "' --log-rollouts '" + straight +
                "/rollouts.h5' --log-every 1 --log-envs 8 --log-queue 64");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  const auto resumed_metrics = deterministic_metrics(first), straight_metrics = deterministic_metrics(straight);
  REQUIRE(straight_metrics.size() == 8);
  CHECK(resumed_metrics == straight_metrics);

  const rl::Checkpoint a = rl::read_checkpoint(first + "/checkpoint.h5"),
                       b = rl::read_checkpoint(straight + "/checkpoint.h5");
  CHECK(a.iteration == 8);
  CHECK(a.params == b.params);
  CHECK(a.adam_m == b.adam_m);
  CHECK(a.adam_v == b.adam_v);
  CHECK(a.adam_step == b.adam_step);
  const rl::ResumeState sa = rl::read_resume_state(first + "/checkpoint.h5"),
                        sb = rl::read_resume_state(straight + "/checkpoint.h5");
  // Every saved engine entry (state, parameters, step counters, episode returns, RNG offsets), byte for
  // byte; the parameters in the scenario's own type.
  REQUIRE(sa.engine.size() == 5);
  REQUIRE(sb.engine.size() == sa.engine.size());
  for (std::size_t k = 0; k < sa.engine.size(); ++k) {
    INFO(sa.engine[k].name);
    CHECK(sa.engine[k].name == sb.engine[k].name);
    CHECK(sa.engine[k].bytes == sb.engine[k].bytes);
    if (sa.engine[k].name == "params") CHECK(sa.engine[k].dtype == (acrobot ? DType::Float64 : DType::Float32));
  }
  // Every saved trainer entry (train state, optimiser scalars, the ring of recent returns, running
  // returns, reward accumulators), byte for byte.
  REQUIRE(sa.trainer.size() == sb.trainer.size());
  bool has_accumulator = false;
  for (std::size_t k = 0; k < sa.trainer.size(); ++k) {
    INFO(sa.trainer[k].name);
    CHECK(sa.trainer[k].name == sb.trainer[k].name);
    CHECK(sa.trainer[k].bytes == sb.trainer[k].bytes);
    if (sa.trainer[k].name == "reward_accumulator") {
      has_accumulator = true;
      CHECK(sa.trainer[k].bytes.size() == 16u * sizeof(float));
    }
  }
  CHECK(has_accumulator == normalized);
  CHECK(a.obs_moments == b.obs_moments);
  CHECK(a.reward_moments == b.reward_moments);
  CHECK(a.obs_moments.size() == (normalized ? 2u * obs_dim + 1u : 0u));

  const rl::RolloutFile log_a(first + "/rollouts.h5"), log_b(straight + "/rollouts.h5");
  CHECK(log_a.iterations() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(log_a.attribute("obs_normalized") == std::optional<std::string>(normalized ? "1" : "0"));
  for (const std::string& name : log_b.dataset_names()) {
    INFO(name);
    CHECK(log_a.read(name).values == log_b.read(name).values);
  }
}

TEST_CASE("SIGINT stops training at an iteration boundary with everything written", "[train][logs]") {
  const fs::path dir = fresh_dir("sigint");
  const std::string out = (dir / "run").string(), log = (dir / "rollouts.h5").string();
  const std::string command = std::string(SURGE_BINARY) + " " + kSmallRun + "--total-steps 100000000 --out '" + out +
                              "' --log-rollouts '" + log + "' --log-every 1 --log-envs 4 --checkpoint-every 50";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string redirected =
        "exec " + command + " >'" + (dir / "stdout.txt").string() + "' 2>'" + (dir / "stderr.txt").string() + "'";
    ::execl("/bin/sh", "sh", "-c", redirected.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Let it train a while (its first periodic checkpoint shows it is well under way), then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out + "/checkpoint.h5") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(out + "/checkpoint.h5"));
  REQUIRE(::kill(child, SIGINT) == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const std::string err = read_text(dir / "stderr.txt");
  INFO(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGINT);
  const auto at = err.find("stopped by SIGINT after iteration ");
  REQUIRE(at != std::string::npos);
  const long stopped_at = std::stol(err.substr(at + std::string("stopped by SIGINT after iteration ").size()));
  CHECK(stopped_at >= 50);
  CHECK(err.find("continue with: surge train --resume " + out + "/checkpoint.h5") != std::string::npos);

  // Every iteration up to the stop is in metrics.csv, the rollout log and the checkpoint.
  CHECK(cli::CsvTable::read(out + "/metrics.csv").rows.size() == static_cast<std::size_t>(stopped_at));
  const rl::RolloutFile file(log);
  REQUIRE(file.iterations().size() +
              static_cast<std::size_t>(std::stol(file.attribute("dropped_iterations").value())) ==
          static_cast<std::size_t>(stopped_at));
  CHECK(file.iterations().back() <= stopped_at);
  CHECK(file.read("obs").shape[0] == static_cast<std::int64_t>(file.iterations().size()));
  CHECK(rl::read_checkpoint(out + "/checkpoint.h5").iteration == stopped_at);
  CHECK(rl::read_resume_state(out + "/checkpoint.h5").metrics_rows.size() == static_cast<std::size_t>(stopped_at));

  // And the run goes on from there.
  const Result r = run_surge("train --device cpu --resume '" + out + "/checkpoint.h5' --stop-after 2");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("resumed after iteration " + std::to_string(stopped_at)) != std::string::npos);
  CHECK(cli::CsvTable::read(out + "/metrics.csv").rows.size() == static_cast<std::size_t>(stopped_at + 2));
}

TEST_CASE("Resume refuses flags that would change the run, and checkpoints without resume state", "[train][logs]") {
  const fs::path dir = fresh_dir("refuse");
  Result r = run_surge(kSmallRun + "--total-steps " + std::to_string(2 * kBatch) + " --out '" + dir.string() + "/run'");
  REQUIRE(r.exit_code == 0);
  r = run_surge("train --resume '" + dir.string() + "/run/checkpoint.h5' --num-envs 32");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--num-envs cannot be given with it") != std::string::npos);
  r = run_surge("train --resume '" + dir.string() + "/missing.h5'");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("does not exist") != std::string::npos);
}
