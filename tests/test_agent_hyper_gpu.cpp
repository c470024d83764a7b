// rl/agent_hyper on CUDA: the iteration's graph holds a pointer to the agent's scalars, not their values,
// so a value written into the array after the graph was captured changes what the next replays compute.
// Runs only where a usable GPU exists.
#include <catch2/catch.hpp>

#include <vector>

#include "rl/agent_hyper.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "tests/support/small_train_config.hpp"

namespace {

using surge::Device;
using surge::rl::AgentHyper;
using surge::rl::IterationMetrics;
using surge::rl::TrainConfig;
using surge::rl::Trainer;

// Reads the trainer's entry, lets `change` edit it and writes it back.
template <class Change>
void rewrite(const Trainer& trainer, Change change) {
  std::vector<AgentHyper> hyper = surge::to_host(trainer.agent_hyper(), trainer.stream());
  change(hyper.at(0));
  surge::from_host(trainer.agent_hyper(), hyper, trainer.stream());
}

}  // namespace

TEST_CASE("a captured iteration graph reads the scalars written into the array after the capture",
          "[agent_hyper][gpu]") {
  TrainConfig config = surge::testing::small_train_config(64, 16, 9, {32, 32}, 4);
  config.cuda_graph = true;
  auto engine = surge::make_engine("cartpole", Device::cuda(0), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  std::vector<IterationMetrics> metrics;
  auto run = [&](int iterations) {
    for (int k = 0; k < iterations; ++k) trainer.iterate();
    for (const IterationMetrics& m : trainer.drain()) metrics.push_back(m);
    return surge::to_host(trainer.parameters(), trainer.stream());
  };
  const std::vector<float> before = run(3);
  REQUIRE(trainer.graph_captured());
  for (const IterationMetrics& m : metrics) CHECK(m.epochs_applied == static_cast<double>(config.update_epochs));

  // end_epoch: a target KL no update stays under freezes the optimiser after the first epoch.
  rewrite(trainer, [](AgentHyper& h) { h.target_kl = 1e-12; });
  const std::vector<float> frozen_late = run(3);
  CHECK(frozen_late != before);
  for (std::size_t i = 3; i < metrics.size(); ++i) CHECK(metrics[i].epochs_applied == 1.0);

  // begin_iteration: a learning rate of 0 leaves the parameters where they are.
  rewrite(trainer, [](AgentHyper& h) { h.learning_rate = 0.0; });
  CHECK(run(3) == frozen_late);
  REQUIRE(metrics.size() == 9);
  for (std::size_t i = 6; i < metrics.size(); ++i) CHECK(metrics[i].learning_rate == 0.0);
  CHECK(trainer.graph_captured());
}
