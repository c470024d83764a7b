#include "rl/agent_set.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace surge::rl {

int agent_threads(std::size_t agents) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<std::size_t>(1, std::min(agents, cores)));
}

void iterate_agents(const std::vector<Trainer*>& trainers, Device device) {
  if (device.is_cuda()) {
    for (Trainer* trainer : trainers) trainer->iterate();
    return;
  }
  // Each trainer set the process's thread count for itself when it was built; the count across the
  // agents is given here, and a trainer's own parallel loops run inside this region on its one thread.
  omp_set_max_active_levels(1);
  const auto count = static_cast<std::int64_t>(trainers.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(agent_threads(trainers.size()))
  for (std::int64_t k = 0; k < count; ++k) trainers[static_cast<std::size_t>(k)]->iterate();
}

}  // namespace surge::rl
