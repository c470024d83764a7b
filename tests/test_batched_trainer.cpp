// rl/batched_trainer: K agents trained by one batched learner (every launch serving all of them) each end
// with the parameters, Adam moments, optimiser scalars, train state and metrics rows of its Trainer alone,
// bit for bit, on the CPU.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>

#include "tests/support/batched_trainer_cases.hpp"

namespace {

using namespace surge::testing;  // the cases: run_batched, run_alone, same_bytes, ...
using surge::Device;
using surge::rl::IterationMetrics;

void check_each_agent_alone(const std::string& scenario, std::int64_t num_envs, std::int64_t num_steps, int iterations,
                            bool normalize_obs = false, bool normalize_reward = false) {
  auto configs = batched_agent_configs(num_envs, num_steps, iterations, 11);
  for (auto& config : configs) {
    config.normalize_obs = normalize_obs;
    config.normalize_reward = normalize_reward;
  }
  // The agents over the cores (one agent per call), and every phase one call for all of them (CUDA's sequence).
  const std::vector<AgentOutcome> spread = run_batched(scenario, Device::cpu(), configs, iterations);
  const std::vector<AgentOutcome> whole = run_batched(scenario, Device::cpu(), configs, iterations, nullptr, 1);
  REQUIRE(spread.size() == configs.size());
  REQUIRE(whole.size() == configs.size());
  std::vector<AgentOutcome> alone_runs;
  for (const auto& config : configs) alone_runs.push_back(run_alone(scenario, Device::cpu(), config, iterations));
  for (std::size_t run = 0; run < 2 * configs.size(); ++run) {
    const std::size_t k = run % configs.size();
    const AgentOutcome& mine = (run < configs.size() ? spread : whole)[k];
    INFO(scenario << ", agent " << k << (run < configs.size() ? ", one agent per call" : ", one call for all"));
    const AgentOutcome& alone = alone_runs[k];
    REQUIRE(alone.metrics.size() == static_cast<std::size_t>(iterations));
    CHECK(same_bytes(mine.params, alone.params));
    CHECK(same_bytes(mine.adam_m, alone.adam_m));
    CHECK(same_bytes(mine.adam_v, alone.adam_v));
    CHECK(same_bytes(mine.optimizer, alone.optimizer));
    CHECK(same_bytes(mine.state, alone.state));
    for (std::size_t i = 0; i < alone.metrics.size(); ++i) {
      INFO("iteration " << i + 1 << ": episodes " << mine.metrics[i].episodes << " and " << alone.metrics[i].episodes
                        << ", explained variance " << mine.metrics[i].explained_variance << " and "
                        << alone.metrics[i].explained_variance << ", policy loss " << mine.metrics[i].policy_loss
                        << " and " << alone.metrics[i].policy_loss);
      int field = -1;  // the first of IterationMetrics' fields that differs
      const auto* a = reinterpret_cast<const double*>(&mine.metrics[i]);
      const auto* b = reinterpret_cast<const double*>(&alone.metrics[i]);
      for (std::size_t f = 0; f < sizeof(IterationMetrics) / sizeof(double) && field < 0; ++f)
        if (std::memcmp(a + f, b + f, sizeof(double)) != 0) field = static_cast<int>(f);
      INFO("first differing field " << field << ": " << (field >= 0 ? a[field] : 0.0) << " and "
                                    << (field >= 0 ? b[field] : 0.0));
      CHECK(field == -1);
    }
    // The comparison can fail: agent k against the next agent's run alone.
    CHECK_FALSE(same_outcome(mine, alone_runs[(k + 1) % configs.size()]));
  }
}

}  // namespace

TEST_CASE("batched learner: each CartPole agent equals its trainer alone, bit for bit", "[batched_trainer]") {
  check_each_agent_alone("cartpole", 6, 16, 4);
}

TEST_CASE("batched learner: Acrobot agents, odd sizes", "[batched_trainer]") {
  check_each_agent_alone("acrobot", 5, 12, 3);
}

TEST_CASE("batched learner: MountainCar agents reach the time limit (truncated episodes)", "[batched_trainer]") {
  // 200-step episodes that never reach the goal under a fresh policy: every environment is truncated at
  // step 200, so GAE bootstraps from V(final observation).
  check_each_agent_alone("mountain_car", 4, 64, 4);
}

TEST_CASE("batched learner: Pendulum agents (a Gaussian policy) with observation and reward normalisation",
          "[batched_trainer]") {
  check_each_agent_alone("pendulum", 5, 40, 3, true, true);
}

TEST_CASE("batched learner: MountainCarContinuous agents (a Gaussian policy)", "[batched_trainer]") {
  check_each_agent_alone("mountain_car_continuous", 4, 24, 3);
}

TEST_CASE("batched learner: CartPole agents with observation normalisation", "[batched_trainer]") {
  check_each_agent_alone("cartpole", 7, 12, 3, true, false);
}

TEST_CASE("batched learner: refuses what it does not cover, with one line", "[batched_trainer]") {
  auto configs = batched_agent_configs(4, 8, 2, 1);
  std::vector<surge::EngineAgent> agents;
  for (const auto& config : configs)
    agents.push_back({config.seed, surge::resolve_physics(surge::scenario_spec("cartpole"), config.physics)});
  auto engine = surge::make_engine("cartpole", Device::cpu(), 4, agents);
  SECTION("normalisation differing between agents") {
    configs[2].normalize_obs = true;
    CHECK_THROWS_WITH(surge::rl::BatchedTrainer(*engine, configs), Catch::Contains("agent 2's normalize_obs"));
  }
  SECTION("a shape key differing") {
    configs[1].num_minibatches = 4;
    CHECK_THROWS_WITH(surge::rl::BatchedTrainer(*engine, configs), Catch::Contains("agent 1's num_minibatches"));
  }
  SECTION("bf16") {
    configs[0].precision = "bf16";
    CHECK_THROWS_WITH(surge::rl::BatchedTrainer(*engine, configs), Catch::Contains("agent 0: precision = bf16"));
  }
  std::string why;
  const auto fresh = batched_agent_configs(4, 8, 2, 1);
  auto pixels = fresh[0];
  pixels.observation = "pixels";
  CHECK_FALSE(surge::rl::BatchedTrainer::supported(pixels, surge::scenario_spec("cartpole"), &why));
  CHECK(why.find("pixel observations") != std::string::npos);
  CHECK(surge::rl::BatchedTrainer::supported(fresh[0], surge::scenario_spec("pendulum")));
}

namespace {

bool same_saved(const std::vector<surge::SavedBuffer>& a, const std::vector<surge::SavedBuffer>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].dims != b[i].dims || a[i].agent != b[i].agent ||
        a[i].bytes != b[i].bytes)
      return false;
  return true;
}

struct Batch {
  std::unique_ptr<surge::Engine> engine;
  std::unique_ptr<surge::rl::BatchedTrainer> trainer;
  explicit Batch(const std::vector<surge::rl::TrainConfig>& configs) {
    std::vector<surge::EngineAgent> agents;
    for (const auto& config : configs)
      agents.push_back({config.seed, surge::resolve_physics(surge::scenario_spec("cartpole"), config.physics)});
    engine = surge::make_engine("cartpole", Device::cpu(), configs.front().num_envs, agents);
    trainer = std::make_unique<surge::rl::BatchedTrainer>(*engine, configs);
  }
  void iterate(int iterations) {
    for (int i = 0; i < iterations; ++i) trainer->iterate();
    trainer->drain();
  }
};

}  // namespace

TEST_CASE("batched learner: each agent saves its trainer alone's state, and a restored batch goes on exactly",
          "[batched_trainer]") {
  const auto configs = batched_agent_configs(6, 16, 8, 31);
  Batch whole(configs);
  whole.iterate(3);
  CHECK(surge::rl::BatchedTrainer::memory_plan(configs[0], surge::scenario_spec("cartpole"), Device::cpu(), 3)
            .allocated_bytes() == whole.trainer->device_bytes());
  std::vector<std::vector<surge::SavedBuffer>> trainer_state, engine_state;
  for (int k = 0; k < 3; ++k) {
    INFO("agent " << k);
    trainer_state.push_back(whole.trainer->save_state(k));
    engine_state.push_back(whole.engine->save_agent_state(k, whole.trainer->stream()));
    auto engine = surge::make_engine("cartpole", Device::cpu(), configs[k].num_envs, configs[k].seed);
    surge::rl::Trainer alone(*engine, configs[k]);
    for (int i = 0; i < 3; ++i) alone.iterate();
    alone.drain();
    CHECK(same_saved(trainer_state.back(), alone.save_state()));
    CHECK(same_saved(engine_state.back(), surge::save_buffers(engine->buffers(), alone.stream())));
    if (k > 0) CHECK_FALSE(same_saved(trainer_state.back(), trainer_state.front()));  // agents differ
  }
  Batch resumed(configs);
  for (int k = 2; k >= 0; --k) {  // in any order
    resumed.engine->restore_agent_state(k, engine_state[k], "agent state", resumed.trainer->stream());
    resumed.trainer->restore_state(k, trainer_state[k]);
  }
  whole.iterate(3);
  resumed.iterate(3);
  for (int k = 0; k < 3; ++k) {
    INFO("agent " << k);
    CHECK(same_bytes(surge::to_host(whole.trainer->parameters(k), whole.trainer->stream()),
                     surge::to_host(resumed.trainer->parameters(k), resumed.trainer->stream())));
    CHECK(same_saved(whole.trainer->save_state(k), resumed.trainer->save_state(k)));
  }
  // A damaged ring head is refused before anything is written.
  auto damaged = trainer_state[1];
  for (auto& buffer : damaged)
    if (buffer.name == "train_state") buffer.bytes[2 * sizeof(std::int64_t)] = std::byte{200};
  CHECK_THROWS_WITH(resumed.trainer->restore_state(1, damaged), Catch::Contains("out of range"));
}
