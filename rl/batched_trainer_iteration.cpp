// The batched learner's iteration (rl/batched_trainer.hpp): Trainer's phases in Trainer's order, each one
// launcher call for all K agents, agent k's buffers at agent 0's plus k times the arena's distance.
#include "rl/batched_kernels.hpp"
#include "rl/batched_loss.hpp"
#include "rl/batched_trainer.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "rl/normalization.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/trainer_kernels.hpp"

namespace surge::rl {

void BatchedTrainer::enqueue_iteration() {
  if (cpu_agent_threads_ > 1) {
    enqueue_iteration_per_agent();
    return;
  }
  const Agents all{0, agents_};
  rollout(all);
  finish_rollout(all, true);
  learn(all);
  finish_iteration(all);
}

void BatchedTrainer::rollout(Agents a) {
  start_iteration(a);
  for (std::int64_t t = 0; t < num_steps_; ++t) {
    act(t, a);
    step_environments(t, a);
    observe_normalized((t + 1) * num_envs_, t, a);
    if (needs_final_values(t, a)) value_final_observations(t, a);
  }
}

void BatchedTrainer::start_iteration(Agents a) {
  begin_iteration_batched(stream_, a.count, per_agent(s_.hyper, a), per_agent(s_.state, a), per_agent(s_.optimizer, a),
                          num_iterations_);
  const std::int64_t row = num_envs_ * obs_dim_;
  copy_batched(stream_, a.count, {base(b_.obs, a) + num_steps_ * row, stride(b_.obs)}, each(b_.obs, a), row);
}

// The agents' network `mlp` on `rows` rows of each one's copy of `input` from row `input_row`, into its copy of
// `output` from element `output_offset`: one batched GEMM per layer for the agents.
void BatchedTrainer::forward(const Mlp& mlp, Slot<float> activations, Slot<float> input, std::int64_t input_row,
                             std::int64_t rows, Slot<float> output, std::int64_t output_offset, Agents a) {
  MlpAgentStrides strides;
  strides.params = stride(b_.params);
  strides.input = stride(input);
  strides.activations = stride(activations);
  strides.output = stride(output);
  mlp_forward_batched<float>(stream_, mlp, a.count, strides, base(b_.params, a), base(input, a) + input_row * obs_dim_,
                             rows, base(activations, a), base(output, a) + output_offset);
}

void BatchedTrainer::act(std::int64_t t, Agents a) {
  const std::int64_t row = t * num_envs_;
  forward(network_.actor(), b_.actor_activations, b_.obs, row, num_envs_, b_.rollout_logits, 0, a);
  forward(network_.critic(), b_.critic_activations, b_.obs, row, num_envs_, b_.value, row, a);
  sample_actions(t, a);
}

void BatchedTrainer::sample_actions(std::int64_t t, Agents a) {
  BatchedActionDraw draw;
  draw.seeds = per_agent(s_.seeds, a);
  draw.draw_counter = {&per_agent(s_.state, a)->iteration, sizeof(TrainState) / sizeof(std::int64_t)};
  draw.draws_per_count = num_steps_;
  draw.draw = t;
  draw.first_env = 0;
  const std::int64_t row = t * num_envs_;
  const PerAgent<const float> head = each(b_.rollout_logits, a);
  if (network_.continuous()) {
    // The rollout keeps the unclipped sample its log-probability belongs to; the engine gets it clipped.
    const int dims = network_.action_dim();
    const float* bounds = shared(s_.action_bounds);
    sample_gaussian_actions_batched(stream_, a.count, head,
                                    {base(b_.params, a) + network_.log_std_offset(), stride(b_.params)}, num_envs_,
                                    dims, bounds, bounds + dims, draw, false,
                                    {base(b_.continuous_actions, a) + row * dims, stride(b_.continuous_actions)},
                                    {base(b_.logprob, a) + row, stride(b_.logprob)}, each(b_.env_actions, a));
  } else {
    sample_actions_batched(stream_, a.count, head, num_envs_, network_.num_actions(), draw, false,
                           {base(b_.actions, a) + row, stride(b_.actions)},
                           {base(b_.logprob, a) + row, stride(b_.logprob)});
  }
}

void BatchedTrainer::step_environments(std::int64_t t, Agents a) {
  const std::int64_t n = num_envs_, d = obs_dim_;
  const auto distance = static_cast<std::int64_t>(agent_arena_.replica_stride_bytes());
  ActionView actions;
  if (network_.continuous())
    actions.continuous = {base(b_.env_actions), n * network_.action_dim(), device_};
  else
    actions.discrete = {base(b_.actions) + t * n, n, device_};
  actions.agent_stride_bytes = distance;
  StepViews out;
  out.obs = {base(b_.obs) + (t + 1) * n * d, n * d, device_};
  out.reward = {base(b_.reward) + t * n, n, device_};
  out.terminated = {base(b_.terminated) + t * n, n, device_};
  out.truncated = {base(b_.truncated) + t * n, n, device_};
  out.final_obs = {base(b_.final_obs), n * d, device_};
  out.agent_stride_bytes = distance;
  engine_.step_agents(a.first, a.count, actions, out, stream_);  // step() for all of them
}

bool BatchedTrainer::needs_final_values(std::int64_t t, Agents a) const {
  // GAE reads V(final observation) only where an episode was truncated. On the CPU, where the flags can be
  // read without a wait, a step with no truncation in any of the agents skips it.
  if (!device_.is_cpu()) return true;
  for (int k = a.first; k < a.first + a.count; ++k) {
    const std::uint8_t* truncated = base(b_.truncated) + k * stride(b_.truncated) + t * num_envs_;
    for (std::int64_t i = 0; i < num_envs_; ++i)
      if (truncated[i] != 0) return true;
  }
  return false;
}

void BatchedTrainer::value_final_observations(std::int64_t t, Agents a) {
  // V(final observation) of episodes that ended at this step.
  forward(network_.critic(), b_.critic_activations, b_.final_obs, 0, num_envs_, b_.final_value, t * num_envs_, a);
}

void BatchedTrainer::finish_rollout(Agents a, bool engine_statistics) {
  // V(obs[T]) bootstraps the unfinished tails.
  const std::int64_t last = num_steps_ * num_envs_;
  forward(network_.critic(), b_.critic_activations, b_.obs, last, num_envs_, b_.value, last, a);
  track_episode_returns_batched(stream_, a.count, num_steps_, num_envs_, each(b_.reward, a), each(b_.terminated, a),
                                each(b_.truncated, a), each(b_.episodes.running_return, a),
                                each(b_.episodes.ended_return, a));
  // The rollout keeps the environments' rewards (episode returns stay in their units); GAE reads the scaled
  // ones where normalize_reward is on.
  if (config_.normalize_reward)
    scale_rewards_batched(stream_, a.count, num_steps_, num_envs_, per_agent(s_.hyper, a), each(b_.reward, a),
                          each(b_.terminated, a), each(b_.truncated, a), each(b_.norm.reward_accumulator, a),
                          each(b_.norm.scaled_reward, a), each(b_.norm.reward_moments, a),
                          each(b_.norm.reward_step_sums, a), shared(s_.scratch));
  GaeBatch batch;
  const Slot<float> reward = config_.normalize_reward ? b_.norm.scaled_reward : b_.reward;
  batch.reward = {base(reward, a), stride(reward)};
  batch.terminated = each(b_.terminated, a);
  batch.truncated = each(b_.truncated, a);
  batch.value = each(b_.value, a);
  batch.final_value = each(b_.final_value, a);
  batch.advantage = each(b_.advantage, a);
  batch.returns = each(b_.returns, a);
  compute_gae_batched(stream_, a.count, num_steps_, num_envs_, per_agent(s_.hyper, a), batch);
  episode_statistics(a, engine_statistics);
}

void BatchedTrainer::episode_statistics(Agents a, bool engine_statistics) {
  const std::int64_t slots = num_steps_ * num_envs_;
  const PerAgent<const std::uint8_t> terminated = each(b_.terminated, a);
  const PerAgent<const std::uint8_t> truncated = each(b_.truncated, a);
  const PerAgent<std::int32_t> chunks = each(b_.episodes.chunk_counts, a);
  const PerAgent<std::int32_t> groups = each(b_.episodes.group_counts, a);
  const PerAgent<double> candidates = each(b_.episodes.recent_candidates, a);
  count_finished_batched(stream_, a.count, slots, terminated, truncated, chunks, groups);
  fill_batched(stream_, a.count, candidates, kRecentCandidateWidth, 0.0);
  newest_finished_batched(stream_, a.count, num_steps_, num_envs_, terminated, truncated,
                          each(b_.episodes.ended_return, a), {chunks.data, chunks.stride}, {groups.data, groups.stride},
                          candidates);
  if (engine_statistics) {
    engine_.reduce_episode_stats(shared_arena_[s_.episode_stats], stream_);
    engine_.clear_episode_stats(stream_);
  }
  explained_variance_sums_batched(stream_, a.count, slots, each(b_.returns, a), each(b_.value, a), shared(s_.scratch),
                                  shared(s_.ev_sums) + 4 * a.first);
  push_recent_returns_batched(stream_, a.count, {candidates.data, candidates.stride},
                              each(b_.episodes.recent_returns, a), per_agent(s_.state, a));
}

void BatchedTrainer::gather_minibatch(std::int64_t epoch, std::int64_t m, Agents a) {
  const std::int64_t b = minibatch_size_;
  const auto field = [&](int i) {
    return PerAgent<float>{base(b_.minibatch.fields, a) + i * b, stride(b_.minibatch.fields)};
  };
  const GatherBatch batch{each(b_.obs, a),     each(b_.actions, a),        each(b_.continuous_actions, a),
                          each(b_.logprob, a), each(b_.value, a),          each(b_.advantage, a),
                          each(b_.returns, a), static_cast<int>(obs_dim_), network_.action_dim()};
  const MinibatchBatch out{each(b_.minibatch.obs, a),
                           each(b_.minibatch.actions, a),
                           each(b_.minibatch.continuous_actions, a),
                           field(0),
                           field(1),
                           field(2),
                           field(3)};
  gather_minibatch_batched(stream_, a.count, per_agent(s_.seeds, a), num_steps_ * num_envs_, per_agent(s_.state, a),
                           config_.update_epochs, epoch, m, b, batch, out);
}

void BatchedTrainer::learn(Agents a) {
  for (std::int64_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
    for (std::int64_t m = 0; m < config_.num_minibatches; ++m) update(epoch, m, a);
    end_epoch(epoch, a);
  }
}

void BatchedTrainer::update(std::int64_t epoch, std::int64_t m, Agents a) {
  const std::int64_t b = minibatch_size_;
  gather_minibatch(epoch, m, a);
  forward(network_.actor(), b_.actor_activations, b_.minibatch.obs, 0, b, b_.logits, 0, a);
  forward(network_.critic(), b_.critic_activations, b_.minibatch.obs, 0, b, b_.values, 0, a);
  loss(epoch, m, a);
  MlpAgentStrides strides;
  strides.params = stride(b_.params);
  strides.grads = stride(b_.grads);
  strides.input = stride(b_.minibatch.obs);
  strides.scratch = stride(b_.mlp_scratch);
  strides.activations = stride(b_.actor_activations);
  strides.d_output = stride(b_.d_logits);
  mlp_backward_batched<float>(stream_, network_.actor(), a.count, strides, base(b_.params, a),
                              base(b_.minibatch.obs, a), b, base(b_.actor_activations, a), base(b_.d_logits, a),
                              shared(s_.ones), base(b_.grads, a), base(b_.mlp_scratch, a));
  strides.activations = stride(b_.critic_activations);
  strides.d_output = stride(b_.d_values);
  mlp_backward_batched<float>(stream_, network_.critic(), a.count, strides, base(b_.params, a),
                              base(b_.minibatch.obs, a), b, base(b_.critic_activations, a), base(b_.d_values, a),
                              shared(s_.ones), base(b_.grads, a), base(b_.mlp_scratch, a));
  AdamBatch adam;
  adam.params = each(b_.params, a);
  adam.grads = each(b_.grads, a);
  adam.m = each(b_.adam_m, a);
  adam.v = each(b_.adam_v, a);
  adam_step_batched(stream_, config_, a.count, per_agent(s_.hyper, a), adam, network_.table().total(),
                    per_agent(s_.optimizer, a), shared(s_.scratch));
}

void BatchedTrainer::loss(std::int64_t epoch, std::int64_t m, Agents a) {
  const std::int64_t b = minibatch_size_, fields = stride(b_.minibatch.fields);
  LossBatch minibatch;
  minibatch.size = b;
  minibatch.actions = each(b_.minibatch.actions, a);
  minibatch.continuous_actions = each(b_.minibatch.continuous_actions, a);
  minibatch.old_logprob = {base(b_.minibatch.fields, a), fields};
  minibatch.old_value = {base(b_.minibatch.fields, a) + b, fields};
  minibatch.advantage = {base(b_.minibatch.fields, a) + 2 * b, fields};
  minibatch.returns = {base(b_.minibatch.fields, a) + 3 * b, fields};
  const PerAgent<double> terms{
      base(b_.minibatch.loss_terms, a) + (epoch * config_.num_minibatches + m) * kLossTermCount,
      stride(b_.minibatch.loss_terms)};
  const PerAgent<const float> head = each(b_.logits, a), values = each(b_.values, a);
  const PerAgent<double> advantage_stats = each(b_.advantage_stats, a);
  if (!network_.continuous()) {
    ppo_loss_batched(stream_, a.count, per_agent(s_.hyper, a), minibatch, network_.num_actions(), head, values,
                     advantage_stats, shared(s_.scratch), each(b_.d_logits, a), each(b_.d_values, a), terms);
    return;
  }
  const int dims = network_.action_dim();
  const std::int64_t log_std = network_.log_std_offset();
  gaussian_ppo_loss_batched(stream_, a.count, per_agent(s_.hyper, a), minibatch, dims, head,
                            {base(b_.params, a) + log_std, stride(b_.params)}, values, advantage_stats,
                            shared(s_.scratch), each(b_.d_logits, a), each(b_.d_log_std_rows, a), each(b_.d_values, a),
                            terms);
  // d log_std [1][dims] = ones [1][B] x rows [B][dims] for each agent: a fixed-order sum, as a Trainer's.
  gemm_strided_batched<float>(stream_, Transpose::No, Transpose::No, 1, dims, b, 1.0f, shared(s_.ones), b, 0,
                              base(b_.d_log_std_rows, a), dims, stride(b_.d_log_std_rows), 0.0f,
                              base(b_.grads, a) + log_std, dims, stride(b_.grads), a.count);
}

// ---- normalisation (rl/normalization.hpp's Normalization, for K agents)

void BatchedTrainer::start_normalization() {
  // Once, when the trainer is made: a launch per agent.
  for (int k = 0; k < agents_; ++k) {
    if (config_.normalize_obs)
      reset_moments(stream_, static_cast<int>(obs_dim_), agent_arena_.data(b_.norm.obs_moments, k));
    if (config_.normalize_reward) reset_moments(stream_, 1, agent_arena_.data(b_.norm.reward_moments, k));
  }
}

void BatchedTrainer::observe_normalized(std::int64_t row, std::int64_t flags_row, Agents a) {
  if (!config_.normalize_obs) return;
  const int dims = static_cast<int>(obs_dim_);
  const PerAgent<float> obs{base(b_.obs, a) + row * obs_dim_, stride(b_.obs)};
  const PerAgent<double> moments = each(b_.norm.obs_moments, a);
  const AgentHyper* hyper = per_agent(s_.hyper, a);
  update_moments_batched(stream_, a.count, {obs.data, obs.stride}, num_envs_, dims, moments,
                         each(b_.norm.obs_batch_sums, a), shared(s_.scratch));
  normalize_rows_batched(stream_, a.count, obs, num_envs_, dims, {moments.data, moments.stride}, hyper);
  if (flags_row < 0) return;
  const std::int64_t flags = flags_row * num_envs_;
  normalize_rows_batched(stream_, a.count, each(b_.final_obs, a), num_envs_, dims, {moments.data, moments.stride},
                         hyper, {base(b_.terminated, a) + flags, stride(b_.terminated)},
                         {base(b_.truncated, a) + flags, stride(b_.truncated)});
}

void BatchedTrainer::normalize_observations(std::int64_t row) {
  if (!config_.normalize_obs) return;
  normalize_rows_batched(stream_, agents_, {base(b_.obs) + row * obs_dim_, stride(b_.obs)}, num_envs_,
                         static_cast<int>(obs_dim_), each(b_.norm.obs_moments), shared(s_.hyper));
}

void BatchedTrainer::end_epoch(std::int64_t epoch, Agents a) {
  const std::int64_t last = (epoch * config_.num_minibatches + config_.num_minibatches - 1) * kLossTermCount;
  end_epoch_batched(stream_, a.count, per_agent(s_.hyper, a), per_agent(s_.state, a), per_agent(s_.optimizer, a),
                    {base(b_.minibatch.loss_terms, a) + last, stride(b_.minibatch.loss_terms)}, minibatch_size_);
}

void BatchedTrainer::finish_iteration(Agents a) {
  MetricsBatch inputs;
  inputs.episode_stats = {shared(s_.episode_stats) + kEpisodeStatsWidth * a.first, kEpisodeStatsWidth};
  inputs.ring = each(b_.episodes.recent_returns, a);
  inputs.loss_terms = each(b_.minibatch.loss_terms, a);
  inputs.ev_sums = {shared(s_.ev_sums) + 4 * a.first, 4};
  inputs.minibatches = config_.num_minibatches;
  inputs.minibatch_size = minibatch_size_;
  inputs.steps_per_iteration = num_steps_ * num_envs_;
  finish_iteration_batched(stream_, a.count, inputs, per_agent(s_.optimizer, a), per_agent(s_.state, a),
                           per_agent(s_.metrics, a));
}

}  // namespace surge::rl
