#pragma once
// Shared by test_batched_trainer (CPU, bit for bit) and its GPU twin: K agents of one BatchedTrainer against
// each agent's Trainer alone on an engine of its own (the GEMM path: cpu_fused_mlp = false).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rl/batched_trainer.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "sim/physics_settings.hpp"
#include "tests/support/small_train_config.hpp"

namespace surge::testing {

struct AgentOutcome {
  std::vector<float> params, adam_m, adam_v;
  rl::OptimizerScalars optimizer{};
  rl::TrainState state{};
  std::vector<rl::IterationMetrics> metrics;
};

// Three agents: seeds first_seed .. first_seed + 2, agent 1 with every grid scalar off its default, agent 2
// with a target KL that stops some of its epochs early.
inline std::vector<rl::TrainConfig> batched_agent_configs(std::int64_t num_envs, std::int64_t num_steps,
                                                          std::int64_t iterations, std::uint64_t first_seed) {
  std::vector<rl::TrainConfig> configs;
  for (int k = 0; k < 3; ++k) {
    rl::TrainConfig config = small_train_config(num_envs, num_steps, iterations, {16, 16}, first_seed + k);
    config.cpu_fused_mlp = false;
    config.num_minibatches = 2;
    config.update_epochs = 3;
    config.normalize_obs = false;
    config.normalize_reward = false;
    configs.push_back(config);
  }
  rl::TrainConfig& other = configs[1];
  other.learning_rate = 1e-3;
  other.anneal_lr = !other.anneal_lr;
  other.clip_coef = 0.1;
  other.ent_coef = 0.05;
  other.vf_coef = 0.7;
  other.clip_vloss = !other.clip_vloss;
  other.norm_adv = !other.norm_adv;
  other.gamma = 0.95;
  other.gae_lambda = 0.8;
  other.max_grad_norm = 0.3;
  other.adam_eps = 1e-6;
  configs[2].target_kl = 0.002;  // stops some epochs early
  return configs;
}

inline std::vector<AgentOutcome> run_batched(const std::string& scenario, Device device,
                                             const std::vector<rl::TrainConfig>& configs, int iterations,
                                             bool* graph_captured = nullptr, int cpu_agent_threads = 0) {
  std::vector<EngineAgent> agents;
  for (const rl::TrainConfig& config : configs)
    agents.push_back({config.seed, resolve_physics(scenario_spec(scenario), config.physics)});
  auto engine = make_engine(scenario, device, configs.front().num_envs, agents);
  rl::BatchedTrainer trainer(*engine, configs);
  if (cpu_agent_threads > 0) trainer.set_cpu_agent_threads(cpu_agent_threads);
  std::vector<AgentOutcome> outcomes(configs.size());
  const auto keep = [&](std::vector<std::vector<rl::IterationMetrics>> rows) {
    for (std::size_t k = 0; k < rows.size(); ++k)
      for (const rl::IterationMetrics& row : rows[k]) outcomes[k].metrics.push_back(row);
  };
  for (int i = 0; i < iterations; ++i) {
    trainer.iterate();
    keep(trainer.ready_metrics());
  }
  keep(trainer.drain());
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const int agent = static_cast<int>(k);
    outcomes[k].params = to_host(trainer.parameters(agent), trainer.stream());
    outcomes[k].adam_m = to_host(trainer.adam_first_moment(agent), trainer.stream());
    outcomes[k].adam_v = to_host(trainer.adam_second_moment(agent), trainer.stream());
    outcomes[k].optimizer = trainer.optimizer_scalars(agent);
    outcomes[k].state = trainer.train_state(agent);
  }
  if (graph_captured) *graph_captured = trainer.graph_captured();
  return outcomes;
}

inline AgentOutcome run_alone(const std::string& scenario, Device device, const rl::TrainConfig& config,
                              int iterations) {
  auto engine = make_engine(scenario, device, config.num_envs, config.seed);
  rl::Trainer trainer(*engine, config);
  AgentOutcome outcome;
  for (int i = 0; i < iterations; ++i) {
    trainer.iterate();
    for (const rl::IterationMetrics& row : trainer.ready_metrics()) outcome.metrics.push_back(row);
  }
  for (const rl::IterationMetrics& row : trainer.drain()) outcome.metrics.push_back(row);
  outcome.params = to_host(trainer.parameters(), trainer.stream());
  outcome.adam_m = to_host(trainer.adam_first_moment(), trainer.stream());
  outcome.adam_v = to_host(trainer.adam_second_moment(), trainer.stream());
  outcome.optimizer = trainer.optimizer_scalars();
  outcome.state = trainer.train_state();
  return outcome;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
bool same_bytes(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every byte of the learner's state and of every metrics row (NaN where no episode ended, bit for bit too).
inline bool same_outcome(const AgentOutcome& a, const AgentOutcome& b) {
  return same_bytes(a.params, b.params) && same_bytes(a.adam_m, b.adam_m) && same_bytes(a.adam_v, b.adam_v) &&
         same_bytes(a.optimizer, b.optimizer) && same_bytes(a.state, b.state) && same_bytes(a.metrics, b.metrics);
}

}  // namespace surge::testing
