#pragma once
// The kernels of VecEnv's step (sim/vec_env.cuh): one agent's, and one launch for the environments of several
// agents (Engine::num_agents), and the body of the episode statistics' reductions.
// Include only from .cu files (scenarios/registry.cu instantiates the engines).
#include <cstdint>
#include <type_traits>

#include "sim/engine.hpp"
#include "sim/env_logic.cuh"
#include "sim/hd.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "sim/reduce_order.hpp"

namespace surge {

template <class S>
struct StepKernel {
  using Logic = EnvLogic<S>;
  typename S::State* states;
  typename S::Params* params;
  std::int32_t* episode_steps;
  float* episode_returns;
  std::uint64_t* rng_offsets;
  EpisodeTally* tallies;
  const typename EnvLogic<S>::Physics* physics;  // [K], read at resets
  std::uint64_t seed;
  std::int64_t first_env;        // the global index of environment 0: its random streams' number
  const std::int32_t* discrete;  // [N] or null
  const float* continuous;       // [N][action_dim] or null
  float* obs;                    // [N][obs_dim]
  float* reward;                 // [N]
  std::uint8_t* terminated;      // [N]
  std::uint8_t* truncated;       // [N]
  float* final_obs;              // [N][obs_dim] or null

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const auto action = Logic::load_action(discrete, continuous, i);
    reward[i] = Logic::step_env(seed, first_env + i, *physics, states[i], params[i], episode_steps[i],
                                episode_returns[i], rng_offsets[i], tallies[i], action, terminated[i], truncated[i],
                                obs + i * S::kObsDim, final_obs ? final_obs + i * S::kObsDim : nullptr);
  }
};

// The step of an engine of several agents, one launch for all K*N environments: environment i draws from its
// agent's seed (a device array) and resets under its agent's physics table. With one agent the engine keeps
// StepKernel, which neither divides nor reads a seed from memory (the body is StepKernel's with the agent's
// seed, stream and table: kept apart so that the one agent's kernel compiles exactly as before).
template <class S>
struct AgentStepKernel {
  StepKernel<S> env;
  AgentStreams streams;

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const std::int64_t agent = streams.agent(i);
    const auto action = EnvLogic<S>::load_action(env.discrete, env.continuous, i);
    env.reward[i] = EnvLogic<S>::step_env(
        streams.seeds[agent], streams.stream(i, agent), env.physics[agent], env.states[i], env.params[i],
        env.episode_steps[i], env.episode_returns[i], env.rng_offsets[i], env.tallies[i], action, env.terminated[i],
        env.truncated[i], env.obs + i * S::kObsDim, env.final_obs ? env.final_obs + i * S::kObsDim : nullptr);
  }
};

// Bytes from agent k's part of each of step()'s views to agent k+1's: the views' common stride (ActionView and
// StepViews::agent_stride_bytes), or the bytes of N rows for views of every environment's rows.
struct AgentViewStrides {
  std::int64_t actions, obs, reward, terminated, truncated, final_obs;
};

// Agent `agent`'s part of a view whose parts lie `stride_bytes` apart.
template <class T>
SURGE_HD_INLINE T* agent_part(T* data, std::int64_t agent, std::int64_t stride_bytes) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + agent * stride_bytes);
}

// The step of an engine of several agents whose actions or outputs lie at a per-agent distance: AgentStepKernel's
// body, one launch for all K*N environments, with environment k*N+j's action read from and its outputs written
// to row j of agent k's views. The engine's own per-environment buffers stay rows k*N+j, so every environment
// draws and steps exactly as in AgentStepKernel (kept apart so that the contiguous kernels compile as before).
template <class S>
struct StridedAgentStepKernel {
  StepKernel<S> env;
  AgentStreams streams;
  AgentViewStrides strides;

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const std::int64_t agent = streams.agent(i);
    const std::int64_t j = i - agent * streams.envs_per_agent;  // the row in agent k's views
    const std::int32_t* discrete = env.discrete ? agent_part(env.discrete, agent, strides.actions) : nullptr;
    const float* continuous = env.continuous ? agent_part(env.continuous, agent, strides.actions) : nullptr;
    const auto action = EnvLogic<S>::load_action(discrete, continuous, j);
    float* final_obs = env.final_obs ? agent_part(env.final_obs, agent, strides.final_obs) + j * S::kObsDim : nullptr;
    agent_part(env.reward, agent, strides.reward)[j] =
        EnvLogic<S>::step_env(streams.seeds[agent], streams.stream(i, agent), env.physics[agent], env.states[i],
                              env.params[i], env.episode_steps[i], env.episode_returns[i], env.rng_offsets[i],
                              env.tallies[i], action, agent_part(env.terminated, agent, strides.terminated)[j],
                              agent_part(env.truncated, agent, strides.truncated)[j],
                              agent_part(env.obs, agent, strides.obs) + j * S::kObsDim, final_obs);
  }
};

// `kernel` for environments offset, offset + 1, ...: Engine::step_agents for a range of agents.
template <class Kernel>
struct FromEnv {
  Kernel kernel;
  std::int64_t offset;
  SURGE_HD_INLINE void operator()(std::int64_t i) const { kernel(offset + i); }
};

// Engine::observe_agents: environment k*N+j's observation into row j of agent k's view, `stride_bytes` from
// agent 0's.
template <class S>
struct ObserveAgentsKernel {
  const typename S::State* states;  // [K*N]
  float* obs;                       // agent 0's [N][obs_dim]
  std::int64_t envs_per_agent;
  std::int64_t stride_bytes;

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const std::int64_t agent = i / envs_per_agent;
    S::observe(states[i], agent_part(obs, agent, stride_bytes) + (i - agent * envs_per_agent) * S::kObsDim);
  }
};

// Uniform random actions, each drawn from its environment's action stream: of `seed` numbered first_env + i
// with one agent (kAgents false: no division, no seed read from memory), else of environment i's agent.
template <class S, bool kAgents>
struct RandomActionKernel {
  Span<std::uint64_t> action_offsets;  // [K*N] words used of each env's action stream
  std::uint64_t seed;                  // one agent's
  AgentStreams streams;
  std::int32_t* discrete;  // [K*N] or null
  float* continuous;       // [K*N][action_dim] or null

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    std::uint64_t stream_seed = seed;
    std::int64_t env_stream = streams.first_env + i;
    if constexpr (kAgents) {
      const std::int64_t agent = streams.agent(i);
      stream_seed = streams.seeds[agent];
      env_stream = streams.stream(i, agent);
    }
    Rng rng(stream_seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(env_stream)),
            action_offsets[i]);
    const auto action = EnvLogic<S>::random_action(rng);
    if constexpr (S::kActionKind == ActionKind::Discrete)
      discrete[i] = action;
    else
      for (int k = 0; k < S::kActionDim; ++k) continuous[i * S::kActionDim + k] = action.v[k];
    action_offsets[i] = rng.offset();
  }
};

// Adds environment i's finished episodes to acc[kEpisodeStatsWidth]: the order-defining body of every
// reduction of the episode statistics.
struct TallySum {
  const EpisodeTally* tallies;
  SURGE_HD_INLINE void operator()(std::int64_t i, double* acc) const {
    acc[0] += tallies[i].episodes;
    acc[1] += tallies[i].return_sum;
    acc[2] += tallies[i].length_sum;
  }
};

// TallySum over agent s's environments, for parallel_reduce_segments (sim/parallel_segments.cuh).
struct AgentTallySum {
  const EpisodeTally* tallies;
  std::int64_t envs_per_agent;
  SURGE_HD_INLINE void operator()(std::int64_t s, std::int64_t i, double* acc) const {
    TallySum{tallies + s * envs_per_agent}(i, acc);
  }
};

}  // namespace surge
