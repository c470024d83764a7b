#include "tools/cli/train_ranks.hpp"

#include <cmath>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "tools/cli/stop_signal.hpp"

namespace surge::cli {

bool target_reached(double target, const rl::IterationMetrics& metrics) {
  return !std::isnan(target) && metrics.recent_episodes >= rl::kRecentEpisodes && metrics.return_last100 >= target;
}

int follow_run(const RankRun& run, const rl::Collective& ranks) {
  const rl::TrainConfig& config = run.config;
  auto engine = make_engine(config.scenario, run.device, config.num_envs, config.seed, run.physics,
                            ranks.rank() * config.num_envs);
  rl::Trainer trainer(*engine, config, ranks);
  std::int64_t first_iteration = 0;
  if (run.resumed) {
    run.resume_state->restore(*run.resumed, trainer, *engine);
    first_iteration = run.resume_state->iteration();
  }
  StopSignals signals;
  bool stop = false;
  std::int64_t done = first_iteration;
  // The metrics are sums over every rank, so each rank sees the target reached at the same iteration;
  // the flag is combined all the same, with Ctrl-C, so that no rank goes on alone.
  for (std::int64_t k = first_iteration; k < trainer.num_iterations() && !ranks.any(stop || signals.requested()); ++k) {
    if (run.stop_after >= 0 && k - first_iteration >= run.stop_after) break;
    trainer.iterate();
    done = k + 1;
    for (const rl::IterationMetrics& m : trainer.ready_metrics()) stop = stop || target_reached(run.target, m);
    if (checkpoint_now(false, ranks)) rl::ResumeState::capture(trainer, *engine);
  }
  trainer.drain();
  signals.shield();
  if (rl::checkpoints_available()) rl::ResumeState::capture(trainer, *engine);  // for the final checkpoint
  if (signals.requested() && done < trainer.num_iterations()) return StopSignals::exit_code(signals.signal_number());
  return 0;
}

Device rank_device(Device device, const rl::RankPlace& place) {
  if (!device.is_cuda() || place.size == 1) return device;
  const int gpus = cuda_status().device_count;
  return gpus > 0 ? Device::cuda(place.local_rank % gpus) : device;
}

}  // namespace surge::cli
