#pragma once
// The batched learner (issue 15, docs/batched-learner.md): one trainer of K PPO agents whose
// every kernel has an agent dimension. Each launch (and on CUDA each cuBLASLt call, through
// gemm_strided_batched) serves all K agents; one CUDA graph holds the whole iteration of all of them.
//
// Layout: every large per-agent buffer (the rollout, parameters, gradients, Adam's moments, the minibatch,
// the network's activations and gradients, the episode bookkeeping) lives in K copies of one BufferTable
// layout placed a fixed distance apart in one allocation, so agent k's copy of an entry is agent 0's plus
// k * that distance and each launcher takes (K, distance). The small per-agent structs (scalars the grid
// varies, optimiser scalars, train state, seeds, metrics) are [K] arrays of their own.
//
// Agent k trains exactly as Trainer with configs[k] on an engine of its own (seed configs[k].seed) does on
// the GEMM path (cpu_fused_mlp = false): the same bits on the CPU (tests/test_batched_trainer.cpp). What it
// covers today: discrete and continuous actions, vector observations, observation and reward normalisation,
// one process (no ranks), fp32; supported() says why a config is left to one Trainer per agent.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/adam.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/batched_kernels.hpp"
#include "rl/device_graph.hpp"
#include "rl/normalization.hpp"
#include "rl/train_config.hpp"
#include "rl/train_state.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

class BatchedTrainer {
 public:
  // `engine` holds K agents of configs[k].num_envs environments each (make_engine with K EngineAgents,
  // agent k's seed configs[k].seed), freshly reset; it must outlive the trainer. configs: one per agent,
  // the same shapes (everything grid_keys() does not list, seed aside). Throws InputError where a config is
  // not supported() or the configs differ in shape.
  BatchedTrainer(Engine& engine, const std::vector<TrainConfig>& configs);
  ~BatchedTrainer();
  BatchedTrainer(const BatchedTrainer&) = delete;
  BatchedTrainer& operator=(const BatchedTrainer&) = delete;

  // The most agents one batched learner holds (a segmented reduction's launch covers at most this many).
  static constexpr std::int64_t kMaxAgents = 65535;
  // Agent k's observation statistics [2*obs_dim + 1] and discounted-return statistics [3], on the device;
  // empty where the configs turn that part off.
  Span<double> obs_moments(int agent) const;
  Span<double> reward_moments(int agent) const;

  // Whether the batched learner covers `config` on `spec`; where not, `why` says what it lacks.
  static bool supported(const TrainConfig& config, const ScenarioSpec& spec, std::string* why = nullptr);

  // Enqueues one iteration of every agent; does not wait for the device.
  void iterate();
  // On the CPU, the threads the agents are spread over (by default one per core up to K, as one learner per
  // agent takes, whatever the config's cpu_threads); 1 runs every phase as one call for all agents, the
  // sequence CUDA captures (the tests run both). No effect on CUDA.
  void set_cpu_agent_threads(int threads) {
    if (device_.is_cpu()) cpu_agent_threads_ = std::max(1, std::min(threads, agents_));
  }
  // Metrics of finished iterations not returned before, [agent][oldest first] (on CUDA one iteration late).
  std::vector<std::vector<IterationMetrics>> ready_metrics();
  std::vector<std::vector<IterationMetrics>> drain();

  int num_agents() const { return agents_; }
  std::int64_t num_iterations() const { return num_iterations_; }
  std::int64_t iterations_enqueued() const { return enqueued_; }
  const TrainConfig& config(int agent) const { return configs_[static_cast<std::size_t>(agent)]; }
  const ActorCritic& network() const { return network_; }
  const Stream& stream() const { return stream_; }
  bool graph_captured() const { return graph_.captured(); }

  // Agent k's learner state, on the device, [network().table().total()] each.
  Span<float> parameters(int agent) const;
  Span<float> adam_first_moment(int agent) const;
  Span<float> adam_second_moment(int agent) const;
  // Every agent's buffers (K replicas of one layout: rollout.*, learner.*, workspace.*, minibatch.*, metrics.*),
  // for tests and foreign tensor libraries.
  const BufferArena& agent_buffers() const { return agent_arena_; }
  // Agent k's state as Trainer::save_state() of its run alone gives it (names, types, shapes, bytes): what its
  // checkpoint keeps. Waits for the stream.
  std::vector<SavedBuffer> save_state(int agent) const;
  // Puts such state back into agent k (after the engine's agent_state for k): throws InputError where an entry
  // is missing, sized for another run, or out of range (the train state's ring indices and the scalars are
  // checked before anything is written; a later entry of the wrong size leaves agent k part restored, so a
  // caller that catches it must not go on training). Every agent's next iteration then starts from its
  // engine's current observation.
  void restore_state(int agent, const std::vector<SavedBuffer>& saved);
  // Host copies (they wait for the stream).
  OptimizerScalars optimizer_scalars(int agent) const;
  TrainState train_state(int agent) const;

  // Every device buffer a batched learner of `agents` agents of `config` allocates besides the engine's, from
  // the config alone (for --dry-run memory plans): its allocated_bytes() equal device_bytes() of such a trainer.
  static MemoryPlan memory_plan(const TrainConfig& config, const ScenarioSpec& spec, Device device, int agents);
  std::size_t device_bytes() const { return agent_arena_.device_bytes() + shared_arena_.device_bytes(); }

 private:
  struct AgentBuffers {  // one copy per agent, a fixed distance apart
    Slot<float> params, grads, adam_m, adam_v;
    Slot<float> obs, logprob, value, reward, advantage, returns, final_obs, final_value;  // the rollout
    Slot<std::int32_t> actions;
    Slot<float> continuous_actions, env_actions, d_log_std_rows;  // a Gaussian policy
    Normalization::Buffers norm;                                  // rl/normalization.hpp's entries, one agent's
    Slot<std::uint8_t> terminated, truncated;
    Slot<float> rollout_logits, actor_activations, critic_activations, logits, values, d_logits, d_values,
        mlp_scratch;  // the networks' workspace
    MinibatchSlots minibatch;
    Slot<double> advantage_stats;
    EpisodeBuffers episodes;
  };
  struct SharedBuffers {  // [K] arrays
    Slot<AgentHyper> hyper;
    Slot<OptimizerScalars> optimizer;
    Slot<TrainState> state;
    Slot<std::uint64_t> seeds;
    Slot<IterationMetrics> metrics;
    Slot<double> episode_stats, ev_sums, scratch;
    Slot<float> ones, action_bounds;
  };
  static BufferTable agent_table(const TrainConfig& config, const ActorCritic& net, int obs_dim, Device device,
                                 AgentBuffers& b);
  static BufferTable shared_table(const TrainConfig& config, const ActorCritic& net, Device device, int agents,
                                  SharedBuffers& b);

  // Agents [first, first + count): each phase below runs for such a range in one launcher call per
  // kernel, agent `first`'s copies and the arena's distance (an agent's bits do not depend on the range).
  struct Agents {
    int first, count;
  };
  // One iteration of every agent: on CUDA, and on the CPU on one thread, each phase in one call for all of
  // them; on the CPU with cpu_agent_threads_ > 1, each agent's rollout (its environments' steps too) and then
  // its update on one thread, the agents spread over that many threads (batched_trainer_cpu.cpp).
  void enqueue_iteration();
  void enqueue_iteration_per_agent();
  // f(range) over the agents: all of them in one call, or on the CPU with cpu_agent_threads_ > 1 one agent per
  // call, the calls spread over that many threads (each call's work on its one thread); joins before it returns.
  void for_agents(const std::function<void(Agents)>& f);
  // The iteration's start and its rollout: for each step, the agents' forward passes and draws (act), their
  // environments' step, the normalisation of what they observed, the critic on the final observations of
  // ended episodes.
  void rollout(Agents a);
  void start_iteration(Agents a);
  void act(std::int64_t t, Agents a), sample_actions(std::int64_t t, Agents a);
  void step_environments(std::int64_t t, Agents a), value_final_observations(std::int64_t t, Agents a);
  // Whether step t needs value_final_observations for the agents: on the CPU only where one of their
  // episodes was truncated then (the flags read on the host).
  bool needs_final_values(std::int64_t t, Agents a) const;
  // The critic on the last observations, episode tracking and reward scaling, GAE, the episode statistics
  // (the engine's for every agent too where `engine_statistics`).
  void finish_rollout(Agents a, bool engine_statistics);
  void episode_statistics(Agents a, bool engine_statistics);
  // Every epoch's minibatches (update) and the epoch's end; one minibatch: the gather, the forward passes,
  // the loss, the backward passes and Adam.
  void learn(Agents a);
  void update(std::int64_t epoch, std::int64_t m, Agents a),
      gather_minibatch(std::int64_t epoch, std::int64_t m, Agents a);
  void end_epoch(std::int64_t epoch, Agents a);
  void finish_iteration(Agents a);
  void collect(std::int64_t iteration);

  // Agent 0's (or agent a.first's) copy of an entry and the distance to the next agent's, in elements.
  template <class T>
  T* base(Slot<T> slot) const {
    return agent_arena_.data(slot);
  }
  template <class T>
  T* base(Slot<T> slot, Agents a) const {
    return agent_arena_.data(slot, a.first);
  }
  template <class T>
  std::int64_t stride(Slot<T> slot) const {
    return agent_arena_.replica_stride(slot);
  }
  // Every agent's copy of an entry, as the batched launchers take it (PerAgent<T> or PerAgent<const T>).
  template <class T>
  struct Copies {
    T* data;
    std::int64_t stride;
    template <class U>
    operator PerAgent<U>() const {
      return {data, stride};
    }
  };
  template <class T>
  Copies<T> each(Slot<T> slot) const {
    return {base(slot), stride(slot)};
  }
  template <class T>
  Copies<T> each(Slot<T> slot, Agents a) const {
    return {base(slot, a), stride(slot)};
  }
  template <class T>
  T* shared(Slot<T> slot) const {
    return shared_arena_.data(slot);
  }
  // Agent a.first's element of a [K] array.
  template <class T>
  T* per_agent(Slot<T> slot, Agents a) const {
    return shared_arena_.data(slot) + a.first;
  }
  void forward(const Mlp& mlp, Slot<float> activations, Slot<float> input, std::int64_t input_row, std::int64_t rows,
               Slot<float> output, std::int64_t output_offset, Agents a);
  // The policy's loss and its gradient with respect to the heads' outputs (and log_std), for the minibatch.
  void loss(std::int64_t epoch, std::int64_t m, Agents a);
  // Normalisation (rl/normalization.hpp), where the configs turn it on: counts every agent's observations
  // obs[row] into its statistics and normalises them (and the final observations where episodes ended at
  // step `flags_row`, or none for -1); or normalises only.
  void observe_normalized(std::int64_t row, std::int64_t flags_row, Agents a);
  void normalize_observations(std::int64_t row);
  void start_normalization();

  Engine& engine_;
  std::vector<TrainConfig> configs_;
  const TrainConfig& config_;  // agent 0's: the shapes every agent shares
  int agents_;
  int cpu_agent_threads_;  // the CPU's threads across the agents (1: every phase one call for all of them)
  std::int64_t num_steps_, num_envs_, obs_dim_, minibatch_size_, num_iterations_;
  Device device_;
  Stream stream_;
  ActorCritic network_;
  AgentBuffers b_;
  SharedBuffers s_;
  BufferArena agent_arena_;   // K copies of agent_table
  BufferArena shared_arena_;  // the [K] arrays
  IterationGraph graph_;
  HostMirror metrics_mirror_;  // two slots of [K] metrics: iteration i lands in slot i % 2
  std::int64_t enqueued_ = 0;
  std::int64_t collected_ = 0;
  std::vector<std::vector<IterationMetrics>> pending_;
};

}  // namespace surge::rl
