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
#include "rl/agent_hyper.hpp"
#include "rl/collective.hpp"
#include "rl/device_graph.hpp"
#include "rl/normalization.hpp"
#include "rl/rollout.hpp"
#include "rl/shuffle.hpp"
#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/frame_source.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/phase_clock.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// The phases of an iteration, as iterate(clock) times them. "Other" holds the small kernels between
// them: the learning-rate schedule, episode statistics, epoch bookkeeping, the metrics. (Sums across
// ranks are timed inside the phases that need them: Collective::communication_seconds counts them.)
enum class TrainPhase : int { PolicyForward, Sampling, EnvStep, Gae, UpdateForward, UpdateBackward, Optimiser, Other };
inline constexpr int kTrainPhaseCount = 8;

// The CPU threads a run of `config` alone takes (OpenMP and OpenBLAS): config.cpu_threads where given,
// else one below 4096 environments, from there on every core this process may run on (its affinity)
// shared among the `ranks` processes of a data-parallel run, which are taken to share the machine.
int cpu_threads_for(const TrainConfig& config, int ranks = 1);

class Trainer {
 public:
  // `engine` holds config.num_envs environments of a scenario on the device to train on (a categorical
  // policy for discrete actions, a diagonal Gaussian for continuous ones), freshly reset; it must outlive the trainer.
  // Throws InputError for a config that does not fit the scenario, after config.validate().
  // Data-parallel (`ranks` of more than one): every rank runs such a trainer over its own N environments,
  // global environments rank * N .. rank * N + N - 1 (the engine's first_env); after each minibatch's
  // backward pass the gradients are averaged over the ranks, and the advantage normalisation, the
  // observation and reward statistics and the metrics cover every rank's samples, so that every rank
  // holds the same parameters. config.total_steps counts the steps of all ranks together.
  // Pixel observations (config.observation = "pixels", either backend; under mpirun each rank its own): `frames`
  // is the engine's frame store of num_steps rows (scenarios/pixel_obs.hpp), freshly made; the policy reads
  // its stacks (the encoder's gradient slices are averaged over the ranks with the rest) and
  // the trainer steps the engine through it. It must outlive the trainer. Null for vector observations.
  Trainer(Engine& engine, const TrainConfig& config, const Collective& ranks = single_process(),
          FrameSource* frames = nullptr);
  // Waits for the stream first, so that no copy or graph replay still running outlives its buffers.
  ~Trainer();
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

  // For one CUDA graph of several trainers' iterations (rl/agent_set.hpp), after a first iterate():
  // enqueue_captured_iteration puts an iteration on stream() while it is captured, its metrics copied to
  // host slot `slot`, ready once `copied` fires; claim_graph_slot, before each launch of that graph,
  // does what iterate() does around its own launch and returns the slot that the launch writes.
  void enqueue_captured_iteration(int slot, const Event& copied);
  int claim_graph_slot();

  std::int64_t iterations_enqueued() const { return enqueued_; }
  std::int64_t num_iterations() const { return num_iterations_; }
  const Collective& ranks() const { return ranks_; }
  const TrainConfig& config() const { return config_; }
  const ActorCritic& network() const { return network_; }
  const ScenarioSpec& spec() const { return engine_.spec(); }
  Device device() const { return device_; }
  const Stream& stream() const { return stream_; }
  bool uses_graph() const;
  bool graph_captured() const { return graph_.captured(); }
  // From now on every iteration is enqueued eagerly, its graph neither captured nor replayed: where a
  // capture failed (rl/agent_set.hpp falls back to it).
  void stop_using_graph() { graph_refused_ = true; }
  // The rollout of the latest iteration (its buffers are rewritten by the next one).
  const RolloutStorage& rollout() const { return rollout_; }

  // The learner's state, for checkpoints: each [network().table().total()], on the device.
  // Read only: the fused passes repack the parameters only after an optimiser step or restore_state().
  Span<float> parameters() const { return arena_[b_.params]; }
  Span<float> gradients() const { return arena_[b_.grads]; }  // of the latest minibatch
  Span<float> adam_first_moment() const { return arena_[b_.adam_m]; }
  Span<float> adam_second_moment() const { return arena_[b_.adam_v]; }
  // The grid-variable scalars the learner's kernels read, [K] on the device (K = 1: this trainer's agent,
  // index 0), written from the config when the trainer is made (rl/agent_hyper.hpp).
  Span<AgentHyper> agent_hyper() const { return arena_[b_.hyper]; }
  // Host copies of the small device structs (they wait for the stream).
  OptimizerScalars optimizer_scalars() const { return to_host(arena_[b_.optimizer], stream_)[0]; }
  TrainState train_state() const { return to_host(arena_[b_.state], stream_)[0]; }
  // The observation statistics [2*obs_dim + 1] and the discounted-return statistics [3], on the device;
  // empty where the config turns that part off. The latest rollout's rewards as GAE read them, [T][N],
  // where normalize_reward is on (rollout() keeps the environments' own).
  Span<double> obs_moments() const { return normalization_.obs_moments(); }
  Span<double> reward_moments() const { return normalization_.reward_moments(); }
  Span<float> scaled_rewards() const { return normalization_.scaled_rewards(); }

  // Keeps the observations of environments 0 .. envs-1 as the engine gave them, before normalize_obs
  // normalised them, for the rollout log: [T+1][envs][obs_dim] on the device, row t what step t acted
  // on, as in rollout().obs. Costs one copy of envs * obs_dim floats per step; none until called.
  // Call before the first iterate() and after any restore_state().
  const float* keep_raw_observations(std::int64_t envs);

  // Everything an exact resume needs of the trainer: the entries of its tables marked kSaved (waits for
  // the stream).
  std::vector<SavedBuffer> save_state() const;
  // Puts saved state back (after the engine's own) and takes the engine's current observation as the
  // start of the next iteration; throws InputError when an entry is missing or sized for another run.
  void restore_state(const std::vector<SavedBuffer>& saved);

  // Every device buffer a run of `config` allocates besides the engine's, computed from the config
  // alone (for `--dry-run` memory plans); its allocated_bytes() equal device_bytes() of such a trainer.
  static MemoryPlan memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device, int ranks = 1);
  std::size_t device_bytes() const;

 private:
  struct Buffers {
    Slot<float> params, grads, adam_m, adam_v;
    Slot<AgentHyper> hyper;
    Slot<OptimizerScalars> optimizer;
    Slot<TrainState> state;
    Slot<float> rollout_head, env_actions, action_bounds;
    MinibatchSlots minibatch;
    EpisodeBuffers episodes;
    Slot<double> small_sums, reduce_scratch;
    Slot<IterationMetrics> metrics;
    Slot<std::uint8_t> rollout_stacks, mb_stacks, carried_frames, carried_first;  // pixels only
    Slot<std::int64_t> mb_indices;
  };
  static BufferTable table(const TrainConfig& config, const ActorCritic& network, int obs_dim, Device device, int ranks,
                           Buffers& b);

  // The iteration, phase by phase (each phase times itself when a clock is attached).
  void enqueue_iteration();
  void start_iteration();
  void forward_policy(std::int64_t t);
  void sample_actions(std::int64_t t);
  void step_environments(std::int64_t t);
  void value_final_observations(std::int64_t t);
  void value_last_observations();
  void track_episodes();
  void advantages();
  void episode_statistics();
  void gather_minibatch(std::int64_t epoch, std::int64_t m);
  // The whole minibatch update in one fused pass per network on the CPU (rl/ppo_loss_fused.hpp), where it
  // applies and no clock times the phases apart; false otherwise.
  bool fused_update(std::int64_t epoch, std::int64_t m);
  void update_forward();
  void update_backward(std::int64_t epoch, std::int64_t m);
  void average_gradients(std::int64_t epoch, std::int64_t m);
  void optimiser_step();
  void end_epoch(std::int64_t epoch);
  void finish_iteration();
  void collect(std::int64_t iteration);
  void keep_raw_row(std::int64_t t);  // rollout obs[t] (just observed, not yet normalised) -> raw obs[t]
  // The pixel path (rl/trainer_pixels.cpp).
  static void add_pixel_buffers(BufferTable& table, const TrainConfig& config, const ActorCritic& network, Buffers& b);
  void start_pixels();
  const float* encode_stacks(std::int64_t t, bool final_stacks);  // the features of row t's (final) stacks
  bool any_truncated(std::int64_t t) const;
  void gather_minibatch_stacks(std::int64_t epoch, std::int64_t m);
  void carry_frames(bool into_store) const;  // the store's last stack rows <-> the saved copy
  template <class T>
  T* data(Slot<T> slot) const {
    return arena_.data(slot);
  }

  Engine& engine_;
  TrainConfig config_;
  const Collective& ranks_;
  std::int64_t num_iterations_;  // total_steps over the steps of an iteration of every rank
  Device device_;
  Stream stream_;
  ActorCritic network_;
  RolloutStorage rollout_;
  std::int64_t minibatch_size_;
  Buffers b_;
  BufferArena arena_;                   // the table above, one allocation
  PpoGradient<float> workspace_;        // rows: max(N, B)
  Normalization normalization_;         // observation and reward statistics (rl/normalization.hpp)
  BatchView batch_;                     // the rollout as the minibatch gather reads it
  MinibatchBuffers minibatch_buffers_;  // where it gathers to
  MinibatchView<float> minibatch_;      // the same rows as the loss reads them
  Permutation permutation_;             // the shuffles' family; each epoch's is picked on the device
  PhaseClock* clock_ = nullptr;         // set during iterate(clock)
  DeviceBuffer<float> raw_obs_;         // [T+1][raw_envs_][obs_dim], where keep_raw_observations asked for it
  FrameSource* frames_ = nullptr;       // pixel observations, or null
  std::int64_t raw_envs_ = 0;

  IterationGraph graph_;
  bool graph_refused_ = false;  // stop_using_graph()

  HostMirror metrics_mirror_;  // two slots: iteration k lands in slot k % 2
  std::int64_t enqueued_ = 0;
  std::int64_t collected_ = 0;  // iterations whose metrics were read from the mirror
  std::vector<IterationMetrics> pending_;
};

}  // namespace surge::rl
