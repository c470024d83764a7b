#include "rl/trainer.hpp"

#include <algorithm>
#include <thread>

#include "rl/categorical.hpp"
#include "rl/device_util.hpp"
#include "rl/gae.hpp"
#include "rl/gaussian.hpp"
#include "rl/gemm.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

NetworkConfig network_config(const TrainConfig& config) {
  NetworkConfig network;
  network.hidden = config.hidden;
  network.activation = parse_activation(config.activation);
  return network;
}

// cpu_threads = 0 chooses: one thread while the rollout is narrower than 4096 environments, where an
// OpenMP fork per small kernel costs more than it saves and a second thread that waits spins, which on a
// busy machine is ruinous (CleanRL's 4 x 128 on MountainCar: 333 s with two threads on a loaded 2-core
// machine, 6.6 s with one); every core from there on.
int cpu_threads_for(const TrainConfig& config) {
  if (config.cpu_threads > 0) return static_cast<int>(config.cpu_threads);
  if (config.num_envs < 4096) return 1;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

const ScenarioSpec& checked_spec(const Engine& engine, const TrainConfig& config) {
  config.validate();
  const ScenarioSpec& spec = engine.spec();
  SURGE_CHECK(engine.num_envs() == config.num_envs, "the engine holds " + std::to_string(engine.num_envs()) +
                                                        " environments, the config asks for " + std::to_string(config.num_envs));
  return spec;
}

NormalizationConfig normalization_config(const TrainConfig& config) {
  NormalizationConfig normalization;
  normalization.observations = config.normalize_obs;
  normalization.obs_clip = config.obs_clip;
  normalization.rewards = config.normalize_reward;
  normalization.reward_clip = config.reward_clip;
  normalization.gamma = config.gamma;
  return normalization;
}

}  // namespace

Trainer::Trainer(Engine& engine, const TrainConfig& config)
    : engine_(engine),
      config_(config),
      device_(engine.device()),
      stream_(engine.device()),
      network_(ActorCritic::for_scenario(checked_spec(engine, config), network_config(config))),
      rollout_(device_, config.num_steps, config.num_envs, engine.spec().obs_dim, network_.action_dim()),
      minibatch_size_(config.minibatch_size()),
      params_(device_, network_.table().total()),
      grads_(device_, network_.table().total()),
      adam_m_(device_, network_.table().total()),
      adam_v_(device_, network_.table().total()),
      optimizer_(device_, 1),
      state_(device_, 1),
      workspace_(device_, network_, std::max(config.num_envs, config.minibatch_size())),
      rollout_logits_(device_, config.num_envs * network_.head_width()),
      env_actions_(device_, config.num_envs * network_.action_dim()),
      action_bounds_(device_, 2 * network_.action_dim()),
      mb_obs_(device_, config.minibatch_size() * engine.spec().obs_dim),
      mb_actions_(device_, network_.continuous() ? 0 : config.minibatch_size()),
      mb_continuous_actions_(device_, config.minibatch_size() * network_.action_dim()),
      mb_fields_(device_, 4 * config.minibatch_size()),
      loss_terms_(device_, config.update_epochs * config.num_minibatches * kLossTermCount),
      running_return_(device_, config.num_envs),
      ended_return_(device_, config.batch_size()),
      chunk_counts_(device_, finished_chunk_count(config.batch_size())),
      group_counts_(device_, finished_group_count(config.batch_size())),
      recent_returns_(device_, kRecentEpisodes),
      small_sums_(device_, 3 + 4),
      reduce_scratch_(device_, reduce_scratch_doubles(device_, 4)),
      metrics_(device_, 1),
      normalization_(device_, normalization_config(config), engine.spec().obs_dim, config.num_steps, config.num_envs),
      graph_(stream_),
      metrics_mirror_(device_, sizeof(IterationMetrics), 2) {
  loss_config_.clip_coef = config.clip_coef;
  loss_config_.ent_coef = config.ent_coef;
  loss_config_.vf_coef = config.vf_coef;
  loss_config_.clip_vloss = config.clip_vloss;
  loss_config_.norm_adv = config.norm_adv;
  adam_config_.eps = config.adam_eps;
  adam_config_.max_grad_norm = config.max_grad_norm;
  if (device_.is_cuda()) set_cuda_gemm_tf32(config.tf32);
  if (device_.is_cpu()) set_cpu_threads(cpu_threads_for(config));

  if (network_.continuous()) {
    std::vector<float> bounds = engine.spec().action_low;
    bounds.insert(bounds.end(), engine.spec().action_high.begin(), engine.spec().action_high.end());
    from_host(action_bounds_.span(), bounds, stream_);
  }
  const std::vector<double> initial = network_.initial_parameters(config.seed);
  from_host(params_.span(), std::vector<float>(initial.begin(), initial.end()), stream_);
  for (const DeviceBuffer<float>* zeroed : {&grads_, &adam_m_, &adam_v_, &running_return_, &ended_return_})
    zero_bytes(zeroed->data(), device_, zeroed->bytes(), stream_);
  zero_bytes(optimizer_.data(), device_, optimizer_.bytes(), stream_);
  zero_bytes(state_.data(), device_, state_.bytes(), stream_);
  zero_bytes(recent_returns_.data(), device_, recent_returns_.bytes(), stream_);
  // The first observation sits in obs[T]: every iteration starts by moving obs[T] to obs[0].
  const std::int64_t n = config.num_envs, d = rollout_.obs_dim();
  engine_.observe({rollout_.obs(config.num_steps), n * d, device_}, stream_);
  normalization_.reset(stream_);
  normalization_.observe(stream_, rollout_.obs(config.num_steps));
  engine_.clear_episode_stats(stream_);
  stream_.synchronize();
}

bool Trainer::uses_graph() const { return device_.is_cuda() && config_.cuda_graph; }

void Trainer::enqueue_iteration(PhaseClock* clock) {
  auto lap = [clock](TrainPhase phase) {
    if (clock) clock->lap(static_cast<int>(phase));
  };
  if (clock) clock->start();
  const std::int64_t steps = config_.num_steps, n = config_.num_envs, b = minibatch_size_;
  const int d = rollout_.obs_dim(), actions = network_.num_actions(), action_dim = network_.action_dim();
  const float* params = params_.data();
  TrainState* state = state_.data();
  OptimizerScalars* optimizer = optimizer_.data();

  begin_iteration(stream_, state, optimizer, config_.learning_rate, config_.anneal_lr, num_iterations());
  copy_bytes(rollout_.obs(0), device_, rollout_.obs(steps), device_, static_cast<std::size_t>(n * d) * sizeof(float), stream_);
  lap(TrainPhase::Other);

  // ---- rollout
  for (std::int64_t t = 0; t < steps; ++t) {
    workspace_.forward_actor(stream_, params, rollout_.obs(t), n, rollout_logits_.data());
    workspace_.forward_critic(stream_, params, rollout_.obs(t), n, rollout_.value(t));
    lap(TrainPhase::PolicyForward);
    const ActionDraw draw{config_.seed, &state->iteration, steps, t};
    if (network_.continuous()) {
      // The rollout keeps the unclipped sample its log-probability belongs to; the engine gets it clipped.
      sample_gaussian_actions(stream_, rollout_logits_.data(), params + network_.log_std_offset(), n, action_dim,
                              action_bounds_.data(), action_bounds_.data() + action_dim, draw, false,
                              rollout_.continuous_actions(t), rollout_.logprob(t), env_actions_.data());
    } else {
      sample_actions(stream_, rollout_logits_.data(), n, actions, draw, false, rollout_.actions(t), rollout_.logprob(t));
    }
    lap(TrainPhase::Sampling);
    const ActionView env_actions = network_.continuous() ? ActionView{{}, env_actions_.cspan()} : rollout_.action_view(t);
    engine_.step(env_actions, rollout_.step_views(t), stream_);
    normalization_.observe(stream_, rollout_.obs(t + 1), rollout_.final_obs(), rollout_.terminated(t), rollout_.truncated(t));
    lap(TrainPhase::EnvStep);
    // V(final observation) of episodes that ended at this step; GAE reads it only where they were truncated.
    workspace_.forward_critic(stream_, params, rollout_.final_obs(), n, rollout_.final_value(t));
    lap(TrainPhase::PolicyForward);
  }
  workspace_.forward_critic(stream_, params, rollout_.obs(steps), n, rollout_.value(steps));
  lap(TrainPhase::PolicyForward);
  // The rollout keeps the environments' rewards (episode returns stay in their units); GAE reads the
  // scaled ones where normalize_reward is on.
  track_episode_returns(stream_, steps, n, rollout_.reward(0), rollout_.terminated(0), rollout_.truncated(0),
                        running_return_.data(), ended_return_.data());
  const float* learner_reward = normalization_.scale(stream_, rollout_.reward(0), rollout_.terminated(0), rollout_.truncated(0));
  lap(TrainPhase::Other);
  compute_gae(stream_, steps, n, static_cast<float>(config_.gamma), static_cast<float>(config_.gae_lambda),
              learner_reward, rollout_.terminated(0), rollout_.truncated(0), rollout_.value(0), rollout_.final_value(0),
              rollout_.advantage(0), rollout_.returns(0));
  lap(TrainPhase::Gae);

  // ---- episode statistics and the rollout's explained variance
  const std::int64_t slots = steps * n;
  count_finished(stream_, slots, rollout_.terminated(0), rollout_.truncated(0), chunk_counts_.data(), group_counts_.data());
  update_recent_returns(stream_, slots, rollout_.terminated(0), rollout_.truncated(0), ended_return_.data(),
                        chunk_counts_.data(), group_counts_.data(), recent_returns_.data(), state);
  double* episode_stats = small_sums_.data();
  double* ev_sums = small_sums_.data() + 3;
  engine_.reduce_episode_stats({episode_stats, 3, device_}, stream_);
  engine_.clear_episode_stats(stream_);
  explained_variance_sums(stream_, slots, rollout_.returns(0), rollout_.value(0), reduce_scratch_.data(), ev_sums);

  // ---- updates
  const Permutation permutation = Permutation::make(slots, config_.seed, 0);
  const BatchView batch{rollout_.obs(0),      rollout_.actions(0),   rollout_.continuous_actions(0), rollout_.logprob(0),
                        rollout_.value(0),    rollout_.advantage(0), rollout_.returns(0),            d,
                        action_dim};
  float* fields = mb_fields_.data();
  const MinibatchBuffers buffers{mb_obs_.data(), mb_actions_.data(), mb_continuous_actions_.data(), fields, fields + b,
                                 fields + 2 * b, fields + 3 * b};
  MinibatchView<float> minibatch;
  minibatch.size = b;
  minibatch.obs = buffers.obs;
  minibatch.actions = buffers.actions;
  minibatch.old_logprob = buffers.logprob;
  minibatch.old_value = buffers.value;
  minibatch.advantage = buffers.advantage;
  minibatch.returns = buffers.returns;
  minibatch.continuous_actions = network_.continuous() ? buffers.continuous_actions : nullptr;
  const std::int64_t epochs = config_.update_epochs, minibatches = config_.num_minibatches;
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    double* terms = nullptr;
    for (std::int64_t m = 0; m < minibatches; ++m) {
      terms = loss_terms_.data() + (epoch * minibatches + m) * kLossTermCount;
      lap(TrainPhase::Other);
      gather_minibatch(stream_, permutation, state, epochs, epoch, m, b, batch, buffers);
      if (clock) {
        workspace_.compute_forward(stream_, minibatch, params);
        lap(TrainPhase::UpdateForward);
        workspace_.compute_backward(stream_, loss_config_, minibatch, params, grads_.data(), terms);
        lap(TrainPhase::UpdateBackward);
      } else {
        workspace_.compute(stream_, loss_config_, minibatch, params, grads_.data(), terms);
      }
      adam_step(stream_, adam_config_, params_.span(), grads_.cspan(), adam_m_.span(), adam_v_.span(), optimizer,
                reduce_scratch_.data());
      lap(TrainPhase::Optimiser);
    }
    end_epoch(stream_, state, optimizer, terms, b, config_.target_kl);
  }

  MetricsInputs inputs;
  inputs.episode_stats = episode_stats;
  inputs.ring = recent_returns_.data();
  inputs.loss_terms = loss_terms_.data();
  inputs.ev_sums = ev_sums;
  inputs.minibatches = minibatches;
  inputs.minibatch_size = b;
  inputs.steps_per_iteration = slots;
  finish_iteration(stream_, inputs, optimizer, state, metrics_.data());
  lap(TrainPhase::Other);
}

void Trainer::iterate(PhaseClock* clock) {
  // Iteration 0 runs eagerly: it sets up cuBLASLt's plans and touches every buffer, which capture
  // must not do; later ones replay the graph captured from the second.
  if (clock) {
    enqueue_iteration(clock);
  } else if (uses_graph() && enqueued_ >= 1) {
    if (!graph_.captured()) graph_.capture([this] { enqueue_iteration(nullptr); });
    graph_.launch();
  } else {
    enqueue_iteration(nullptr);
  }
  // Slot enqueued_ % 2 still holds iteration enqueued_ - 2 if nobody read it: read it before reuse.
  if (collected_ <= enqueued_ - 2) collect(enqueued_ - 2);
  metrics_mirror_.copy_async(static_cast<int>(enqueued_ % 2), metrics_.data(), stream_);
  ++enqueued_;
}

void Trainer::collect(std::int64_t iteration) {
  SURGE_CHECK(iteration == collected_, "metrics collected out of order");
  pending_.push_back(*static_cast<const IterationMetrics*>(metrics_mirror_.wait(static_cast<int>(iteration % 2))));
  ++collected_;
}

std::vector<IterationMetrics> Trainer::ready_metrics() {
  const std::int64_t ready = device_.is_cpu() ? enqueued_ : enqueued_ - 1;
  while (collected_ < ready) collect(collected_);
  return std::exchange(pending_, {});
}

std::vector<IterationMetrics> Trainer::drain() {
  while (collected_ < enqueued_) collect(collected_);
  return std::exchange(pending_, {});
}

OptimizerScalars Trainer::optimizer_scalars() const { return to_host(optimizer_.cspan(), stream_)[0]; }
TrainState Trainer::train_state() const { return to_host(state_.cspan(), stream_)[0]; }

void Trainer::restore(const std::vector<float>& params, const std::vector<float>& adam_m, const std::vector<float>& adam_v,
                      const OptimizerScalars& optimizer, const TrainState& state) {
  from_host(params_.span(), params, stream_);
  from_host(adam_m_.span(), adam_m, stream_);
  from_host(adam_v_.span(), adam_v, stream_);
  from_host(optimizer_.span(), std::vector<OptimizerScalars>{optimizer}, stream_);
  from_host(state_.span(), std::vector<TrainState>{state}, stream_);
}

void Trainer::observe_engine() {
  // The next iteration moves obs[T] to obs[0].
  const std::int64_t n = config_.num_envs, d = rollout_.obs_dim();
  engine_.observe({rollout_.obs(config_.num_steps), n * d, device_}, stream_);
  normalization_.normalize(stream_, rollout_.obs(config_.num_steps));
}

void Trainer::restore_normalization(const std::vector<double>& obs, const std::vector<double>& reward,
                                    const std::vector<float>& accumulator) {
  auto upload = [this](auto view, const auto& host, const char* what) {
    if (static_cast<std::int64_t>(host.size()) != view.size)
      throw InputError(std::string("the checkpoint's ") + what + " holds " + std::to_string(host.size()) +
                       " values where this run has " + std::to_string(view.size) + "; resume with the checkpoint's own config");
    if (view.size > 0) from_host(view, host, stream_);
  };
  upload(obs_moments(), obs, "observation statistics");
  upload(reward_moments(), reward, "reward statistics");
  upload(reward_accumulator(), accumulator, "discounted-return accumulators");
}

std::vector<TrainerBuffer> Trainer::memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device) {
  std::vector<TrainerBuffer> plan;
  const ActorCritic network = ActorCritic::for_scenario(spec, network_config(config));
  const std::int64_t t = config.num_steps, n = config.num_envs, d = spec.obs_dim, a = network.head_width();
  const std::int64_t action_dim = network.action_dim();
  const std::int64_t b = config.minibatch_size(), slots = config.batch_size();
  for (const auto& buffer : RolloutStorage::layout(t, n, static_cast<int>(d), network.action_dim()))
    plan.push_back({buffer.name, buffer.shape, buffer.elements, buffer.element_bytes});
  const std::int64_t p = network.table().total();
  for (const char* name : {"learner.params", "learner.grads", "learner.adam_m", "learner.adam_v"})
    plan.push_back({name, "[P]", p, sizeof(float)});
  plan.push_back({"learner.optimizer_scalars", "[1]", 1, sizeof(OptimizerScalars)});
  plan.push_back({"learner.train_state", "[1]", 1, sizeof(TrainState)});
  for (const TrainerBuffer& buffer : PpoGradient<float>::layout(device, network, std::max(n, b))) plan.push_back(buffer);
  if (network.continuous()) {
    plan.push_back({"learner.rollout_means", "[N][action_dim]", n * a, sizeof(float)});
    plan.push_back({"learner.env_actions", "[N][action_dim]", n * action_dim, sizeof(float)});
    plan.push_back({"learner.action_bounds", "[2][action_dim]", 2 * action_dim, sizeof(float)});
  } else {
    plan.push_back({"learner.rollout_logits", "[N][num_actions]", n * a, sizeof(float)});
  }
  plan.push_back({"minibatch.obs", "[B][obs_dim]", b * d, sizeof(float)});
  if (network.continuous())
    plan.push_back({"minibatch.actions", "[B][action_dim]", b * action_dim, sizeof(float)});
  else
    plan.push_back({"minibatch.actions", "[B]", b, sizeof(std::int32_t)});
  plan.push_back({"minibatch.fields", "[4][B]", 4 * b, sizeof(float)});
  plan.push_back({"metrics.loss_terms", "[E*M][5]", config.update_epochs * config.num_minibatches * kLossTermCount,
                  sizeof(double)});
  plan.push_back({"metrics.running_return", "[N]", n, sizeof(float)});
  plan.push_back({"metrics.ended_return", "[T][N]", slots, sizeof(float)});
  plan.push_back({"metrics.chunk_counts", "[T*N/256]", finished_chunk_count(slots), sizeof(std::int32_t)});
  plan.push_back({"metrics.group_counts", "[T*N/65536]", finished_group_count(slots), sizeof(std::int32_t)});
  plan.push_back({"metrics.recent_returns", "[100]", kRecentEpisodes, sizeof(double)});
  plan.push_back({"metrics.sums", "[7]", 7, sizeof(double)});
  plan.push_back({"metrics.reduce_scratch", "[scratch]", reduce_scratch_doubles(device, 4), sizeof(double)});
  plan.push_back({"metrics.iteration", "[1]", 1, sizeof(IterationMetrics)});
  for (const TrainerBuffer& buffer :
       Normalization::memory_plan(device, normalization_config(config), static_cast<int>(d), t, n))
    plan.push_back(buffer);
  return plan;
}

std::size_t Trainer::device_bytes() const {
  return rollout_.device_bytes() + params_.bytes() + grads_.bytes() + adam_m_.bytes() + adam_v_.bytes() +
         optimizer_.bytes() + state_.bytes() + workspace_.device_bytes() + rollout_logits_.bytes() + env_actions_.bytes() +
         action_bounds_.bytes() + mb_obs_.bytes() + mb_actions_.bytes() + mb_continuous_actions_.bytes() + mb_fields_.bytes() +
         loss_terms_.bytes() + running_return_.bytes() + ended_return_.bytes() +
         chunk_counts_.bytes() + group_counts_.bytes() + recent_returns_.bytes() + small_sums_.bytes() +
         reduce_scratch_.bytes() + metrics_.bytes() + normalization_.device_bytes();
}

}  // namespace surge::rl
