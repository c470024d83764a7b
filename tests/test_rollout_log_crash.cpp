// The rollout log against other processes and sudden death: a second log on the same file is refused
// before it touches it, and a log whose writer was killed (SIGKILL, at the moments a test can pick)
// reads back whole and resumes. tests/support/check_rollout_log.py --train kills `surge train` at
// random moments and reads the logs with h5py.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_log.hpp"
#include "sim/error.hpp"
#include "sim/stream.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tests/support/synthetic_rollout.hpp"

namespace fs = std::filesystem;
using namespace surge;
using namespace surge::rl;
using surge::testing::ScratchFolder;
using surge::testing::SyntheticRollout;

namespace {

RolloutLogOptions roomy_options(const SyntheticRollout& rollout, const std::string& path) {
  RolloutLogOptions options = rollout.options(path, 1);
  options.queue_depth = 16;  // every iteration kept: these tests count them
  return options;
}

// Waits until the log's writer has written `count` iterations.
void wait_written(const RolloutLog& log, std::int64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (log.stats().written < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(log.stats().written == count);
}

}  // namespace

TEST_CASE("A second log on a file that a log is writing is refused before it touches the file", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_lock");
  const std::string path = scratch / "log.h5";
  Stream stream(Device::cpu());
  RolloutLog first(roomy_options(rollout, path), rollout.fields());
  for (std::int64_t i = 0; i < 3; ++i) rollout.run_iteration(first, i, stream);
  wait_written(first, 3);
  CHECK(fs::exists(path + ".lock"));

  // flock locks belong to open files, so another log in this very process is refused too.
  CHECK_THROWS_AS(RolloutLog(roomy_options(rollout, path), rollout.fields()), InputError);
  CHECK_THROWS_WITH(RolloutLog(roomy_options(rollout, path), rollout.fields()),
                    Catch::Contains("the rollout log '" + path + "' is being written by another run (pid " +
                                    std::to_string(::getpid()) + ", which holds '" + path + ".lock')"));
  RolloutLogOptions resuming = roomy_options(rollout, path);
  resuming.resume_iteration = 1;
  CHECK_THROWS_WITH(RolloutLog(resuming, rollout.fields()), Catch::Contains("is being written by another run"));

  for (std::int64_t i = 3; i < 5; ++i) rollout.run_iteration(first, i, stream);
  first.close();
  CHECK_FALSE(first.stats().failed);
  CHECK_FALSE(fs::exists(path + ".lock"));
  CHECK(RolloutFile(path).iterations() == std::vector<std::int64_t>{0, 1, 2, 3, 4});

  // Once the first has closed, the file is free.
  RolloutLog second(roomy_options(rollout, path), rollout.fields());
  second.close();
  CHECK(RolloutFile(path).iterations().empty());
}

TEST_CASE("A log whose writer was killed reads back whole and resumes", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_killed");
  const std::string path = scratch / "log.h5";
  // Killed after 4 iterations were written, and again while its fifth was queued for the writer.
  const int queued = GENERATE(0, 1);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Stream stream(Device::cpu());
    RolloutLogOptions options = roomy_options(rollout, path);
    options.before_write = [](std::int64_t iteration) {
      if (iteration == 4) std::this_thread::sleep_for(std::chrono::seconds(60));  // held until the kill
    };
    RolloutLog log(options, rollout.fields());
    for (std::int64_t i = 0; i < 4 + queued; ++i) rollout.run_iteration(log, i, stream);
    while (log.stats().written < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::raise(SIGKILL);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);

  {
    const RolloutFile file(path);  // opened for SWMR reading: HDF5 still sees a writer's mark
    CHECK(file.iterations() == std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK(file.incomplete_rows() == 0);
    const DatasetValues reward = file.read("reward", 3);
    CHECK(reward.values.at(1 * SyntheticRollout::log_envs + 2) == SyntheticRollout::reward(3, 1, 5));
  }
  // The lock died with its holder: resuming takes the file, clears the writer's mark and goes on.
  RolloutLogOptions resuming = roomy_options(rollout, path);
  resuming.resume_iteration = 2;
  {
    Stream stream(Device::cpu());
    RolloutLog log(resuming, rollout.fields());
    for (std::int64_t i = 2; i < 6; ++i) rollout.run_iteration(log, i, stream);
    log.close();
    CHECK_FALSE(log.stats().failed);
  }
  const RolloutFile file(path);
  CHECK(file.iterations() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(file.read("obs", 5).values.at(0) == SyntheticRollout::obs(5, 0, SyntheticRollout::first_env, 0));
}
