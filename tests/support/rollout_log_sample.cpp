// Writes the synthetic rollout of tests/support/synthetic_rollout.hpp to a rollout log, for the independent
// h5py check (check_rollout_log.py) and for the full-disk test, which runs it under a file-size
// limit. Prints the log's counts as one line: "written=W dropped=D failed=F".
//   usage: rollout_log_sample FILE.h5 ITERATIONS EVERY [paced] [RESERVE_BYTES]
// "paced" waits for the writer after each iteration, as a trainer slower than the disk would, so
// that nothing is dropped.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "rl/io/rollout_log.hpp"
#include "sim/stream.hpp"
#include "tests/support/synthetic_rollout.hpp"

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6 || (argc >= 5 && std::string(argv[4]) != "paced")) {
    std::fprintf(stderr, "usage: rollout_log_sample FILE.h5 ITERATIONS EVERY [paced] [RESERVE_BYTES]\n");
    return 2;
  }
  const bool paced = argc >= 5;
  // Past a file-size limit, write() then fails with EFBIG (as on a full disk) instead of the
  // process being killed.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    surge::testing::SyntheticRollout rollout;
    surge::rl::RolloutLogOptions options = rollout.options(argv[1], std::atoll(argv[3]));
    options.flush_seconds = 0;  // every iteration reaches the file at once, as the file-size tests expect
    if (argc == 6) options.reserve_bytes = std::atoll(argv[5]);
    surge::Stream stream(surge::Device::cpu());
    surge::rl::RolloutLog log(options, rollout.fields());
    const long long iterations = std::atoll(argv[2]);
    long long logged = 0;
    for (long long i = 0; i < iterations; ++i) {
      if (rollout.run_iteration_logged(log, i, stream)) ++logged;
      while (paced) {
        const surge::rl::RolloutLogStats stats = log.stats();
        if (stats.failed || stats.written >= logged) break;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    log.close();
    const surge::rl::RolloutLogStats stats = log.stats();
    std::printf("written=%lld dropped=%lld failed=%d\n", static_cast<long long>(stats.written),
                static_cast<long long>(stats.dropped), stats.failed ? 1 : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rollout_log_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
