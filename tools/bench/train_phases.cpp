#include "tools/bench/train_phases.hpp"

#include <numeric>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/phase_clock.hpp"
#include "sim/physics_settings.hpp"
#include "tools/bench/env_bench.hpp"

namespace surge::cli {

TrainPhaseTiming time_train_phases(const std::string& scenario, Device device, rl::TrainConfig config, int repeats) {
  SURGE_CHECK(repeats > 0, "phase timing needs at least one repeat");
  constexpr int kWarmup = 2;
  config.total_steps = config.batch_size() * (kWarmup + repeats);
  config.validate();
  auto engine = make_engine(scenario, device, config.num_envs, config.seed,
                            resolve_physics(scenario_spec(scenario), config.physics));
  rl::Trainer trainer(*engine, config);
  for (int k = 0; k < kWarmup; ++k) trainer.iterate();
  trainer.drain();
  std::vector<std::vector<double>> per_phase(rl::kTrainPhaseCount);
  std::vector<double> totals;
  for (int r = 0; r < repeats; ++r) {
    PhaseClock clock(trainer.stream(), rl::kTrainPhaseCount);
    trainer.iterate(&clock);
    trainer.drain();
    const std::vector<double> seconds = clock.seconds();
    for (int p = 0; p < rl::kTrainPhaseCount; ++p)
      per_phase[static_cast<std::size_t>(p)].push_back(seconds[static_cast<std::size_t>(p)]);
    totals.push_back(std::accumulate(seconds.begin(), seconds.end(), 0.0));
  }
  TrainPhaseTiming timing;
  for (const auto& values : per_phase) timing.seconds.push_back(median(values));
  timing.iteration_seconds = median(totals);
  return timing;
}

}  // namespace surge::cli
