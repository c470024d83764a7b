#include "tools/cli/train_ranks.hpp"

#include <cmath>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "tools/cli/stop_signal.hpp"

namespace surge::cli {

bool target_reached(double target, const rl::IterationMetrics& metrics) {
  return !std::isnan(target) && metrics.recent_episodes >= rl::kRecentEpisodes && metrics.return_last100 >= target;
}

int follow_run(const rl::TrainConfig& config, const PhysicsConfig& physics, Device device, double target,
               std::int64_t stop_after, const rl::Collective& ranks) {
  auto engine =
      make_engine(config.scenario, device, config.num_envs, config.seed, physics, ranks.rank() * config.num_envs);
  rl::Trainer trainer(*engine, config, ranks);
  StopSignals signals;
  bool stop = false;
  std::int64_t done = 0;
  // The metrics are sums over every rank, so each rank sees the target reached at the same iteration;
  // the flag is combined all the same, with Ctrl-C, so that no rank goes on alone.
  for (std::int64_t k = 0; k < trainer.num_iterations() && !ranks.any(stop || signals.requested()); ++k) {
    if (stop_after >= 0 && k >= stop_after) break;
    trainer.iterate();
    done = k + 1;
    for (const rl::IterationMetrics& m : trainer.ready_metrics()) stop = stop || target_reached(target, m);
  }
  trainer.drain();
  signals.shield();
  if (signals.requested() && done < trainer.num_iterations()) return StopSignals::exit_code(signals.signal_number());
  return 0;
}

Device rank_device(Device device, const rl::RankPlace& place) {
  if (!device.is_cuda() || place.size == 1) return device;
  const int gpus = cuda_status().device_count;
  return gpus > 0 ? Device::cuda(place.local_rank % gpus) : device;
}

}  // namespace surge::cli
