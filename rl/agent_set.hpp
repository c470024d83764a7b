#pragma once
// Several independent learners in one process (docs/agents.md): one iteration of each, side by side.
#include <vector>

#include "rl/trainer.hpp"

namespace surge::rl {

// The CPU threads that run `agents` learners side by side: one per core, at most one per agent.
int agent_threads(std::size_t agents);

// One iteration of every trainer. On the CPU the trainers run in parallel, one per thread, and each
// on that one thread inside (nested parallel regions stay on it): a trainer's arithmetic is then that
// of a run alone on one thread, so its results are bit for bit those of that run. On CUDA each trainer
// enqueues its iteration (its graph) on its own stream, one after another, and none is waited for.
// Every trainer must be on `device`; call it from one host thread.
void iterate_agents(const std::vector<Trainer*>& trainers, Device device);

}  // namespace surge::rl
