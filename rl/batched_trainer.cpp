// The batched learner's construction, buffers and running (rl/batched_trainer.hpp); the iteration's
// phases are in batched_trainer_iteration.cpp.
#include "rl/batched_trainer.hpp"

#include <algorithm>

#include "rl/agent_set.hpp"
#include "rl/batched_kernels.hpp"
#include "rl/batched_loss.hpp"
#include "rl/device_util.hpp"
#include "rl/gemm.hpp"
#include "rl/normalization.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

// The keys whose values the agents may not differ in: those that set a buffer's size or the launches.
void check_same_shape(const TrainConfig& first, const TrainConfig& other, int agent) {
  const auto differs = [&](const char* key) {
    throw InputError(std::string("agent ") + std::to_string(agent) + "'s " + key +
                     " differs from agent 0's: the batched learner's agents share every shape; vary only "
                     "the keys surge train --help lists under --grid");
  };
  if (other.num_envs != first.num_envs) differs("num_envs");
  if (other.num_steps != first.num_steps) differs("num_steps");
  if (other.num_minibatches != first.num_minibatches) differs("num_minibatches");
  if (other.update_epochs != first.update_epochs) differs("update_epochs");
  if (other.total_steps != first.total_steps) differs("total_steps");
  if (other.hidden != first.hidden) differs("hidden");
  if (other.activation != first.activation) differs("activation");
  if (other.precision != first.precision) differs("precision");
  if (other.normalize_obs != first.normalize_obs) differs("normalize_obs");
  if (other.normalize_reward != first.normalize_reward) differs("normalize_reward");
  if (other.beta1 != first.beta1 || other.beta2 != first.beta2) differs("Adam's betas");
}

const std::vector<TrainConfig>& checked_configs(const Engine& engine, const std::vector<TrainConfig>& configs) {
  if (configs.empty()) throw InputError("the batched learner needs at least one agent's config");
  if (static_cast<std::int64_t>(configs.size()) > BatchedTrainer::kMaxAgents)
    throw InputError("the batched learner holds at most " + std::to_string(BatchedTrainer::kMaxAgents) +
                     " agents, and " + std::to_string(configs.size()) + " were given; use one learner per agent");
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const TrainConfig& config = configs[k];
    config.validate();
    std::string why;
    if (!BatchedTrainer::supported(config, engine.spec(), &why))
      throw InputError("agent " + std::to_string(k) + ": " + why);
    check_same_shape(configs.front(), config, static_cast<int>(k));
  }
  const TrainConfig& first = configs.front();
  SURGE_CHECK(engine.num_agents() == static_cast<std::int64_t>(configs.size()),
              "the engine holds " + std::to_string(engine.num_agents()) + " agents, the configs are " +
                  std::to_string(configs.size()));
  SURGE_CHECK(engine.envs_per_agent() == first.num_envs,
              "the engine's agents hold " + std::to_string(engine.envs_per_agent()) +
                  " environments each, the configs ask for " + std::to_string(first.num_envs));
  SURGE_CHECK(engine.first_env() == 0, "the batched learner runs in one process");
  for (std::size_t k = 0; k < configs.size(); ++k)
    SURGE_CHECK(engine.agent_seed(static_cast<std::int64_t>(k)) == configs[k].seed,
                "agent " + std::to_string(k) + "'s engine seed is not its config's seed");
  if (first.total_steps < first.batch_size())
    throw InputError("total_steps = " + std::to_string(first.total_steps) + " is less than one iteration of " +
                     std::to_string(first.batch_size()) + " steps; raise total_steps or shrink the batch");
  return configs;
}

}  // namespace

bool BatchedTrainer::supported(const TrainConfig& config, const ScenarioSpec& spec, std::string* why) {
  const auto no = [&](const std::string& reason) {
    if (why) *why = reason + ": the batched learner does not cover it yet (one learner per agent does)";
    return false;
  };
  if (config.pixel_observations()) return no("pixel observations");
  if (config.normalize_obs && (spec.obs_dim < 1 || spec.obs_dim > kMaxNormalizedDim))
    return no("normalize_obs with " + std::to_string(spec.obs_dim) + " observation values");
  if (config.precision != "fp32") return no("precision = " + config.precision);
  return true;
}

BufferTable BatchedTrainer::agent_table(const TrainConfig& config, const ActorCritic& net, int obs_dim, Device device,
                                        AgentBuffers& b) {
  const std::int64_t t = config.num_steps, n = config.num_envs, d = obs_dim, p = net.table().total();
  const std::int64_t mb = config.minibatch_size(), a = net.head_width();
  const std::int64_t rows = std::max(n, mb);
  BufferTable table;
  b.params = table.add<float>("learner.params", {p}, "[P]", "the actor's and critic's parameters", kSaved | kAgent);
  b.grads = table.add<float>("learner.grads", {p}, "[P]", "the latest minibatch's gradient");
  b.adam_m = table.add<float>("learner.adam_m", {p}, "[P]", "Adam's first moment", kSaved | kAgent);
  b.adam_v = table.add<float>("learner.adam_v", {p}, "[P]", "Adam's second moment", kSaved | kAgent);
  b.obs = table.add<float>("rollout.obs", {t + 1, n, d}, "[T+1][N][obs_dim]", "observations");
  const std::int64_t dims = net.action_dim(), continuous = net.continuous() ? 1 : 0;
  if (continuous)
    b.continuous_actions =
        table.add<float>("rollout.actions", {t, n, dims}, "[T][N][action_dim]", "the policy's samples, unclipped");
  else
    b.actions = table.add<std::int32_t>("rollout.actions", {t, n}, "[T][N]", "the actions taken");
  b.logprob = table.add<float>("rollout.logprob", {t, n}, "[T][N]", "their log-probabilities");
  b.value = table.add<float>("rollout.value", {t + 1, n}, "[T+1][N]", "V(obs)");
  b.reward = table.add<float>("rollout.reward", {t, n}, "[T][N]", "rewards");
  b.terminated = table.add<std::uint8_t>("rollout.terminated", {t, n}, "[T][N]", "episode ended by the task");
  b.truncated = table.add<std::uint8_t>("rollout.truncated", {t, n}, "[T][N]", "episode cut by the time limit");
  b.advantage = table.add<float>("rollout.adv", {t, n}, "[T][N]", "GAE advantages");
  b.returns = table.add<float>("rollout.ret", {t, n}, "[T][N]", "advantages plus values");
  b.final_obs = table.add<float>("rollout.final_obs", {n, d}, "[N][obs_dim]", "last observation of ended episodes");
  b.final_value = table.add<float>("rollout.final_value", {t, n}, "[T][N]", "V(final_obs) where truncated");
  b.rollout_logits = table.add<float>(continuous ? "learner.rollout_means" : "learner.rollout_logits", {n, a},
                                      continuous ? "[N][action_dim]" : "[N][num_actions]", "the actor's outputs");
  b.env_actions = table.add<float>("learner.env_actions", {continuous * n, dims}, "[N][action_dim]",
                                   "the samples clipped to the action bounds, as the environments get them");
  b.actor_activations = table.add<float>("workspace.actor_activations", {net.actor().activation_size(rows)},
                                         "[max(N,B)][hidden...]", "the actor's hidden activations");
  b.critic_activations = table.add<float>("workspace.critic_activations", {net.critic().activation_size(rows)},
                                          "[max(N,B)][hidden...]", "the critic's hidden activations");
  b.logits = table.add<float>("workspace.logits", {mb, a}, "[B][num_actions]", "the minibatch's logits");
  b.values = table.add<float>("workspace.values", {mb}, "[B]", "the minibatch's values");
  b.d_logits = table.add<float>("workspace.d_logits", {mb, a}, "[B][num_actions]", "dloss/dlogits");
  b.d_values = table.add<float>("workspace.d_values", {mb}, "[B]", "dloss/dvalues");
  b.d_log_std_rows = table.add<float>("workspace.d_log_std_rows", {continuous * mb, dims}, "[B][action_dim]",
                                      "each sample's share of dloss/dlog_std");
  b.mlp_scratch =
      table.add<float>("workspace.scratch", {std::max(net.actor().scratch_size(mb), net.critic().scratch_size(mb))},
                       "[B][widest]", "the backward pass's scratch");
  add_minibatch_buffers(table, mb, obs_dim, net.action_dim(), net.continuous(),
                        config.update_epochs * config.num_minibatches, b.minibatch);
  b.advantage_stats = table.add<double>("workspace.advantage_stats", {2}, "[2]", "the minibatch's advantage sums");
  add_episode_buffers(table, t, n, 1, b.episodes);
  // Normalisation: rl/normalization.hpp's entries (a checkpoint keeps them under the same names).
  Normalization::add_buffers(table, device, config, obs_dim, t, n, b.norm);
  return table;
}

BufferTable BatchedTrainer::shared_table(const TrainConfig& config, const ActorCritic& net, Device device, int agents,
                                         SharedBuffers& b) {
  const std::int64_t k = agents, rows = std::max(config.num_envs, config.minibatch_size());
  const std::int64_t scratch = std::max(
      {batched_reduce_scratch_doubles(device, k, 4), batched_reduce_scratch_doubles(device, k, 1),
       ppo_loss_batched_scratch_doubles(device, agents), normalization_batched_scratch_doubles(device, agents)});
  BufferTable table;
  b.hyper = table.add<AgentHyper>(DType::Float64, "learner.hyper", {k}, "[K]", "each agent's grid-variable scalars");
  b.optimizer = table.add<OptimizerScalars>(DType::Float64, "learner.optimizer", {k}, "[K]",
                                            "learning rate, step and the latest update's scalars", kSaved);
  b.state = table.add<TrainState>(DType::Int64, "learner.train_state", {k}, "[K]",
                                  "iteration, epochs applied and the recent-returns ring's head and count", kSaved);
  b.seeds = table.add<std::uint64_t>("learner.seeds", {k}, "[K]", "each agent's seed (action draws, shuffles)");
  b.metrics = table.add<IterationMetrics>(DType::Float64, "metrics.iteration", {k}, "[K]", "each agent's metrics row");
  b.episode_stats = table.add<double>("metrics.episode_stats", {k, 3}, "[K][3]", "episodes, return sum and length sum");
  b.ev_sums = table.add<double>("metrics.ev_sums", {k, 4}, "[K][4]", "explained-variance sums");
  b.scratch = table.add<double>("metrics.reduce_scratch", {scratch}, "[scratch]", "partial sums of the reductions");
  b.ones = table.add<float>("workspace.ones", {rows}, "[max(N,B)]", "ones, for bias gradients as GEMMs");
  b.action_bounds = table.add<float>("learner.action_bounds", {2, net.action_dim()}, "[2][action_dim]",
                                     "the action space's low, then high");
  return table;
}

BatchedTrainer::BatchedTrainer(Engine& engine, const std::vector<TrainConfig>& configs)
    : engine_(engine),
      configs_(checked_configs(engine, configs)),
      config_(configs_.front()),
      agents_(static_cast<int>(configs_.size())),
      cpu_agent_threads_(engine.device().is_cpu() && agents_ > 1 ? agent_threads(static_cast<std::size_t>(agents_))
                                                                 : 1),
      num_steps_(config_.num_steps),
      num_envs_(config_.num_envs),
      obs_dim_(engine.spec().obs_dim),
      minibatch_size_(config_.minibatch_size()),
      num_iterations_(config_.total_steps / config_.batch_size()),
      device_(engine.device()),
      stream_(engine.device()),
      network_(ActorCritic::for_scenario(engine.spec(), config_)),
      agent_arena_(device_, agent_table(config_, network_, engine.spec().obs_dim, device_, b_), stream_, agents_),
      shared_arena_(device_, shared_table(config_, network_, device_, agents_, s_), stream_),
      graph_(stream_),
      metrics_mirror_(device_, static_cast<std::size_t>(agents_) * sizeof(IterationMetrics), 2),
      pending_(static_cast<std::size_t>(agents_)) {
  prepare_gemm(device_);  // the iteration graph captures GEMMs: cuBLASLt must exist before
  if (device_.is_cuda()) set_cuda_gemm_tf32(false);
  // As a Trainer alone sets them (CartPole's config: one thread); the agents' region takes cpu_agent_threads_.
  if (device_.is_cpu()) set_cpu_threads(cpu_threads_for(config_));
  std::vector<AgentHyper> hyper;
  std::vector<std::uint64_t> seeds;
  for (const TrainConfig& config : configs_) {
    hyper.push_back(agent_hyper(config));
    seeds.push_back(config.seed);
  }
  from_host(shared_arena_[s_.hyper], hyper, stream_);
  from_host(shared_arena_[s_.seeds], seeds, stream_);
  const Span<float> ones = shared_arena_[s_.ones];
  fill(stream_, ones.data, ones.size, 1.0f);
  for (int k = 0; k < agents_; ++k) {
    const std::vector<double> initial = network_.initial_parameters(configs_[static_cast<std::size_t>(k)].seed);
    from_host(agent_arena_.at(b_.params, k), std::vector<float>(initial.begin(), initial.end()), stream_);
  }
  if (network_.continuous()) {
    std::vector<float> bounds = engine.spec().action_low;
    bounds.insert(bounds.end(), engine.spec().action_high.begin(), engine.spec().action_high.end());
    from_host(shared_arena_[s_.action_bounds], bounds, stream_);
  }
  // The first observation sits in obs[T]: every iteration starts by moving obs[T] to obs[0].
  const std::int64_t row = num_envs_ * obs_dim_;
  engine_.observe_agents(agent_arena_.at(b_.obs, 0).slice(num_steps_ * row, row),
                         static_cast<std::int64_t>(agent_arena_.replica_stride_bytes()), stream_);
  start_normalization();
  observe_normalized(num_steps_ * num_envs_, -1, {0, agents_});
  engine_.clear_episode_stats(stream_);
  stream_.synchronize();
}

MemoryPlan BatchedTrainer::memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device, int agents) {
  const ActorCritic network = ActorCritic::for_scenario(spec, config);
  MemoryPlan plan(device);
  AgentBuffers agent;
  agent_table(config, network, spec.obs_dim, device, agent).add_to(plan, agents);
  SharedBuffers shared;
  shared_table(config, network, device, agents, shared).add_to(plan);
  return plan;
}

BatchedTrainer::~BatchedTrainer() { stream_.synchronize_noexcept(); }

void BatchedTrainer::iterate() {
  // Iteration 0 runs eagerly (it sets up cuBLASLt's plans, which a capture must not do); later ones
  // replay the graph captured from the second.
  enqueue_or_replay(graph_, device_.is_cuda() && config_.cuda_graph && enqueued_ >= 1, [this] { enqueue_iteration(); });
  if (collected_ <= enqueued_ - 2) collect(enqueued_ - 2);
  metrics_mirror_.copy_async(static_cast<int>(enqueued_ % 2), shared(s_.metrics), stream_);
  ++enqueued_;
}

void BatchedTrainer::collect(std::int64_t iteration) {
  SURGE_CHECK(iteration == collected_, "metrics collected out of order");
  const auto* rows = static_cast<const IterationMetrics*>(metrics_mirror_.wait(static_cast<int>(iteration % 2)));
  for (int k = 0; k < agents_; ++k) pending_[static_cast<std::size_t>(k)].push_back(rows[k]);
  ++collected_;
}

std::vector<std::vector<IterationMetrics>> BatchedTrainer::ready_metrics() {
  const std::int64_t ready = device_.is_cpu() ? enqueued_ : enqueued_ - 1;
  while (collected_ < ready) collect(collected_);
  return std::exchange(pending_, std::vector<std::vector<IterationMetrics>>(static_cast<std::size_t>(agents_)));
}

std::vector<std::vector<IterationMetrics>> BatchedTrainer::drain() {
  while (collected_ < enqueued_) collect(collected_);
  return std::exchange(pending_, std::vector<std::vector<IterationMetrics>>(static_cast<std::size_t>(agents_)));
}

Span<float> BatchedTrainer::parameters(int agent) const { return agent_arena_.at(b_.params, agent); }
Span<double> BatchedTrainer::obs_moments(int agent) const { return agent_arena_.at(b_.norm.obs_moments, agent); }
Span<double> BatchedTrainer::reward_moments(int agent) const { return agent_arena_.at(b_.norm.reward_moments, agent); }
Span<float> BatchedTrainer::adam_first_moment(int agent) const { return agent_arena_.at(b_.adam_m, agent); }
Span<float> BatchedTrainer::adam_second_moment(int agent) const { return agent_arena_.at(b_.adam_v, agent); }

OptimizerScalars BatchedTrainer::optimizer_scalars(int agent) const {
  return to_host(shared_arena_[s_.optimizer], stream_)[static_cast<std::size_t>(agent)];
}

TrainState BatchedTrainer::train_state(int agent) const {
  return to_host(shared_arena_[s_.state], stream_)[static_cast<std::size_t>(agent)];
}

}  // namespace surge::rl
