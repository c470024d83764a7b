#pragma once
// Generalised advantage estimation over a rollout, with Gymnasium's time-limit semantics.
#include <cstdint>

#include "rl/agent_hyper.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// Per environment, backwards over t = T-1 .. 0:
//   next_value = 0 if terminated[t]; else final_value[t] if truncated[t]; else value[t+1]
//   delta      = reward[t] + gamma * next_value - value[t]
//   adv[t]     = delta + gamma * lambda * (episode continues after t ? adv[t+1] : 0)
//   ret[t]     = adv[t] + value[t]
// A terminated episode has no future; a truncated one does, valued at V(final observation). When both
// flags are set on the same step, terminated wins. Layout: value [T+1][N] (value[T] = V(obs[T]) bootstraps
// the unfinished tails), reward, flags, final_value, adv, ret [T][N]. gamma and lambda are
// hyper[agent].gamma and .gae_lambda (device memory), each as a float.
void compute_gae(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const AgentHyper* hyper,
                 int agent, const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                 const float* value, const float* final_value, float* advantage, float* returns);
// The same with the two scalars given (put in a device array of their own, OwnAgentHyper; waits).
void compute_gae(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, float gamma, float lambda,
                 const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated, const float* value,
                 const float* final_value, float* advantage, float* returns);

}  // namespace surge::rl
