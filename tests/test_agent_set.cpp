// rl/agent_set: trainers iterated side by side (one thread each on the CPU) end with the parameters,
// Adam moments and metrics of each trainer run alone, bit for bit: the agents share nothing but the
// threads. Also under ThreadSanitizer (tools/tsan-check.sh), where it checks that they share no data.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rl/agent_set.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "tests/support/small_train_config.hpp"

namespace {

using surge::Device;
using surge::rl::IterationMetrics;
using surge::rl::TrainConfig;
using surge::rl::Trainer;

struct Outcome {
  std::vector<float> params, adam_m;
  std::vector<IterationMetrics> metrics;
};

Outcome outcome(Trainer& trainer, std::vector<IterationMetrics> metrics) {
  for (const auto& m : trainer.drain()) metrics.push_back(m);
  const surge::Stream& stream = trainer.stream();
  return {surge::to_host(trainer.parameters(), stream), surge::to_host(trainer.adam_first_moment(), stream),
          std::move(metrics)};
}

Outcome alone(const std::string& scenario, const TrainConfig& config, int iterations) {
  auto engine = surge::make_engine(scenario, Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  std::vector<IterationMetrics> metrics;
  for (int k = 0; k < iterations; ++k) {
    trainer.iterate();
    for (const auto& m : trainer.ready_metrics()) metrics.push_back(m);
  }
  return outcome(trainer, std::move(metrics));
}

// The trainer's state and every iteration's metrics, bit for bit.
void check_same(const Outcome& together, const Outcome& solo) {
  CHECK(together.params == solo.params);
  CHECK(together.adam_m == solo.adam_m);
  REQUIRE(together.metrics.size() == solo.metrics.size());
  for (std::size_t i = 0; i < solo.metrics.size(); ++i) {
    CHECK(together.metrics[i].iteration == solo.metrics[i].iteration);
    CHECK(together.metrics[i].policy_loss == solo.metrics[i].policy_loss);
    CHECK(together.metrics[i].value_loss == solo.metrics[i].value_loss);
    CHECK(together.metrics[i].episodes == solo.metrics[i].episodes);
    const double a = together.metrics[i].return_last100, b = solo.metrics[i].return_last100;
    CHECK((a == b || (std::isnan(a) && std::isnan(b))));  // NaN while no episode has ended
  }
}

// CartPole trainers of small configs, seeds first_seed, first_seed + 1, ..., each with its own engine.
struct CartPoleAgents {
  std::vector<TrainConfig> configs;
  std::vector<std::unique_ptr<surge::Engine>> engines;
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<Trainer*> pointers;
  std::vector<std::vector<IterationMetrics>> metrics;  // what `after` read, per agent

  CartPoleAgents(int count, int iterations, std::uint64_t first_seed) : metrics(static_cast<std::size_t>(count)) {
    for (int k = 0; k < count; ++k) {
      configs.push_back(surge::testing::small_train_config(8, 16, iterations, {16, 16}, first_seed + k));
      engines.push_back(surge::make_engine("cartpole", Device::cpu(), configs.back().num_envs, configs.back().seed));
      trainers.push_back(std::make_unique<Trainer>(*engines.back(), configs.back()));
      pointers.push_back(trainers.back().get());
    }
  }
  // Reads agent k's metrics (on the thread that iterated it).
  void read(std::size_t k) {
    for (const auto& m : trainers[k]->ready_metrics()) metrics[k].push_back(m);
  }
  // Agent k against its run alone of `iterations`.
  void check_alone(std::size_t k, int iterations) {
    INFO("agent " << k);
    check_same(outcome(*trainers[k], metrics[k]), alone("cartpole", configs[k], iterations));
  }
};

}  // namespace

TEST_CASE("trainers side by side equal each trainer alone, bit for bit", "[agent_set]") {
  const std::string scenario = GENERATE(std::string("cartpole"), std::string("pendulum"));
  constexpr int kAgents = 3, kIterations = 3;
  std::vector<TrainConfig> configs;
  for (int k = 0; k < kAgents; ++k) {
    TrainConfig config = surge::testing::small_train_config(8, 16, kIterations, {16, 16}, 11 + k);
    config.learning_rate = 1e-3 * (k + 1);  // as a grid would give them
    configs.push_back(config);
  }
  std::vector<std::unique_ptr<surge::Engine>> engines;
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<Trainer*> pointers;
  for (const TrainConfig& config : configs) {
    engines.push_back(surge::make_engine(scenario, Device::cpu(), config.num_envs, config.seed));
    trainers.push_back(std::make_unique<Trainer>(*engines.back(), config));
    pointers.push_back(trainers.back().get());
  }
  std::vector<std::vector<IterationMetrics>> metrics(kAgents);
  for (int i = 0; i < kIterations; ++i) {
    surge::rl::iterate_agents(pointers, Device::cpu());
    for (int k = 0; k < kAgents; ++k)
      for (const auto& m : trainers[k]->ready_metrics()) metrics[k].push_back(m);
  }
  for (int k = 0; k < kAgents; ++k) {
    INFO(scenario << " agent " << k);
    check_same(outcome(*trainers[k], metrics[k]), alone(scenario, configs[k], kIterations));
  }
  // The agents differ from one another: each learnt with its own seed and rate.
  CHECK(outcome(*trainers[0], {}).params != outcome(*trainers[1], {}).params);
}

TEST_CASE("several iterations per round equal each trainer alone, and stop where `after` says", "[agent_set]") {
  constexpr int kAgents = 3, kIterations = 5;
  CartPoleAgents agents(kAgents, kIterations, 21);
  // Agent 0 runs its limit, agent 1 is stopped by `after` after its second iteration, agent 2 has a
  // smaller limit; a second round takes each to its end. Each agent's metrics are read on its thread.
  auto after = [&](std::size_t k) {
    agents.read(k);
    return !(k == 1 && agents.metrics[k].size() == 2);
  };
  const std::vector<std::int64_t> first = surge::rl::iterate_agents_for(agents.pointers, {4, 4, 3}, after);
  CHECK(first == std::vector<std::int64_t>{4, 2, 3});
  const std::vector<std::int64_t> second = surge::rl::iterate_agents_for(agents.pointers, {1, 3, 2}, after);
  CHECK(second == std::vector<std::int64_t>{1, 3, 2});
  for (std::size_t k = 0; k < kAgents; ++k) agents.check_alone(k, kIterations);
  // A limit per trainer, or it is Surge's own error.
  CHECK_THROWS_AS(surge::rl::iterate_agents_for(agents.pointers, {1}, after), surge::Error);
}

TEST_CASE("a round's last agents, handed out in turns, still equal each trainer alone", "[agent_set]") {
  // More agents than twice the threads of a two-core machine: the first run whole, the last ones one
  // iteration at a time, moving between threads. An agent with no iterations is not touched.
  constexpr int kAgents = 9;
  CartPoleAgents agents(kAgents, 6, 31);
  auto after = [&](std::size_t k) {
    agents.read(k);
    return !(k == 5 && agents.metrics[k].size() == 3);  // agent 5 stops after its third iteration
  };
  const std::vector<std::int64_t> done =
      surge::rl::iterate_agents_for(agents.pointers, {6, 0, 6, 2, 6, 6, 1, 6, 4}, after);
  CHECK(done == std::vector<std::int64_t>{6, 0, 6, 2, 6, 3, 1, 6, 4});
  for (std::size_t k = 0; k < kAgents; ++k) agents.check_alone(k, static_cast<int>(done[k]));
  // An agent's failure ends the round with that failure, once every thread has given its agent back.
  auto failing = [&](std::size_t k) {
    if (k == 2) throw std::runtime_error("agent 2 failed");
    return true;
  };
  CHECK_THROWS_WITH(surge::rl::iterate_agents_for(agents.pointers, std::vector<std::int64_t>(kAgents, 1), failing),
                    "agent 2 failed");
}

TEST_CASE("a failed capture falls back once, and nothing else is caught", "[agent_set]") {
  using surge::rl::run_or_fall_back;
  int runs = 0, give_ups = 0;
  bool graph = true;
  // The step fails while it still tries its graph, as a trainer whose capture fails does.
  auto step = [&] {
    ++runs;
    if (graph) throw surge::Error("capture failed: operation not permitted when stream is capturing");
  };
  auto give_up = [&] {
    ++give_ups;
    graph = false;
  };
  CHECK(run_or_fall_back(true, step, give_up) == "capture failed: operation not permitted when stream is capturing");
  CHECK(runs == 2);
  CHECK(give_ups == 1);
  // Given up: the next step runs once, without it.
  CHECK(run_or_fall_back(false, step, give_up).empty());
  CHECK((runs == 3 && give_ups == 1));

  // Not capturing: a failure is the step's own and goes on up, nothing given up.
  graph = true;
  CHECK_THROWS_WITH(run_or_fall_back(false, step, give_up), Catch::Contains("capture failed"));
  CHECK(give_ups == 1);
  // Bad input is the user's, not the graph's; and a failure without the graph is thrown on after one try.
  auto bad_input = [] { throw surge::InputError("surge train: bad value"); };
  CHECK_THROWS_AS(run_or_fall_back(true, bad_input, give_up), surge::InputError);
  CHECK(give_ups == 1);
  runs = 0;
  auto always = [&] {
    ++runs;
    throw surge::Error("device lost");
  };
  CHECK_THROWS_WITH(run_or_fall_back(true, always, give_up), "device lost");
  CHECK((runs == 2 && give_ups == 2));
}

TEST_CASE("a trainer on the CPU never captures, so it never falls back", "[agent_set]") {
  const TrainConfig config = surge::testing::small_train_config(8, 16, 2, {16, 16}, 5);
  auto engine = surge::make_engine("cartpole", Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  CHECK(surge::rl::iterate_or_go_eager(trainer).empty());
  CHECK(surge::rl::iterate_or_go_eager(trainer).empty());
  CHECK(trainer.iterations_enqueued() == 2);
  CHECK_FALSE(trainer.uses_graph());
}
