// GAE: one thread per environment walks its column of the rollout backwards.
#include "rl/gae.hpp"

#include "rl/batched_kernels.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {

namespace detail {

// Column i of agent i / num_envs: environment i % num_envs of that agent's rollout (kOneAgent: column i of
// agent 0, found without a division).
template <bool kOneAgent>
struct GaeColumns {
  GaeBatch batch;
  const AgentHyper* hyper;
  std::int64_t steps, n;
  SURGE_HD_INLINE void operator()(std::int64_t column) const {
    const std::int64_t agent = kOneAgent ? 0 : column / n, i = kOneAgent ? column : column % n;
    const float gamma = static_cast<float>(hyper[agent].gamma), lambda = static_cast<float>(hyper[agent].gae_lambda);
    const float *reward = batch.reward[agent], *value = batch.value[agent], *final_value = batch.final_value[agent];
    const std::uint8_t *terminated = batch.terminated[agent], *truncated = batch.truncated[agent];
    float *advantage = batch.advantage[agent], *returns = batch.returns[agent];
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
  }
};

}  // namespace detail

void compute_gae_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                         const AgentHyper* hyper, const GaeBatch& batch) {
  parallel_for(stream, agents * num_envs, detail::GaeColumns<false>{batch, hyper, num_steps, num_envs}, num_steps);
}

void compute_gae(const Stream& stream, std::int64_t num_steps, std::int64_t num_envs, const AgentHyper* hyper,
                 int agent, const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated,
                 const float* value, const float* final_value, float* advantage, float* returns) {
  const GaeBatch one{{reward, 0},      {terminated, 0}, {truncated, 0}, {value, 0},
                     {final_value, 0}, {advantage, 0},  {returns, 0}};
  parallel_for(stream, num_envs, detail::GaeColumns<true>{one, hyper + agent, num_steps, num_envs});
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
