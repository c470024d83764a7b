#include "tools/cli/train_ranks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>

#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/stop_signal.hpp"

namespace surge::cli {

bool target_reached(double target, const rl::IterationMetrics& metrics) {
  return !std::isnan(target) && metrics.recent_episodes >= rl::kRecentEpisodes && metrics.return_last100 >= target;
}

int follow_run(const RankRun& run, const rl::Collective& ranks) {
  const rl::TrainConfig& config = run.config;
  auto engine = make_engine(config.scenario, run.device, config.num_envs, config.seed, run.physics,
                            ranks.rank() * config.num_envs);
  const auto frames = make_frame_store(*engine, config.pixel_observations(), config.num_steps, config.frame_size,
                                       config.grayscale, config.frame_stack);
  rl::Trainer trainer(*engine, config, ranks, frames.get());
  std::int64_t first_iteration = 0;
  if (run.resumed) {
    run.resume_state->restore(*run.resumed, trainer, *engine);
    first_iteration = run.resume_state->iteration();
  }
  std::unique_ptr<rl::RolloutLog> rollout_log;
  if (run.ranks_log) logs_may_open(ranks);
  if (run.log)
    rollout_log =
        open_train_rollout_log(*run.log, *engine, trainer, run.resumed ? first_iteration + 1 : -1, frames.get());
  const std::int64_t steps_per_iteration = config.batch_size() * ranks.size();
  StopSignals signals;
  bool stop = false;
  std::int64_t done = first_iteration;
  bool long_work = false;  // rank 0 evaluates or writes a checkpoint after the iteration just done
  auto stop_flag = [&] {
    const rl::RankTimeoutPause pause(long_work);
    return ranks.any(stop || signals.requested());
  };
  // The metrics are sums over every rank, so each rank sees the target reached at the same iteration;
  // the flag is combined all the same, with Ctrl-C, so that no rank goes on alone.
  for (std::int64_t k = first_iteration; k < trainer.num_iterations() && !stop_flag(); ++k) {
    if (run.stop_after >= 0 && k - first_iteration >= run.stop_after) break;
    if (rollout_log) rollout_log->begin_iteration(k + 1, trainer.stream());
    trainer.iterate();
    if (rollout_log) rollout_log->end_iteration((k + 1) * steps_per_iteration, trainer.stream());
    done = k + 1;
    for (const rl::IterationMetrics& m : trainer.ready_metrics()) stop = stop || target_reached(run.target, m);
    long_work = rank0_long_work(config, run.checkpoint_every, done);
    bool capture = false;
    {
      const rl::RankTimeoutPause pause(long_work);
      capture = checkpoint_now(false, ranks);
    }
    if (capture) rl::ResumeState::capture(trainer, *engine);
  }
  trainer.drain();
  signals.shield();
  if (rl::checkpoints_available()) rl::ResumeState::capture(trainer, *engine);  // for the final checkpoint
  if (rollout_log) {
    rollout_log->close();
    report_rollout_log(*rollout_log);
  }
  if (signals.requested() && done < trainer.num_iterations()) return StopSignals::exit_code(signals.signal_number());
  return 0;
}

void report_rollout_log(const rl::RolloutLog& log) {
  const rl::RolloutLogStats logged = log.stats();
  if (logged.failed) return;
  // One write: under mpirun several ranks report at once.
  const std::string line =
      "surge train: logged " + plural(logged.written, "iteration") + " to " + log.path() +
      (logged.written > 0 ? rollout_log_frames_note(log.path()) : "") +
      (logged.dropped ? " (" + std::to_string(logged.dropped) + " dropped: the disk did not keep up)" : "") + "\n";
  std::cerr << line << std::flush;
}

std::vector<bool> parse_log_ranks(const std::string& text, int size, const Command& cmd) {
  std::vector<bool> chosen(static_cast<std::size_t>(size), text == "all");
  if (text == "all") return chosen;
  auto rank = [&](const std::string& part) {
    int value = -1;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error != std::errc() || end != part.data() + part.size() || value < 0 || value >= size)
      throw InputError(cmd.complaint("--log-ranks " + text + ": '" + part + "' is not one of the " +
                                     plural(size, "rank") + " (0.." + std::to_string(size - 1) +
                                     "); give all, or ranks such as 0,1"));
    return value;
  };
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const std::size_t dash = part.find('-');
    const int first = rank(part.substr(0, dash)),
              last = dash == std::string::npos ? first : rank(part.substr(dash + 1));
    for (int r = first; r <= last; ++r) chosen[static_cast<std::size_t>(r)] = true;
  }
  if (std::find(chosen.begin(), chosen.end(), true) == chosen.end())
    throw InputError(cmd.complaint("--log-ranks '" + text + "' names no rank; give all, or ranks such as 0,1"));
  return chosen;
}

std::string rank_log_path(const std::string& path, int rank) {
  if (rank == 0) return path;
  const bool h5 = path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
  return (h5 ? path.substr(0, path.size() - 3) : path) + ".rank" + std::to_string(rank) + ".h5";
}

Device rank_device(Device device, const rl::RankPlace& place) {
  if (!device.is_cuda() || place.size == 1) return device;
  const int gpus = cuda_status().device_count;
  return gpus > 0 ? Device::cuda(place.local_rank % gpus) : device;
}

}  // namespace surge::cli
