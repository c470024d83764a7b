#pragma once
// The PPO trainer: rollout of T steps of N environments, GAE, then E epochs of M minibatch updates,
// all enqueued on one stream with no host synchronisation inside an iteration. Metrics are reduced on
// the device and reach the host one iteration late on CUDA (at once on the CPU). On CUDA the second
// and later iterations replay a CUDA graph of the first.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/adam.hpp"
#include "rl/device_graph.hpp"
#include "rl/normalization.hpp"
#include "rl/rollout.hpp"
#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/phase_clock.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// The phases of an iteration, as iterate(clock) times them. "Other" holds the small kernels between
// them: the learning-rate schedule, episode statistics, epoch bookkeeping, the metrics.
enum class TrainPhase : int { PolicyForward, Sampling, EnvStep, Gae, UpdateForward, UpdateBackward, Optimiser, Other };
inline constexpr int kTrainPhaseCount = 8;

class Trainer {
 public:
  // `engine` holds config.num_envs environments of a scenario on the device to train on (a categorical
  // policy for discrete actions, a diagonal Gaussian for continuous ones), freshly reset; it must outlive the trainer. Throws InputError for a config that does not fit
  // the scenario, after config.validate().
  Trainer(Engine& engine, const TrainConfig& config);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Enqueues one iteration. Does not wait for the device. With a clock (on stream(), kTrainPhaseCount
  // phases), the diagnostic pass: the iteration is enqueued eagerly, outside the CUDA graph, with a mark
  // after every phase; clock->seconds() then holds each TrainPhase's time. It trains like any other.
  void iterate(PhaseClock* clock = nullptr);
  // Metrics of the iterations that have finished and were not returned before, oldest first. On the
  // CPU that includes the latest iteration; on CUDA it waits for the one before the latest.
  std::vector<IterationMetrics> ready_metrics();
  // Waits for every enqueued iteration and returns the metrics not returned before.
  std::vector<IterationMetrics> drain();

  std::int64_t iterations_enqueued() const { return enqueued_; }
  std::int64_t num_iterations() const { return config_.num_iterations(); }
  const TrainConfig& config() const { return config_; }
  const ActorCritic& network() const { return network_; }
  const ScenarioSpec& spec() const { return engine_.spec(); }
  Device device() const { return device_; }
  const Stream& stream() const { return stream_; }
  bool uses_graph() const;
  // The rollout of the latest iteration (its buffers are rewritten by the next one).
  const RolloutStorage& rollout() const { return rollout_; }

  // The learner's state, for checkpoints: each [network().table().total()], on the device.
  Span<float> parameters() const { return params_.span(); }
  Span<float> gradients() const { return grads_.span(); }  // of the latest minibatch, [table.total()]
  Span<float> adam_first_moment() const { return adam_m_.span(); }
  Span<float> adam_second_moment() const { return adam_v_.span(); }
  // Host copies of the small device structs (they wait for the stream), and their restoration.
  OptimizerScalars optimizer_scalars() const;
  TrainState train_state() const;
  void restore(const std::vector<float>& params, const std::vector<float>& adam_m, const std::vector<float>& adam_v,
               const OptimizerScalars& optimizer, const TrainState& state);
  // The rest of what an exact resume restores (rl/io/resume_state.hpp), on the device: each env's return
  // so far in its running episode, [N], and the ring of recent finished returns, [kRecentEpisodes].
  Span<float> running_returns() const { return running_return_.span(); }
  Span<double> recent_returns() const { return recent_returns_.span(); }
  // The observation statistics [2*obs_dim + 1], the discounted-return statistics [3] and each env's
  // discounted-return accumulator [N], on the device; empty where the config turns that part off.
  Span<double> obs_moments() const { return normalization_.obs_moments(); }
  Span<double> reward_moments() const { return normalization_.reward_moments(); }
  Span<float> reward_accumulator() const { return normalization_.reward_accumulator(); }
  // The latest rollout's rewards as GAE read them, [T][N], where normalize_reward is on (rollout() keeps
  // the environments' own).
  Span<float> scaled_rewards() const { return normalization_.scaled_rewards(); }
  // Puts saved statistics and accumulators back (each sized as the spans above); throws InputError when
  // a size differs from this run's.
  void restore_normalization(const std::vector<double>& obs, const std::vector<double>& reward,
                             const std::vector<float>& accumulator);
  // Takes the engine's current observation as the start of the next iteration (after its state was
  // restored), normalised by the statistics as restored: they counted that observation already.
  void observe_engine();

  // Every device buffer a run of `config` allocates besides the engine's, computed from the config
  // alone (for `--dry-run` memory plans); their sum equals device_bytes() of such a trainer.
  static std::vector<TrainerBuffer> memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device);
  std::size_t device_bytes() const;

 private:
  void enqueue_iteration(PhaseClock* clock);
  void collect(std::int64_t iteration);

  Engine& engine_;
  TrainConfig config_;
  Device device_;
  Stream stream_;
  ActorCritic network_;
  RolloutStorage rollout_;
  std::int64_t minibatch_size_;
  PpoLossConfig loss_config_;
  AdamConfig adam_config_;

  DeviceBuffer<float> params_;   // [table.total()]
  DeviceBuffer<float> grads_;    // [table.total()]
  DeviceBuffer<float> adam_m_;   // [table.total()]
  DeviceBuffer<float> adam_v_;   // [table.total()]
  DeviceBuffer<OptimizerScalars> optimizer_;  // [1]
  DeviceBuffer<TrainState> state_;            // [1]
  PpoGradient<float> workspace_;              // rows: max(N, B)
  DeviceBuffer<float> rollout_logits_;        // [N][head_width]: logits, or the Gaussian's means
  DeviceBuffer<float> env_actions_;           // [N][action_dim] the samples clipped to the bounds (continuous)
  DeviceBuffer<float> action_bounds_;         // [2][action_dim] low, then high (continuous)
  DeviceBuffer<float> mb_obs_;                // [B][obs_dim]
  DeviceBuffer<std::int32_t> mb_actions_;     // [B] (discrete)
  DeviceBuffer<float> mb_continuous_actions_; // [B][action_dim] (continuous)
  DeviceBuffer<float> mb_fields_;             // [4][B] logprob, value, advantage, return
  DeviceBuffer<double> loss_terms_;           // [E*M][kLossTermCount]
  DeviceBuffer<float> running_return_;        // [N] return of each env's current episode
  DeviceBuffer<float> ended_return_;          // [T][N] return of the episode that ended at (t, n)
  DeviceBuffer<std::int32_t> chunk_counts_;   // [ceil(T*N / 256)] ended episodes per chunk of slots
  DeviceBuffer<std::int32_t> group_counts_;   // [ceil(chunks / 256)]
  DeviceBuffer<double> recent_returns_;       // [kRecentEpisodes] ring of the latest finished returns
  DeviceBuffer<double> small_sums_;           // [3 + 4] episode stats, explained-variance sums
  DeviceBuffer<double> reduce_scratch_;       // [reduce_scratch_size(device, 4)]
  DeviceBuffer<IterationMetrics> metrics_;    // [1]
  Normalization normalization_;               // observation and reward statistics (rl/normalization.hpp)

  IterationGraph graph_;
  HostMirror metrics_mirror_;  // two slots: iteration k lands in slot k % 2
  std::int64_t enqueued_ = 0;
  std::int64_t collected_ = 0;  // iterations whose metrics were read from the mirror
  std::vector<IterationMetrics> pending_;
};

}  // namespace surge::rl
