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
  start_iteration();
  for (std::int64_t t = 0; t < num_steps_; ++t) rollout_step(t);
  finish_rollout();
  for (std::int64_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
    for (std::int64_t m = 0; m < config_.num_minibatches; ++m) update(epoch, m);
    end_epoch(epoch);
  }
  finish_iteration();
}

void BatchedTrainer::start_iteration() {
  begin_iteration_batched(stream_, agents_, shared(s_.hyper), shared(s_.state), shared(s_.optimizer), num_iterations_);
  const std::int64_t row = num_envs_ * obs_dim_;
  copy_batched(stream_, agents_, {base(b_.obs) + num_steps_ * row, stride(b_.obs)}, each(b_.obs), row);
}

// Every agent's network `mlp` on `rows` rows of its copy of `input` from row `input_row`, into its copy of
// `output` from element `output_offset`: one batched GEMM per layer for all agents.
void BatchedTrainer::forward(const Mlp& mlp, Slot<float> activations, Slot<float> input, std::int64_t input_row,
                             std::int64_t rows, Slot<float> output, std::int64_t output_offset) {
  MlpAgentStrides strides;
  strides.params = stride(b_.params);
  strides.input = stride(input);
  strides.activations = stride(activations);
  strides.output = stride(output);
  mlp_forward_batched<float>(stream_, mlp, agents_, strides, base(b_.params), base(input) + input_row * obs_dim_, rows,
                             base(activations), base(output) + output_offset);
}

void BatchedTrainer::rollout_step(std::int64_t t) {
  const std::int64_t row = t * num_envs_;
  forward(network_.actor(), b_.actor_activations, b_.obs, row, num_envs_, b_.rollout_logits, 0);
  forward(network_.critic(), b_.critic_activations, b_.obs, row, num_envs_, b_.value, row);
  sample_actions(t);
  step_environments(t);
  value_final_observations(t);
}

void BatchedTrainer::sample_actions(std::int64_t t) {
  BatchedActionDraw draw;
  draw.seeds = shared(s_.seeds);
  draw.draw_counter = {&shared(s_.state)->iteration, sizeof(TrainState) / sizeof(std::int64_t)};
  draw.draws_per_count = num_steps_;
  draw.draw = t;
  draw.first_env = 0;
  const std::int64_t row = t * num_envs_;
  const PerAgent<const float> head = each(b_.rollout_logits);
  if (network_.continuous()) {
    // The rollout keeps the unclipped sample its log-probability belongs to; the engine gets it clipped.
    const int dims = network_.action_dim();
    const float* bounds = shared(s_.action_bounds);
    sample_gaussian_actions_batched(
        stream_, agents_, head, {base(b_.params) + network_.log_std_offset(), stride(b_.params)}, num_envs_, dims,
        bounds, bounds + dims, draw, false, {base(b_.continuous_actions) + row * dims, stride(b_.continuous_actions)},
        {base(b_.logprob) + row, stride(b_.logprob)}, each(b_.env_actions));
  } else {
    sample_actions_batched(stream_, agents_, head, num_envs_, network_.num_actions(), draw, false,
                           {base(b_.actions) + row, stride(b_.actions)}, {base(b_.logprob) + row, stride(b_.logprob)});
  }
}

void BatchedTrainer::step_environments(std::int64_t t) {
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
  engine_.step(actions, out, stream_);
  observe_normalized((t + 1) * n, t);
}

void BatchedTrainer::value_final_observations(std::int64_t t) {
  // V(final observation) of episodes that ended at this step; GAE reads it only where they were truncated.
  // On the CPU, where the flags can be read without a wait, a step with no truncation in any agent skips it.
  if (device_.is_cpu()) {
    bool any = false;
    for (int k = 0; k < agents_ && !any; ++k) {
      const std::uint8_t* truncated = base(b_.truncated) + k * stride(b_.truncated) + t * num_envs_;
      for (std::int64_t i = 0; i < num_envs_ && !any; ++i) any = truncated[i] != 0;
    }
    if (!any) return;
  }
  forward(network_.critic(), b_.critic_activations, b_.final_obs, 0, num_envs_, b_.final_value, t * num_envs_);
}

void BatchedTrainer::finish_rollout() {
  // V(obs[T]) bootstraps the unfinished tails.
  const std::int64_t last = num_steps_ * num_envs_;
  forward(network_.critic(), b_.critic_activations, b_.obs, last, num_envs_, b_.value, last);
  track_episode_returns_batched(stream_, agents_, num_steps_, num_envs_, each(b_.reward), each(b_.terminated),
                                each(b_.truncated), each(b_.episodes.running_return), each(b_.episodes.ended_return));
  // The rollout keeps the environments' rewards (episode returns stay in their units); GAE reads the scaled
  // ones where normalize_reward is on.
  if (config_.normalize_reward)
    scale_rewards_batched(stream_, agents_, num_steps_, num_envs_, shared(s_.hyper), each(b_.reward),
                          each(b_.terminated), each(b_.truncated), each(b_.norm.reward_accumulator),
                          each(b_.norm.scaled_reward), each(b_.norm.reward_moments), each(b_.norm.reward_step_sums),
                          shared(s_.scratch));
  GaeBatch batch;
  const Slot<float> reward = config_.normalize_reward ? b_.norm.scaled_reward : b_.reward;
  batch.reward = {base(reward), stride(reward)};
  batch.terminated = each(b_.terminated);
  batch.truncated = each(b_.truncated);
  batch.value = each(b_.value);
  batch.final_value = each(b_.final_value);
  batch.advantage = each(b_.advantage);
  batch.returns = each(b_.returns);
  compute_gae_batched(stream_, agents_, num_steps_, num_envs_, shared(s_.hyper), batch);
  episode_statistics();
}

void BatchedTrainer::episode_statistics() {
  const std::int64_t slots = num_steps_ * num_envs_;
  const PerAgent<const std::uint8_t> terminated = each(b_.terminated);
  const PerAgent<const std::uint8_t> truncated = each(b_.truncated);
  const PerAgent<std::int32_t> chunks = each(b_.episodes.chunk_counts);
  const PerAgent<std::int32_t> groups = each(b_.episodes.group_counts);
  const PerAgent<double> candidates = each(b_.episodes.recent_candidates);
  count_finished_batched(stream_, agents_, slots, terminated, truncated, chunks, groups);
  fill_batched(stream_, agents_, candidates, kRecentCandidateWidth, 0.0);
  newest_finished_batched(stream_, agents_, num_steps_, num_envs_, terminated, truncated,
                          each(b_.episodes.ended_return), {chunks.data, chunks.stride}, {groups.data, groups.stride},
                          candidates);
  engine_.reduce_episode_stats(shared_arena_[s_.episode_stats], stream_);
  engine_.clear_episode_stats(stream_);
  explained_variance_sums_batched(stream_, agents_, slots, each(b_.returns), each(b_.value), shared(s_.scratch),
                                  shared(s_.ev_sums));
  push_recent_returns_batched(stream_, agents_, {candidates.data, candidates.stride}, each(b_.episodes.recent_returns),
                              shared(s_.state));
}

void BatchedTrainer::gather_minibatch(std::int64_t epoch, std::int64_t m) {
  const std::int64_t b = minibatch_size_;
  const auto field = [&](int i) {
    return PerAgent<float>{base(b_.minibatch.fields) + i * b, stride(b_.minibatch.fields)};
  };
  const GatherBatch batch{
      each(b_.obs),       each(b_.actions), each(b_.continuous_actions), each(b_.logprob),     each(b_.value),
      each(b_.advantage), each(b_.returns), static_cast<int>(obs_dim_),  network_.action_dim()};
  const MinibatchBatch out{each(b_.minibatch.obs),
                           each(b_.minibatch.actions),
                           each(b_.minibatch.continuous_actions),
                           field(0),
                           field(1),
                           field(2),
                           field(3)};
  gather_minibatch_batched(stream_, agents_, shared(s_.seeds), num_steps_ * num_envs_, shared(s_.state),
                           config_.update_epochs, epoch, m, b, batch, out);
}

void BatchedTrainer::update(std::int64_t epoch, std::int64_t m) {
  const std::int64_t b = minibatch_size_;
  gather_minibatch(epoch, m);
  forward(network_.actor(), b_.actor_activations, b_.minibatch.obs, 0, b, b_.logits, 0);
  forward(network_.critic(), b_.critic_activations, b_.minibatch.obs, 0, b, b_.values, 0);
  loss(epoch, m);
  MlpAgentStrides strides;
  strides.params = stride(b_.params);
  strides.grads = stride(b_.grads);
  strides.input = stride(b_.minibatch.obs);
  strides.scratch = stride(b_.mlp_scratch);
  strides.activations = stride(b_.actor_activations);
  strides.d_output = stride(b_.d_logits);
  mlp_backward_batched<float>(stream_, network_.actor(), agents_, strides, base(b_.params), base(b_.minibatch.obs), b,
                              base(b_.actor_activations), base(b_.d_logits), shared(s_.ones), base(b_.grads),
                              base(b_.mlp_scratch));
  strides.activations = stride(b_.critic_activations);
  strides.d_output = stride(b_.d_values);
  mlp_backward_batched<float>(stream_, network_.critic(), agents_, strides, base(b_.params), base(b_.minibatch.obs), b,
                              base(b_.critic_activations), base(b_.d_values), shared(s_.ones), base(b_.grads),
                              base(b_.mlp_scratch));
  AdamBatch adam;
  adam.params = each(b_.params);
  adam.grads = each(b_.grads);
  adam.m = each(b_.adam_m);
  adam.v = each(b_.adam_v);
  adam_step_batched(stream_, config_, agents_, shared(s_.hyper), adam, network_.table().total(), shared(s_.optimizer),
                    shared(s_.scratch));
}

void BatchedTrainer::loss(std::int64_t epoch, std::int64_t m) {
  const std::int64_t b = minibatch_size_, fields = stride(b_.minibatch.fields);
  LossBatch minibatch;
  minibatch.size = b;
  minibatch.actions = each(b_.minibatch.actions);
  minibatch.continuous_actions = each(b_.minibatch.continuous_actions);
  minibatch.old_logprob = {base(b_.minibatch.fields), fields};
  minibatch.old_value = {base(b_.minibatch.fields) + b, fields};
  minibatch.advantage = {base(b_.minibatch.fields) + 2 * b, fields};
  minibatch.returns = {base(b_.minibatch.fields) + 3 * b, fields};
  const PerAgent<double> terms{base(b_.minibatch.loss_terms) + (epoch * config_.num_minibatches + m) * kLossTermCount,
                               stride(b_.minibatch.loss_terms)};
  const PerAgent<const float> head = each(b_.logits), values = each(b_.values);
  const PerAgent<double> advantage_stats = each(b_.advantage_stats);
  if (!network_.continuous()) {
    ppo_loss_batched(stream_, agents_, shared(s_.hyper), minibatch, network_.num_actions(), head, values,
                     advantage_stats, shared(s_.scratch), each(b_.d_logits), each(b_.d_values), terms);
    return;
  }
  const int dims = network_.action_dim();
  const std::int64_t log_std = network_.log_std_offset();
  gaussian_ppo_loss_batched(stream_, agents_, shared(s_.hyper), minibatch, dims, head,
                            {base(b_.params) + log_std, stride(b_.params)}, values, advantage_stats, shared(s_.scratch),
                            each(b_.d_logits), each(b_.d_log_std_rows), each(b_.d_values), terms);
  // d log_std [1][dims] = ones [1][B] x rows [B][dims] for each agent: a fixed-order sum, as a Trainer's.
  gemm_strided_batched<float>(stream_, Transpose::No, Transpose::No, 1, dims, b, 1.0f, shared(s_.ones), b, 0,
                              base(b_.d_log_std_rows), dims, stride(b_.d_log_std_rows), 0.0f, base(b_.grads) + log_std,
                              dims, stride(b_.grads), agents_);
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

void BatchedTrainer::observe_normalized(std::int64_t row, std::int64_t flags_row) {
  if (!config_.normalize_obs) return;
  const int dims = static_cast<int>(obs_dim_);
  const PerAgent<float> obs{base(b_.obs) + row * obs_dim_, stride(b_.obs)};
  const PerAgent<double> moments = each(b_.norm.obs_moments);
  update_moments_batched(stream_, agents_, {obs.data, obs.stride}, num_envs_, dims, moments,
                         each(b_.norm.obs_batch_sums), shared(s_.scratch));
  normalize_rows_batched(stream_, agents_, obs, num_envs_, dims, {moments.data, moments.stride}, shared(s_.hyper));
  if (flags_row < 0) return;
  const std::int64_t flags = flags_row * num_envs_;
  normalize_rows_batched(stream_, agents_, each(b_.final_obs), num_envs_, dims, {moments.data, moments.stride},
                         shared(s_.hyper), {base(b_.terminated) + flags, stride(b_.terminated)},
                         {base(b_.truncated) + flags, stride(b_.truncated)});
}

void BatchedTrainer::normalize_observations(std::int64_t row) {
  if (!config_.normalize_obs) return;
  normalize_rows_batched(stream_, agents_, {base(b_.obs) + row * obs_dim_, stride(b_.obs)}, num_envs_,
                         static_cast<int>(obs_dim_), each(b_.norm.obs_moments), shared(s_.hyper));
}

void BatchedTrainer::end_epoch(std::int64_t epoch) {
  const std::int64_t last = (epoch * config_.num_minibatches + config_.num_minibatches - 1) * kLossTermCount;
  end_epoch_batched(stream_, agents_, shared(s_.hyper), shared(s_.state), shared(s_.optimizer),
                    {base(b_.minibatch.loss_terms) + last, stride(b_.minibatch.loss_terms)}, minibatch_size_);
}

void BatchedTrainer::finish_iteration() {
  MetricsBatch inputs;
  inputs.episode_stats = {shared(s_.episode_stats), kEpisodeStatsWidth};
  inputs.ring = each(b_.episodes.recent_returns);
  inputs.loss_terms = each(b_.minibatch.loss_terms);
  inputs.ev_sums = {shared(s_.ev_sums), 4};
  inputs.minibatches = config_.num_minibatches;
  inputs.minibatch_size = minibatch_size_;
  inputs.steps_per_iteration = num_steps_ * num_envs_;
  finish_iteration_batched(stream_, agents_, inputs, shared(s_.optimizer), shared(s_.state), shared(s_.metrics));
}

}  // namespace surge::rl
