// The batched learner's iteration on the CPU with several threads (rl/batched_trainer.hpp): each agent's
// phases on one thread, the agents spread over the cores.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "rl/batched_trainer.hpp"
#include "rl/gemm.hpp"
#include "sim/runtime_internal.hpp"

namespace surge::rl {

void BatchedTrainer::for_agents(const std::function<void(Agents)>& f) {
  if (cpu_agent_threads_ <= 1) {
    f({0, agents_});
    return;
  }
  // One agent per call, the agents handed to the threads in turn (a dynamic schedule: a thread the machine
  // takes away for a while leaves the later agents to the others); the order-free test mode
  // (sim/runtime_internal.hpp) visits them reversed or shuffled. Calls for groups of 8 agents measured no
  // faster: an agent's launches are a small part of its work.
  const std::vector<std::int64_t> order =
      cpu_order() == CpuOrder::kSequential ? std::vector<std::int64_t>{} : cpu_visit_order(agents_);
  const auto run_agent = [&](std::int64_t position) {
    const std::int64_t agent = order.empty() ? position : order[static_cast<std::size_t>(position)];
    f({static_cast<int>(agent), 1});
  };
  // Each agent's loops run on its thread (nested regions off), its GEMMs in OpenBLAS on that thread alone.
  struct OneLevel {  // the process's setting (OMP_MAX_ACTIVE_LEVELS) back after the region
    const int before = omp_get_max_active_levels();
    OneLevel() { omp_set_max_active_levels(1); }
    ~OneLevel() { omp_set_max_active_levels(before); }
  };
  [[maybe_unused]] const OneLevel one_level;
  [[maybe_unused]] const SingleThreadedBlas single;
  std::exception_ptr failure;  // an exception cannot leave an OpenMP region: the first is thrown after it
#pragma omp parallel for schedule(dynamic, 1) num_threads(cpu_agent_threads_)
  for (std::int64_t position = 0; position < agents_; ++position) {
    try {
      run_agent(position);
    } catch (...) {
#pragma omp critical(surge_batched_agent_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// enqueue_iteration's phases in the same order for each agent, in one region: each agent's rollout (its
// environments step on its thread), GAE and epochs, its data staying in its core's caches from one phase to
// the next. Then the engine's episode statistics, reduced for every agent (learning does not touch them),
// and the metrics of all agents (one call: a few numbers per agent).
void BatchedTrainer::enqueue_iteration_per_agent() {
  for_agents([&](Agents a) {
    rollout(a);
    finish_rollout(a, false);
    learn(a);
  });
  engine_.reduce_episode_stats(shared_arena_[s_.episode_stats], stream_);
  engine_.clear_episode_stats(stream_);
  finish_iteration({0, agents_});
}

}  // namespace surge::rl
