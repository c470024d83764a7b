// GAE: one thread per environment walks its column of the rollout backwards.
#include "rl/gae.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

void compute_gae(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const AgentHyper* hyper,
                 int agent, const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                 const float* value, const float* final_value, float* advantage, float* returns) {
  const std::int64_t n = num_envs, steps = num_steps;
  parallel_for(stream, n, [=] SURGE_HD(std::int64_t i) {
    const float gamma = static_cast<float>(hyper[agent].gamma), lambda = static_cast<float>(hyper[agent].gae_lambda);
    float running = 0.0f;
    for (std::int64_t t = steps - 1; t >= 0; --t) {
      const std::int64_t slot = t * n + i;
      const bool ended_by_terminal = terminated[slot] != 0;
      const bool ended_by_time = !ended_by_terminal && truncated[slot] != 0;
      const float next_value = ended_by_terminal ? 0.0f : (ended_by_time ? final_value[slot] : value[slot + n]);
      const float delta = reward[slot] + gamma * next_value - value[slot];
      const float carry = (ended_by_terminal || ended_by_time) ? 0.0f : gamma * lambda * running;
      running = delta + carry;
      advantage[slot] = running;
      returns[slot] = running + value[slot];
    }
  });
}

void compute_gae(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, float gamma, float lambda,
                 const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated, const float* value,
                 const float* final_value, float* advantage, float* returns) {
  AgentHyper values{};
  values.gamma = gamma;
  values.gae_lambda = lambda;
  const OwnAgentHyper hyper(stream, values);
  compute_gae(stream, num_steps, num_envs, hyper.get(), 0, reward, terminated, truncated, value, final_value, advantage,
              returns);
}

}  // namespace surge::rl
