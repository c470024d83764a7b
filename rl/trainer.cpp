#include "rl/trainer.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "rl/categorical.hpp"
#include "rl/device_util.hpp"
#include "rl/gae.hpp"
#include "rl/gaussian.hpp"
#include "rl/gemm.hpp"
#include "rl/precision.hpp"
#include "rl/trainer_kernels.hpp"
#include "rl/trainer_phase_mark.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

const ScenarioSpec& checked_spec(const Engine& engine, const TrainConfig& config, const Collective& ranks) {
  config.validate();
  if (config.num_agents != 1)
    throw InputError("num_agents = " + std::to_string(config.num_agents) +
                     ": a trainer holds one agent; build one per agent (as surge train --agents does, "
                     "docs/agents.md) with num_agents = 1");
  require_trainable(config);
  const ScenarioSpec& spec = engine.spec();
  SURGE_CHECK(engine.num_envs() == config.num_envs, "the engine holds " + std::to_string(engine.num_envs()) +
                                                        " environments, the config asks for " +
                                                        std::to_string(config.num_envs));
  SURGE_CHECK(engine.first_env() == ranks.rank() * config.num_envs,
              "rank " + std::to_string(ranks.rank()) + "'s engine starts at environment " +
                  std::to_string(engine.first_env()) + ", not at rank x num_envs");
  if (config.total_steps < config.batch_size() * ranks.size())
    throw InputError("total_steps = " + std::to_string(config.total_steps) + " is less than one iteration of " +
                     std::to_string(ranks.size()) + " ranks x " + std::to_string(config.batch_size()) +
                     " steps; raise total_steps or shrink the batch");
  return spec;
}

}  // namespace

// cpu_threads = 0 chooses: one thread while the rollout is narrower than 4096 environments, where an
// OpenMP fork per small kernel costs more than it saves and a second thread that waits spins, which on a
// busy machine is ruinous (CleanRL's 4 x 128 on MountainCar: 333 s with two threads on a loaded 2-core
// machine, 6.6 s with one); every core from there on.
int cpu_threads_for(const TrainConfig& config, int ranks) {
  if (config.cpu_threads > 0) return static_cast<int>(config.cpu_threads);
  if (config.num_envs < 4096) return 1;
  return std::max(1, omp_get_num_procs() / std::max(1, ranks));
}

void add_episode_buffers(BufferTable& table, std::int64_t num_steps, std::int64_t num_envs, int ranks,
                         EpisodeBuffers& b) {
  const std::int64_t t = num_steps, n = num_envs, slots = t * n;
  b.running_return =
      table.add<float>("metrics.running_return", {n}, "[N]", "return of each env's current episode", kSaved);
  b.ended_return =
      table.add<float>("metrics.ended_return", {t, n}, "[T][N]", "return of the episode that ended at (t, n)");
  b.chunk_counts = table.add<std::int32_t>("metrics.chunk_counts", {finished_chunk_count(slots)}, "[T*N/256]",
                                           "ended episodes per chunk of slots");
  b.group_counts = table.add<std::int32_t>("metrics.group_counts", {finished_group_count(slots)}, "[T*N/65536]",
                                           "ended episodes per group of chunks");
  b.recent_returns = table.add<double>("metrics.recent_returns", {kRecentEpisodes}, "[100]",
                                       "ring of the latest finished returns", kSaved);
  b.recent_candidates = table.add<double>("metrics.recent_candidates", {ranks, kRecentCandidateWidth},
                                          "[ranks][100][2]", "each rank's newest finished episodes: key, return");
}

void add_minibatch_buffers(BufferTable& table, std::int64_t minibatch_size, int obs_dim, int action_dim,
                           bool continuous, std::int64_t minibatches, MinibatchSlots& b) {
  const std::int64_t mb = minibatch_size;
  b.obs = table.add<float>("minibatch.obs", {mb, obs_dim}, "[B][obs_dim]", "the minibatch's observations");
  if (continuous)
    b.continuous_actions = table.add<float>("minibatch.actions", {mb, action_dim}, "[B][action_dim]", "its actions");
  else
    b.actions = table.add<std::int32_t>("minibatch.actions", {mb}, "[B]", "its actions");
  b.fields = table.add<float>("minibatch.fields", {4, mb}, "[4][B]", "its logprob, value, advantage and return");
  b.loss_terms = table.add<double>("metrics.loss_terms", {minibatches, kLossTermCount}, "[E*M][5]",
                                   "each minibatch's loss term sums");
}

BufferTable Trainer::table(const TrainConfig& config, const ActorCritic& net, int obs_dim, Device device, int ranks,
                           Buffers& b) {
  const std::int64_t t = config.num_steps, n = config.num_envs, p = net.table().total();
  const std::int64_t mb = config.minibatch_size(), a = net.head_width();
  const std::int64_t action_dim = net.action_dim(), continuous = net.continuous() ? 1 : 0;
  BufferTable table;
  // The learner: parameters, gradients and both Adam moments side by side, each laid out by the ParamTable.
  b.params = table.add<float>("learner.params", {p}, "[P]", "the actor's and critic's parameters", kSaved | kAgent);
  b.grads = table.add<float>("learner.grads", {p}, "[P]", "the latest minibatch's gradient");
  b.adam_m = table.add<float>("learner.adam_m", {p}, "[P]", "Adam's first moment", kSaved | kAgent);
  b.adam_v = table.add<float>("learner.adam_v", {p}, "[P]", "Adam's second moment", kSaved | kAgent);
  b.hyper = table.add<AgentHyper>(DType::Float64, "learner.hyper", {1}, "[K]",
                                  "the agent's grid-variable scalars (rl/agent_hyper.hpp); K = 1 per trainer");
  b.optimizer = table.add<OptimizerScalars>(DType::Float64, "learner.optimizer", {1}, "[1]",
                                            "learning rate, step and the latest update's scalars", kSaved);
  b.state = table.add<TrainState>(DType::Int64, "learner.train_state", {1}, "[1]",
                                  "iteration, epochs applied and the recent-returns ring's head and count", kSaved);
  b.rollout_head =
      table.add<float>(continuous ? "learner.rollout_means" : "learner.rollout_logits", {n, a},
                       continuous ? "[N][action_dim]" : "[N][num_actions]", "the actor's outputs during the rollout");
  b.env_actions = table.add<float>("learner.env_actions", {continuous * n, action_dim}, "[N][action_dim]",
                                   "the samples clipped to the action bounds, as the environments get them");
  b.action_bounds = table.add<float>("learner.action_bounds", {2, action_dim}, "[2][action_dim]",
                                     "the action space's low, then high");
  add_minibatch_buffers(table, mb, obs_dim, net.action_dim(), net.continuous(),
                        config.update_epochs * config.num_minibatches, b.minibatch);
  add_episode_buffers(table, t, n, ranks, b.episodes);
  b.small_sums = table.add<double>("metrics.sums", {3 + 4}, "[7]", "episode statistics and explained-variance sums");
  b.reduce_scratch = table.add<double>("metrics.reduce_scratch", {reduce_scratch_doubles(device, 4)}, "[scratch]",
                                       "partial sums of the reductions");
  b.metrics =
      table.add<IterationMetrics>(DType::Float64, "metrics.iteration", {1}, "[1]", "the iteration's metrics row");
  if (net.pixels()) add_pixel_buffers(table, config, net, b);
  return table;
}

Trainer::Trainer(Engine& engine, const TrainConfig& config, const Collective& ranks, FrameSource* frames)
    : engine_(engine),
      config_(config),
      ranks_(ranks),
      num_iterations_(config.total_steps / (config.batch_size() * ranks.size())),
      device_(engine.device()),
      stream_(engine.device()),
      network_(ActorCritic::for_scenario(checked_spec(engine, config, ranks), config)),
      rollout_(device_, config.num_steps, config.num_envs, engine.spec().obs_dim, network_.action_dim()),
      minibatch_size_(config.minibatch_size()),
      arena_(device_, table(config, network_, engine.spec().obs_dim, device_, ranks.size(), b_), stream_),
      workspace_(device_, network_, std::max(config.num_envs, config.minibatch_size())),
      normalization_(device_, config, engine.spec().obs_dim, config.num_steps, config.num_envs, stream_, &ranks,
                     data(b_.hyper), 0),
      permutation_(Permutation::make(config.batch_size(), config.seed, 0)),
      graph_(stream_),
      metrics_mirror_(device_, sizeof(IterationMetrics), 2) {
  from_host(arena_[b_.hyper], std::vector<AgentHyper>{rl::agent_hyper(config)}, stream_);
  check_precision(network_, device_);
  prepare_gemm(device_);  // the iteration graph captures GEMMs: cuBLASLt must exist before
  if (device_.is_cuda()) set_cuda_gemm_tf32(config.precision == "tf32");
  if (device_.is_cpu()) set_cpu_threads(cpu_threads_for(config, ranks.size()));

  const std::int64_t b = minibatch_size_;
  const int d = rollout_.obs_dim(), action_dim = network_.action_dim();
  batch_ = {rollout_.obs(0),
            rollout_.actions(0),
            rollout_.continuous_actions(0),
            rollout_.logprob(0),
            rollout_.value(0),
            rollout_.advantage(0),
            rollout_.returns(0),
            d,
            action_dim};
  float* fields = data(b_.minibatch.fields);
  minibatch_buffers_ = {data(b_.minibatch.obs),
                        data(b_.minibatch.actions),
                        data(b_.minibatch.continuous_actions),
                        fields,
                        fields + b,
                        fields + 2 * b,
                        fields + 3 * b};
  const MinibatchBuffers& m = minibatch_buffers_;
  minibatch_ = {b,       m.obs,       m.actions, m.logprob,
                m.value, m.advantage, m.returns, network_.continuous() ? m.continuous_actions : nullptr};
  frames_ = frames;
  start_pixels();

  if (network_.continuous()) {
    std::vector<float> bounds = engine.spec().action_low;
    bounds.insert(bounds.end(), engine.spec().action_high.begin(), engine.spec().action_high.end());
    from_host(arena_[b_.action_bounds], bounds, stream_);
  }
  const std::vector<double> initial = network_.initial_parameters(config.seed);
  from_host(arena_[b_.params], std::vector<float>(initial.begin(), initial.end()), stream_);
  workspace_.parameters_changed();  // and after every other write to params
  // The first observation sits in obs[T]: every iteration starts by moving obs[T] to obs[0].
  const std::int64_t n = config.num_envs;
  engine_.observe({rollout_.obs(config.num_steps), n * d, device_}, stream_);
  normalization_.reset(stream_);
  normalization_.observe(stream_, rollout_.obs(config.num_steps));
  engine_.clear_episode_stats(stream_);
  stream_.synchronize();
}

Trainer::~Trainer() { stream_.synchronize_noexcept(); }

bool Trainer::uses_graph() const { return device_.is_cuda() && config_.cuda_graph && !graph_refused_; }

// ---- the iteration: one launcher call per line, in the order the algorithm goes

void Trainer::enqueue_iteration() {
  start_iteration();
  for (std::int64_t t = 0; t < config_.num_steps; ++t) {
    forward_policy(t);
    sample_actions(t);
    step_environments(t);
    value_final_observations(t);
  }
  value_last_observations();
  track_episodes();
  advantages();
  episode_statistics();
  for (std::int64_t epoch = 0; epoch < config_.update_epochs; ++epoch) {
    for (std::int64_t m = 0; m < config_.num_minibatches; ++m) {
      gather_minibatch(epoch, m);
      if (fused_update(epoch, m)) continue;
      update_forward();
      update_backward(epoch, m);
      average_gradients(epoch, m);
      optimiser_step();
    }
    end_epoch(epoch);
  }
  finish_iteration();
}

void Trainer::start_iteration() {
  const PhaseMark mark(clock_, TrainPhase::Other);
  begin_iteration(stream_, data(b_.hyper), 0, data(b_.state), data(b_.optimizer), num_iterations());
  if (frames_) frames_->next_iteration(stream_);  // as obs[T] -> obs[0] below
  const std::size_t obs_bytes = static_cast<std::size_t>(config_.num_envs * rollout_.obs_dim()) * sizeof(float);
  copy_bytes(rollout_.obs(0), device_, rollout_.obs(config_.num_steps), device_, obs_bytes, stream_);
  if (raw_envs_ > 0) {
    const std::size_t row_bytes = static_cast<std::size_t>(raw_envs_ * rollout_.obs_dim()) * sizeof(float);
    copy_bytes(raw_obs_.data(), device_, raw_obs_.data() + config_.num_steps * raw_envs_ * rollout_.obs_dim(), device_,
               row_bytes, stream_);
  }
}

void Trainer::forward_policy(std::int64_t t) {
  const PhaseMark mark(clock_, TrainPhase::PolicyForward);
  const float* obs = frames_ ? encode_stacks(t, false) : rollout_.obs(t);
  workspace_.forward_actor(stream_, data(b_.params), obs, config_.num_envs, data(b_.rollout_head));
  workspace_.forward_critic(stream_, data(b_.params), obs, config_.num_envs, rollout_.value(t));
}

void Trainer::sample_actions(std::int64_t t) {
  const PhaseMark mark(clock_, TrainPhase::Sampling);
  const ActionDraw draw{config_.seed, &data(b_.state)->iteration, config_.num_steps, t, engine_.first_env()};
  const std::int64_t n = config_.num_envs;
  if (network_.continuous()) {
    // The rollout keeps the unclipped sample its log-probability belongs to; the engine gets it clipped.
    const int dims = network_.action_dim();
    const float* bounds = data(b_.action_bounds);
    sample_gaussian_actions(stream_, data(b_.rollout_head), data(b_.params) + network_.log_std_offset(), n, dims,
                            bounds, bounds + dims, draw, false, rollout_.continuous_actions(t), rollout_.logprob(t),
                            data(b_.env_actions));
  } else {
    rl::sample_actions(stream_, data(b_.rollout_head), n, network_.num_actions(), draw, false, rollout_.actions(t),
                       rollout_.logprob(t));
  }
}

void Trainer::step_environments(std::int64_t t) {
  const PhaseMark mark(clock_, TrainPhase::EnvStep);
  const ActionView actions = network_.continuous() ? ActionView{{}, arena_[b_.env_actions]} : rollout_.action_view(t);
  if (frames_)
    frames_->step(t, actions, rollout_.step_views(t), stream_);
  else
    engine_.step(actions, rollout_.step_views(t), stream_);
  if (raw_envs_ > 0) keep_raw_row(t + 1);
  normalization_.observe(stream_, rollout_.obs(t + 1), rollout_.final_obs(), rollout_.terminated(t),
                         rollout_.truncated(t));
}

void Trainer::value_final_observations(std::int64_t t) {
  // V(final observation) of episodes that ended at this step; GAE reads it only where they were truncated.
  const PhaseMark mark(clock_, TrainPhase::PolicyForward);
  // GAE reads no final value of this step: spare the encoder, or on the CPU (where the flags can be read
  // without a wait) the critic's pass over every environment on every step.
  if ((frames_ || device_.is_cpu()) && !any_truncated(t)) return;
  const float* obs = frames_ ? encode_stacks(t, true) : rollout_.final_obs();
  workspace_.forward_critic(stream_, data(b_.params), obs, config_.num_envs, rollout_.final_value(t));
}

void Trainer::value_last_observations() {
  const PhaseMark mark(clock_, TrainPhase::PolicyForward);
  const std::int64_t steps = config_.num_steps;
  const float* obs = frames_ ? encode_stacks(steps, false) : rollout_.obs(steps);
  workspace_.forward_critic(stream_, data(b_.params), obs, config_.num_envs, rollout_.value(steps));
}

void Trainer::track_episodes() {
  // The rollout keeps the environments' rewards (episode returns stay in their units); GAE reads the
  // scaled ones where normalize_reward is on.
  const PhaseMark mark(clock_, TrainPhase::Other);
  track_episode_returns(stream_, config_.num_steps, config_.num_envs, rollout_.reward(0), rollout_.terminated(0),
                        rollout_.truncated(0), data(b_.episodes.running_return), data(b_.episodes.ended_return));
  normalization_.scale(stream_, rollout_.reward(0), rollout_.terminated(0), rollout_.truncated(0));
}

void Trainer::advantages() {
  const PhaseMark mark(clock_, TrainPhase::Gae);
  const float* reward = normalization_.learner_rewards(rollout_.reward(0));
  compute_gae(stream_, config_.num_steps, config_.num_envs, data(b_.hyper), 0, reward, rollout_.terminated(0),
              rollout_.truncated(0), rollout_.value(0), rollout_.final_value(0), rollout_.advantage(0),
              rollout_.returns(0));
}

void Trainer::episode_statistics() {
  // Episode statistics and the rollout's explained variance.
  const PhaseMark mark(clock_, TrainPhase::Other);
  const std::int64_t slots = config_.batch_size();
  count_finished(stream_, slots, rollout_.terminated(0), rollout_.truncated(0), data(b_.episodes.chunk_counts),
                 data(b_.episodes.group_counts));
  // Each rank's newest episodes at its own place in the candidates: the sum over ranks gathers them all.
  const Span<double> candidates = arena_[b_.episodes.recent_candidates];
  fill(stream_, candidates.data, candidates.size, 0.0);
  newest_finished(stream_, config_.num_steps, config_.num_envs, engine_.first_env(), config_.num_envs * ranks_.size(),
                  rollout_.terminated(0), rollout_.truncated(0), data(b_.episodes.ended_return),
                  data(b_.episodes.chunk_counts), data(b_.episodes.group_counts),
                  candidates.data + ranks_.rank() * kRecentCandidateWidth);
  engine_.reduce_episode_stats(arena_[b_.small_sums].slice(0, kEpisodeStatsWidth), stream_);
  engine_.clear_episode_stats(stream_);
  explained_variance_sums(stream_, slots, rollout_.returns(0), rollout_.value(0), data(b_.reduce_scratch),
                          data(b_.small_sums) + kEpisodeStatsWidth);
  if (ranks_.size() > 1) {
    ranks_.all_reduce_sum(candidates, stream_);
    ranks_.all_reduce_sum(arena_[b_.small_sums], stream_);
  }
  push_recent_returns(stream_, candidates.data, ranks_.size(), data(b_.episodes.recent_returns), data(b_.state));
}

void Trainer::finish_iteration() {
  const PhaseMark mark(clock_, TrainPhase::Other);
  MetricsInputs inputs;
  inputs.episode_stats = data(b_.small_sums);
  inputs.ring = data(b_.episodes.recent_returns);
  inputs.loss_terms = data(b_.minibatch.loss_terms);
  inputs.ev_sums = data(b_.small_sums) + kEpisodeStatsWidth;
  inputs.minibatches = config_.num_minibatches;
  inputs.minibatch_size = minibatch_size_ * ranks_.size();
  inputs.steps_per_iteration = config_.batch_size() * ranks_.size();
  rl::finish_iteration(stream_, inputs, data(b_.optimizer), data(b_.state), data(b_.metrics));
}

// ---- running it

void Trainer::iterate(PhaseClock* clock) {
  // Iteration 0 runs eagerly: it sets up cuBLASLt's plans and touches every buffer, which capture
  // must not do; later ones replay the graph captured from the second. With a clock, the diagnostic
  // pass: eager, with a mark after every phase.
  if (clock) {
    clock_ = clock;
    clock->start();
    enqueue_iteration();
    clock_ = nullptr;
  } else {
    enqueue_or_replay(graph_, uses_graph() && enqueued_ >= 1, [this] { enqueue_iteration(); });
  }
  // Slot enqueued_ % 2 still holds iteration enqueued_ - 2 if nobody read it: read it before reuse.
  if (collected_ <= enqueued_ - 2) collect(enqueued_ - 2);
  metrics_mirror_.copy_async(static_cast<int>(enqueued_ % 2), data(b_.metrics), stream_);
  ++enqueued_;
}

void Trainer::enqueue_captured_iteration(int slot, const Event& copied) {
  SURGE_CHECK(uses_graph() && enqueued_ >= 1, "a trainer joins a graph of several after its first iteration");
  enqueue_iteration();
  metrics_mirror_.copy_async_captured(slot, data(b_.metrics), stream_, copied);
}

int Trainer::claim_graph_slot() {
  if (collected_ <= enqueued_ - 2) collect(enqueued_ - 2);
  return static_cast<int>(enqueued_++ % 2);
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

// ---- state for checkpoints

std::vector<SavedBuffer> Trainer::save_state() const {
  if (frames_) carry_frames(false);
  std::vector<SavedBuffer> saved = save_buffers(arena_, stream_);
  for (SavedBuffer& buffer : save_buffers(normalization_.buffers(), stream_)) saved.push_back(std::move(buffer));
  return saved;
}

void Trainer::restore_state(const std::vector<SavedBuffer>& saved) {
  // The kernels index the ring of recent returns with these: a damaged file must not reach them.
  if (const std::optional<TrainState> saved_state = saved_value<TrainState>(saved, "train_state")) {
    const TrainState& state = *saved_state;
    if (state.iteration < 0 || state.epochs_applied < 0 || state.last100_head < 0 ||
        state.last100_head >= kRecentEpisodes || state.last100_count < 0 || state.last100_count > kRecentEpisodes)
      throw InputError("the checkpoint's train_state (iteration " + std::to_string(state.iteration) + ", ring head " +
                       std::to_string(state.last100_head) + ", ring count " + std::to_string(state.last100_count) +
                       ") is out of range; the file is damaged");
  }
  restore_buffers(arena_, saved, "the checkpoint", stream_);
  if (frames_) carry_frames(true);
  workspace_.parameters_changed();
  restore_buffers(normalization_.buffers(), saved, "the checkpoint", stream_);
  // The restored environments' observation starts the next iteration (obs[T] moves to obs[0]),
  // normalised by the statistics as restored: they counted that observation already.
  const std::int64_t n = config_.num_envs, d = rollout_.obs_dim();
  engine_.observe({rollout_.obs(config_.num_steps), n * d, device_}, stream_);
  if (raw_envs_ > 0) keep_raw_row(config_.num_steps);
  normalization_.normalize(stream_, rollout_.obs(config_.num_steps));
  stream_.synchronize();
}

const float* Trainer::keep_raw_observations(std::int64_t envs) {
  SURGE_CHECK(envs >= 1 && envs <= config_.num_envs, "keep_raw_observations: envs out of range");
  SURGE_CHECK(!graph_.captured(), "keep_raw_observations after the iteration graph was captured");
  const std::int64_t n = config_.num_envs, d = rollout_.obs_dim();
  raw_obs_ = DeviceBuffer<float>(device_, (config_.num_steps + 1) * envs * d);
  raw_envs_ = envs;
  // The observation the next iteration starts from, as the engine's current state gives it.
  const DeviceBuffer<float> current(device_, n * d);
  engine_.observe(current.span(), stream_);
  copy_bytes(raw_obs_.data() + config_.num_steps * envs * d, device_, current.data(), device_,
             static_cast<std::size_t>(envs * d) * sizeof(float), stream_);
  stream_.synchronize();
  return raw_obs_.data();
}

void Trainer::keep_raw_row(std::int64_t t) {
  // Environments 0 .. raw_envs_-1 lie first and together in the rollout's row.
  const std::int64_t d = rollout_.obs_dim();
  copy_bytes(raw_obs_.data() + t * raw_envs_ * d, device_, rollout_.obs(t), device_,
             static_cast<std::size_t>(raw_envs_ * d) * sizeof(float), stream_);
}

// ---- memory

MemoryPlan Trainer::memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device, int ranks) {
  const ActorCritic network = ActorCritic::for_scenario(spec, config);
  check_precision(network, device);  // before a run folder is made
  const std::int64_t t = config.num_steps, n = config.num_envs;
  MemoryPlan plan(device);
  RolloutStorage::table(t, n, spec.obs_dim, network.action_dim()).add_to(plan);
  Buffers unused;
  table(config, network, spec.obs_dim, device, ranks, unused).add_to(plan);
  PpoGradient<float>::table(device, network, std::max(n, config.minibatch_size())).add_to(plan);
  Normalization::table(device, config, spec.obs_dim, t, n).add_to(plan);
  return plan;
}

std::size_t Trainer::device_bytes() const {
  return rollout_.device_bytes() + arena_.device_bytes() + workspace_.device_bytes() + normalization_.device_bytes();
}

}  // namespace surge::rl
