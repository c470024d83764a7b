#pragma once
// VecEnv<Scenario>: N environments of one scenario stepped together on one device, or K agents of N each in
// one engine (Engine::num_agents).
// Include only from the .cu file that instantiates the engines (scenarios/registry.cu).
//
// One environment's logic is EnvLogic (sim/env_logic.cuh), the step kernels are in sim/vec_env_kernels.cuh, the
// fused rollout of `surge bench env` is in sim/fused_rollout.cuh.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/buffer_table.hpp"
#include "sim/engine.hpp"
#include "sim/env_logic.cuh"
#include "sim/error.hpp"
#include "sim/fused_rollout.cuh"
#include "sim/hd.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/parallel.cuh"
#include "sim/parallel_segments.cuh"
#include "sim/philox.hpp"
#include "sim/reduce_order.hpp"
#include "sim/vec_env_kernels.cuh"

namespace surge {

template <class S>
ScenarioSpec make_spec() {
  ScenarioSpec spec;
  spec.name = S::kName;
  spec.gym_id = S::kGymId;
  spec.obs_dim = S::kObsDim;
  spec.state_dim = static_cast<int>(S::kStateNames.size());
  spec.action_kind = S::kActionKind;
  if constexpr (S::kActionKind == ActionKind::Discrete) {
    spec.num_actions = S::kNumActions;
  } else {
    spec.action_dim = S::kActionDim;
    spec.action_low.assign(S::kActionLow.begin(), S::kActionLow.end());
    spec.action_high.assign(S::kActionHigh.begin(), S::kActionHigh.end());
  }
  spec.max_episode_steps = S::kMaxEpisodeSteps;
  spec.reward_threshold = S::kRewardThreshold;
  for (const char* name : S::kStateNames) spec.state_names.emplace_back(name);
  static_assert(S::kObsNames.size() == S::kObsDim, "a scenario names each component of its observation");
  for (const char* name : S::kObsNames) spec.obs_names.emplace_back(name);
  spec.params.assign(S::kParams.begin(), S::kParams.end());
  spec.param_dtype = dtype_of<typename S::ParamType>;
  return spec;
}

template <class S>
class VecEnv final : public Engine {
 public:
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  using ParamType = typename S::ParamType;
  using Physics = typename Logic::Physics;
  static constexpr int kParamCount = Logic::kParamCount;
  static constexpr int kStateDim = Logic::kStateDim;

  // The buffers the constructor allocates for `agents` agents of N environments each, by name and size, so a
  // run can check they fit first.
  static MemoryPlan memory_plan(Device device, std::int64_t envs_per_agent, std::int64_t agents = 1) {
    MemoryPlan plan(device);
    Buffers unused;
    table(device, envs_per_agent, agents, unused).add_to(plan);
    return plan;
  }

  // Environment i draws its resets and random actions from the streams of global environment
  // first_env + i, so the engines of several ranks are, together, one engine of all their environments.
  VecEnv(Device device, std::int64_t num_envs, std::uint64_t seed, const PhysicsConfig& physics,
         std::int64_t first_env = 0)
      : VecEnv(device, num_envs, std::vector<EngineAgent>{{seed, physics}}, first_env) {}

  // K = agents.size() agents of N environments each (Engine::num_agents): environment k*N + i draws from the
  // streams of global environment first_env + i under agents[k]'s seed and resets under its physics.
  VecEnv(Device device, std::int64_t envs_per_agent, std::vector<EngineAgent> agents, std::int64_t first_env = 0)
      : spec_(make_spec<S>()),
        device_(device),
        num_agents_(static_cast<std::int64_t>(agents.size())),
        envs_per_agent_(envs_per_agent),
        num_envs_(envs_per_agent * num_agents_),
        first_env_(first_env),
        agents_(std::move(agents)) {
    if (envs_per_agent <= 0)
      throw InputError("the number of environments must be at least 1, got " + std::to_string(envs_per_agent));
    if (agents_.empty()) throw InputError("an engine needs at least one agent, got none");
    SURGE_CHECK(first_env >= 0, "negative first environment index");
    for (const EngineAgent& agent : agents_) agent.physics.validate(spec_);
    Stream stream(device);
    arena_ = BufferArena(device, table(device, envs_per_agent_, num_agents_, b_), stream);  // zeroed: offsets at 0
    std::vector<std::uint64_t> seeds;
    for (const EngineAgent& agent : agents_) seeds.push_back(agent.seed);
    from_host(arena_[b_.seeds], seeds, stream);
    for (std::int64_t k = 0; k < num_agents_; ++k) write_physics(k, agents_[k].physics, stream);
    reset(stream);
    stream.synchronize();
  }

  const ScenarioSpec& spec() const override { return spec_; }
  Device device() const override { return device_; }
  std::int64_t num_envs() const override { return num_envs_; }
  std::int64_t num_agents() const override { return num_agents_; }
  std::int64_t first_env() const override { return first_env_; }
  std::uint64_t agent_seed(std::int64_t agent) const override { return agents_.at(check_agent(agent)).seed; }
  const PhysicsConfig& agent_physics(std::int64_t agent) const override {
    return agents_.at(check_agent(agent)).physics;
  }

  void set_physics(const PhysicsConfig& physics, const Stream& stream) override {
    check_stream(stream);
    physics.validate(spec_);
    for (std::int64_t k = 0; k < num_agents_; ++k) write_physics(k, physics, stream);
    for (EngineAgent& agent : agents_) agent.physics = physics;
  }
  void set_agent_physics(std::int64_t agent, const PhysicsConfig& physics, const Stream& stream) override {
    check_stream(stream);
    check_agent(agent);
    physics.validate(spec_);
    write_physics(agent, physics, stream);
    agents_[agent].physics = physics;
  }

  void reset(const Stream& stream) override {
    check_stream(stream);
    const auto states = arena_[b_.states];
    const auto params = arena_[b_.params];
    const auto steps = arena_[b_.episode_steps];
    const auto returns = arena_[b_.episode_returns];
    const auto offsets = arena_[b_.rng_offsets];
    const auto* tables = arena_.data(b_.physics);
    const AgentStreams streams = agent_streams();
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) {
      const std::int64_t agent = streams.agent(i);
      Logic::reset_env(streams.seeds[agent], streams.stream(i, agent), tables[agent], states[i], params[i], offsets[i]);
      steps[i] = 0;
      returns[i] = 0.0f;
    });
    clear_episode_stats(stream);
  }

  void observe(Span<float> obs, const Stream& stream) const override {
    check_stream(stream);
    check_view(obs, num_envs_ * S::kObsDim, "obs");
    const auto states = arena_[b_.states];
    float* out = obs.data;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) { S::observe(states[i], out + i * S::kObsDim); });
  }

  void observe_agents(Span<float> agent0_obs, std::int64_t agent_stride_bytes, const Stream& stream) const override {
    check_stream(stream);
    check_agent_view(agent0_obs, S::kObsDim, agent_stride_bytes, "obs");
    if (agent_stride_bytes == 0 || num_agents_ == 1) return observe(agent0_obs, stream);
    parallel_for(stream, num_envs_,
                 ObserveAgentsKernel<S>{arena_.data(b_.states), agent0_obs.data, envs_per_agent_, agent_stride_bytes});
  }

  void step(const ActionView& actions, const StepViews& out, const Stream& stream) override {
    check_stream(stream);
    AgentViewStrides strides{};
    const StepKernel<S> kernel = step_kernel(actions, out, strides);
    if (num_agents_ == 1)
      parallel_for(stream, num_envs_, kernel);
    else if (actions.agent_stride_bytes == 0 && out.agent_stride_bytes == 0)
      parallel_for(stream, num_envs_, AgentStepKernel<S>{kernel, agent_streams()});
    else
      parallel_for(stream, num_envs_, StridedAgentStepKernel<S>{kernel, agent_streams(), strides});
  }

  void step_agents(std::int64_t first, std::int64_t count, const ActionView& actions, const StepViews& out,
                   const Stream& stream) override {
    SURGE_CHECK(first >= 0 && count >= 0 && first + count <= num_agents_,
                "agents " + std::to_string(first) + " to " + std::to_string(first + count) + " of an engine of " +
                    std::to_string(num_agents_));
    if (first == 0 && count == num_agents_) return step(actions, out, stream);  // step()'s kernels, as they were
    check_stream(stream);
    AgentViewStrides strides{};
    const StepKernel<S> kernel = step_kernel(actions, out, strides);
    if (count == 0) return;
    const std::int64_t envs = count * envs_per_agent_, offset = first * envs_per_agent_;
    if (actions.agent_stride_bytes == 0 && out.agent_stride_bytes == 0)
      parallel_for(stream, envs, FromEnv<AgentStepKernel<S>>{{kernel, agent_streams()}, offset});
    else
      parallel_for(stream, envs, FromEnv<StridedAgentStepKernel<S>>{{kernel, agent_streams(), strides}, offset});
  }

  void rollout_random(std::int64_t num_steps, const RolloutViews& out, const Stream& stream) override {
    check_stream(stream);
    SURGE_CHECK(num_steps >= 0, "negative step count");
    SURGE_CHECK(first_env_ == 0, "the fused random rollout numbers its environments from 0");
    const std::int64_t n = num_envs_;
    check_view(out.obs, num_steps * n * S::kObsDim, "obs");
    check_view(out.reward, num_steps * n, "reward");
    check_view(out.terminated, num_steps * n, "terminated");
    check_view(out.truncated, num_steps * n, "truncated");
    if (num_agents_ > 1) return rollout_stepped(num_steps, out, stream);
    const auto states = arena_[b_.states];
    const auto params = arena_[b_.params];
    const auto steps = arena_[b_.episode_steps];
    const auto returns = arena_[b_.episode_returns];
    const auto offsets = arena_[b_.rng_offsets];
    const auto action_offsets = arena_[b_.action_offsets];
    const auto tallies = arena_[b_.tallies];
    const auto rollout_bytes = static_cast<std::int64_t>(out.obs.bytes() + out.reward.bytes() + out.terminated.bytes() +
                                                         out.truncated.bytes());
    const bool streaming = device_.is_cpu() && rollout_bytes >= kStreamingRolloutBytes;
    RolloutTile<S> tile{states.data,
                        params.data,
                        steps.data,
                        returns.data,
                        offsets.data,
                        action_offsets.data,
                        tallies.data,
                        out.obs.data,
                        out.reward.data,
                        out.terminated.data,
                        out.truncated.data,
                        n,
                        num_steps,
                        agents_[0].seed,
                        arena_.data(b_.physics),
                        streaming};
    // Environments stay in registers (GPU) or in a small tile on the stack (CPU) for all T steps; only the
    // rollout outputs touch memory. On the CPU a tile of envs advances in lockstep, vectorised across
    // its lanes, and each step's writes are contiguous.
    if (device_.is_cpu()) {
      constexpr int kLanes = 64;
      parallel_for(stream, (n + kLanes - 1) / kLanes, RolloutLanesKernel<S, kLanes>{tile}, kLanes * num_steps);
    } else {
      parallel_for(stream, n, RolloutTileKernel<S, 1>{tile});
    }
  }

  void random_actions(Span<std::int32_t> discrete, Span<float> continuous, const Stream& stream) override {
    check_stream(stream);
    check_actions(ActionView{discrete, continuous}, num_envs_);
    const auto offsets = arena_[b_.action_offsets];
    if (num_agents_ == 1)
      parallel_for(
          stream, num_envs_,
          RandomActionKernel<S, false>{offsets, agents_[0].seed, agent_streams(), discrete.data, continuous.data});
    else
      parallel_for(stream, num_envs_,
                   RandomActionKernel<S, true>{offsets, 0, agent_streams(), discrete.data, continuous.data});
  }

  void transition(Span<const float> states_in, const ActionView& actions, Span<float> next_states, Span<float> obs,
                  Span<float> reward, Span<std::uint8_t> terminated, const Stream& stream) const override {
    check_stream(stream);
    check_actions(actions, num_envs_);
    check_view(states_in, num_envs_ * kStateDim, "states");
    check_view(next_states, num_envs_ * kStateDim, "next_states");
    check_view(obs, num_envs_ * S::kObsDim, "obs");
    check_view(reward, num_envs_, "reward");
    check_view(terminated, num_envs_, "terminated");
    const auto params = arena_[b_.params];
    const State* in = reinterpret_cast<const State*>(states_in.data);
    State* next = reinterpret_cast<State*>(next_states.data);
    const std::int32_t* discrete = actions.discrete.data;
    const float* continuous = actions.continuous.data;
    float* obs_out = obs.data;
    float* reward_out = reward.data;
    std::uint8_t* terminated_out = terminated.data;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) {
      State state = in[i];
      const StepResult result = S::step(state, params[i], Logic::load_action(discrete, continuous, i));
      next[i] = state;
      S::observe(state, obs_out + i * S::kObsDim);
      reward_out[i] = result.reward;
      terminated_out[i] = result.terminated ? 1 : 0;
    });
  }

  void reduce_episode_stats(Span<double> out, const Stream& stream) override {
    check_stream(stream);
    check_view(out, num_agents_ * kEpisodeStatsWidth, "episode stats");
    const EpisodeTally* tallies = arena_.data(b_.tallies);
    double* scratch = arena_.data(b_.reduce_scratch);
    if (num_agents_ == 1) {
      parallel_reduce<kEpisodeStatsWidth>(stream, num_envs_, TallySum{tallies}, scratch, out.data);
    } else {
      // One pass for all agents (on CUDA one launch pair), each agent's sums in the order of an engine of its own.
      parallel_reduce_segments<kEpisodeStatsWidth>(stream, num_agents_, envs_per_agent_,
                                                   AgentTallySum{tallies, envs_per_agent_}, scratch, out.data);
    }
  }

  void clear_episode_stats(const Stream& stream) override {
    check_stream(stream);
    const auto tallies = arena_[b_.tallies];
    zero_bytes(tallies.data, device_, tallies.bytes(), stream);
  }

  Span<float> states() override {
    return {reinterpret_cast<float*>(arena_.data(b_.states)), num_envs_ * kStateDim, device_};
  }
  TensorView params() override {
    return TensorView::of(
        Span<ParamType>{reinterpret_cast<ParamType*>(arena_.data(b_.params)), num_envs_ * kParamCount, device_},
        {num_envs_, kParamCount});
  }
  Span<std::int32_t> episode_steps() override { return arena_[b_.episode_steps]; }
  Span<float> episode_returns() override { return arena_[b_.episode_returns]; }
  Span<std::uint64_t> rng_offsets() override { return arena_[b_.rng_offsets]; }
  std::size_t device_bytes() const override { return arena_.device_bytes(); }
  const BufferArena& buffers() const override { return arena_; }

 private:
  // step()'s kernel over its views (checked; `strides` set to their per-agent distances).
  StepKernel<S> step_kernel(const ActionView& actions, const StepViews& out, AgentViewStrides& strides) const {
    const std::int64_t s = out.agent_stride_bytes;
    strides = {check_agent_actions(actions),
               check_agent_view(out.obs, S::kObsDim, s, "obs"),
               check_agent_view(out.reward, 1, s, "reward"),
               check_agent_view(out.terminated, 1, s, "terminated"),
               check_agent_view(out.truncated, 1, s, "truncated"),
               out.final_obs.empty() ? 0 : check_agent_view(out.final_obs, S::kObsDim, s, "final_obs")};
    return {arena_.data(b_.states),
            arena_.data(b_.params),
            arena_.data(b_.episode_steps),
            arena_.data(b_.episode_returns),
            arena_.data(b_.rng_offsets),
            arena_.data(b_.tallies),
            arena_.data(b_.physics),
            agents_[0].seed,
            first_env_,
            actions.discrete.data,
            actions.continuous.data,
            out.obs.data,
            out.reward.data,
            out.terminated.data,
            out.truncated.data,
            out.final_obs.data};
  }

  struct Buffers {
    Slot<State> states;
    Slot<Params> params;
    Slot<std::int32_t> episode_steps;
    Slot<float> episode_returns;
    Slot<std::uint64_t> rng_offsets, action_offsets;
    Slot<EpisodeTally> tallies;
    Slot<Physics> physics;
    Slot<std::uint64_t> seeds;
    Slot<double> reduce_scratch;
  };
  // kSaved marks what a resumable checkpoint keeps of the environments. Per-env buffers hold all K*N
  // environments, agent k's at rows k*N .. k*N+N-1.
  static BufferTable table(Device device, std::int64_t envs_per_agent, std::int64_t agents, Buffers& b) {
    const std::int64_t n = envs_per_agent * agents;
    BufferTable t;
    b.states = t.add<State>(DType::Float32, "engine.state", {n}, "[N][state_dim]", "each env's physics state", kSaved);
    b.params = t.add<Params>(dtype_of<ParamType>, "engine.params", {n}, "[N][params]",
                             "each env's physics parameters for its current episode", kSaved);
    b.episode_steps =
        t.add<std::int32_t>("engine.episode_steps", {n}, "[N]", "steps taken in the current episode", kSaved);
    b.episode_returns =
        t.add<float>("engine.episode_returns", {n}, "[N]", "return of the current episode so far", kSaved);
    b.rng_offsets =
        t.add<std::uint64_t>("engine.rng_offsets", {n}, "[N]", "words used of each env's reset stream", kSaved);
    b.action_offsets =
        t.add<std::uint64_t>("engine.action_offsets", {n}, "[N]", "words used of each env's random-action stream");
    b.tallies =
        t.add<EpisodeTally>(DType::Float64, "engine.tallies", {n}, "[N][3]", "finished episodes since the last clear");
    b.physics = t.add<Physics>(dtype_of<ParamType>, "engine.physics", {agents},
                               agents == 1 ? "[1][4][params]" : "[K][4][params]",
                               "what resets draw the parameters from: value, low, high, randomised (1 or 0)");
    b.seeds = t.add<std::uint64_t>("engine.seeds", {agents}, agents == 1 ? "[1]" : "[K]",
                                   "each agent's seed, keying its envs' streams");
    // Several agents: parallel_reduce_segments' partial sums, each agent's blocks (CUDA) or chunks (CPU).
    const std::int64_t scratch = agents == 1 ? reduce_scratch_size(device, kEpisodeStatsWidth)
                                             : reduce_segments_scratch_size(device, agents, kEpisodeStatsWidth);
    b.reduce_scratch = t.add<double>("engine.reduce_scratch", {scratch}, agents == 1 ? "[SMs*4][3]" : "[K][chunks][3]",
                                     "partial sums of the episode statistics");
    return t;
  }

  // The table of `physics` (validated) into agent k's rows of engine.physics, ordered on `stream`; waits, so
  // the host table may go.
  void write_physics(std::int64_t agent, const PhysicsConfig& physics, const Stream& stream) {
    Physics table{};
    for (int j = 0; j < kParamCount; ++j) {
      table.value[j] = static_cast<ParamType>(physics.value[j]);
      table.low[j] = static_cast<ParamType>(physics.low[j]);
      table.high[j] = static_cast<ParamType>(physics.high[j]);
      table.randomized[j] = physics.randomized[j] ? ParamType(1) : ParamType(0);
    }
    copy_bytes(arena_.data(b_.physics) + agent, device_, &table, Device::cpu(), sizeof table, stream);
    stream.synchronize();
  }

  // rollout_random() for several agents: random_actions() and step() per step, the same bits as each agent's
  // fused rollout alone, since the fused tiles number their streams by the environment's index in the rollout
  // (an agent's own index only with one agent). Waits for the stream: it frees its action buffer.
  void rollout_stepped(std::int64_t num_steps, const RolloutViews& out, const Stream& stream) {
    const std::int64_t n = num_envs_;
    const bool discrete = S::kActionKind == ActionKind::Discrete;
    DeviceBuffer<std::int32_t> discrete_actions(device_, discrete ? n : 0);
    DeviceBuffer<float> continuous_actions(device_, discrete ? 0 : n * action_words<S>());
    for (std::int64_t t = 0; t < num_steps; ++t) {
      random_actions(discrete_actions.span(), continuous_actions.span(), stream);
      step(ActionView{discrete_actions.cspan(), continuous_actions.cspan()},
           StepViews{out.obs.slice(t * n * S::kObsDim, n * S::kObsDim),
                     out.reward.slice(t * n, n),
                     out.terminated.slice(t * n, n),
                     out.truncated.slice(t * n, n),
                     {}},
           stream);
    }
    stream.synchronize();
  }

  AgentStreams agent_streams() const { return {arena_.data(b_.seeds), envs_per_agent_, first_env_}; }
  std::int64_t check_agent(std::int64_t agent) const {
    SURGE_CHECK(agent >= 0 && agent < num_agents_,
                "agent " + std::to_string(agent) + " of an engine of " + std::to_string(num_agents_) + " agents");
    return agent;
  }

  void check_stream(const Stream& stream) const {
    SURGE_CHECK(stream.device() == device_,
                "stream on " + stream.device().str() + " used with an engine on " + device_.str());
  }
  template <class T>
  void check_view(Span<T> view, std::int64_t expected, const char* what) const {
    SURGE_CHECK(view.device == device_,
                std::string(what) + " view is on " + view.device.str() + ", the engine on " + device_.str());
    SURGE_CHECK(view.size == expected, std::string(what) + " view holds " + std::to_string(view.size) +
                                           " elements, expected " + std::to_string(expected));
  }
  // A view of every environment's rows of `width` elements (stride 0), or agent 0's part of views `stride` bytes
  // apart; returns the bytes from one agent's part to the next.
  template <class T>
  std::int64_t check_agent_view(Span<T> view, std::int64_t width, std::int64_t stride, const char* what) const {
    const std::int64_t part = envs_per_agent_ * width, part_bytes = part * static_cast<std::int64_t>(sizeof(T));
    check_view(view, stride == 0 ? num_envs_ * width : part, what);
    if (stride == 0) return part_bytes;
    SURGE_CHECK(stride >= part_bytes && stride % static_cast<std::int64_t>(sizeof(T)) == 0,
                std::string(what) + " views " + std::to_string(stride) + " bytes apart: each agent's part takes " +
                    std::to_string(part_bytes) + " bytes of " + std::to_string(sizeof(T)) + "-byte elements");
    return stride;
  }
  std::int64_t check_agent_actions(const ActionView& actions) const {
    if constexpr (S::kActionKind == ActionKind::Discrete)
      return check_agent_view(actions.discrete, 1, actions.agent_stride_bytes, "discrete actions");
    else
      return check_agent_view(actions.continuous, S::kActionDim, actions.agent_stride_bytes, "continuous actions");
  }
  void check_actions(const ActionView& actions, std::int64_t n) const {
    SURGE_CHECK(actions.agent_stride_bytes == 0, "actions at a per-agent distance are for step() only");
    if constexpr (S::kActionKind == ActionKind::Discrete)
      check_view(actions.discrete, n, "discrete actions");
    else
      check_view(actions.continuous, n * S::kActionDim, "continuous actions");
  }

  ScenarioSpec spec_;
  Device device_;
  std::int64_t num_agents_;      // K
  std::int64_t envs_per_agent_;  // N
  std::int64_t num_envs_;        // K*N
  std::int64_t first_env_;
  std::vector<EngineAgent> agents_;  // each agent's seed and physics, as the device buffers hold them
  Buffers b_;
  BufferArena arena_;  // the table above, one allocation
};

}  // namespace surge
