// rl::AgentIterations on CUDA: the agents' iterations in one CUDA graph (forked from one stream, joined
// back) end with the parameters, Adam moments and metrics of each trainer iterated alone with its own
// graph, bit for bit, also when an agent leaves the set (the graph is captured again for the rest) and
// when the host reads a trainer's state between launches (settle). Runs only where a usable GPU exists.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "rl/agent_set.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "tests/support/small_train_config.hpp"

namespace {

using surge::Device;
using surge::rl::IterationMetrics;
using surge::rl::TrainConfig;
using surge::rl::Trainer;

const Device kCuda = Device::cuda(0);

// What a trainer ends with: its parameters and Adam moments, and the policy loss of every iteration.
struct Learnt {
  std::vector<float> params, adam_m;
  std::vector<double> policy_losses;
};

void take_metrics(const std::vector<IterationMetrics>& ready, Learnt& learnt) {
  for (const IterationMetrics& m : ready) learnt.policy_losses.push_back(m.policy_loss);
}

void take_state(Trainer& trainer, Learnt& learnt) {
  take_metrics(trainer.drain(), learnt);
  learnt.params = surge::to_host(trainer.parameters(), trainer.stream());
  learnt.adam_m = surge::to_host(trainer.adam_first_moment(), trainer.stream());
}

TrainConfig agent_config(int k, int iterations) {
  TrainConfig config = surge::testing::small_train_config(64, 16, iterations, {32, 32}, 21 + k);
  config.learning_rate = 5e-4 * (k + 1);
  config.cuda_graph = true;
  return config;
}

}  // namespace

TEST_CASE("agents in one CUDA graph equal each trainer alone, bit for bit", "[agent_set][gpu]") {
  constexpr int kAgents = 3, kIterations = 6, kLeavesAfter = 3;  // agent 2 stops after iteration 3
  auto iterations_of = [](int k) { return k == kAgents - 1 ? kLeavesAfter : kIterations; };
  std::vector<std::unique_ptr<surge::Engine>> engines;
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int k = 0; k < kAgents; ++k) {
    const TrainConfig config = agent_config(k, kIterations);
    engines.push_back(surge::make_engine("cartpole", kCuda, config.num_envs, config.seed));
    trainers.push_back(std::make_unique<Trainer>(*engines.back(), config));
  }
  std::vector<Learnt> together(kAgents);
  {
    surge::rl::AgentIterations rounds(kCuda);
    for (int i = 0; i < kIterations; ++i) {
      std::vector<Trainer*> active;
      for (int k = 0; k < kAgents; ++k)
        if (i < iterations_of(k)) active.push_back(trainers[k].get());
      rounds.iterate(active);
      if (i >= 1) CHECK(rounds.uses_graph());
      for (int k = 0; k < kAgents; ++k)
        if (i < iterations_of(k)) take_metrics(trainers[k]->ready_metrics(), together[k]);
      if (i == kLeavesAfter - 1) {
        rounds.settle();  // the leaving agent's state is read now, as a checkpoint would
        take_state(*trainers[kAgents - 1], together[kAgents - 1]);
      }
    }
    rounds.settle();
    for (int k = 0; k < kAgents - 1; ++k) take_state(*trainers[k], together[k]);
  }
  for (int k = 0; k < kAgents; ++k) {
    INFO("agent " << k);
    const TrainConfig config = agent_config(k, kIterations);
    auto engine = surge::make_engine("cartpole", kCuda, config.num_envs, config.seed);
    Trainer trainer(*engine, config);
    Learnt alone;
    for (int i = 0; i < iterations_of(k); ++i) {
      trainer.iterate();
      take_metrics(trainer.ready_metrics(), alone);
    }
    take_state(trainer, alone);
    CHECK(together[k].params == alone.params);
    CHECK(together[k].adam_m == alone.adam_m);
    CHECK(together[k].policy_losses == alone.policy_losses);
  }
}
