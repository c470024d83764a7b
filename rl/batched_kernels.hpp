#pragma once
// The learner's kernels with an agent dimension, for a batched learner of K agents (docs/agents.md, "The
// batched learner's pieces"). Agent k's copy of an array is at base + k * stride (PerAgent); its scalars
// come from device arrays indexed by k (hyper[k], optimizer[k], state[k], seeds[k]), never from kernel
// arguments. Each launcher is defined next to its per-agent twin (gae.cu, adam.cu, trainer_kernels.cu,
// categorical.cu), runs the same per-element code with k taken from the element index, and gives agent k
// the bits of the per-agent launcher on agent k's slices, on the CPU and on CUDA. On CUDA each is a fixed
// number of launches whatever K is.
#include <cstdint>

#include "rl/adam.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/learner_configs.hpp"
#include "rl/train_state.hpp"
#include "sim/device.hpp"
#include "sim/hd.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// K arrays of one layout: agent k's starts `stride` elements after agent k-1's. A [K][...] buffer has the
// stride of one agent's array; K equal arenas at a fixed distance have that distance.
template <class T>
struct PerAgent {
  T* data = nullptr;        // agent 0's array
  std::int64_t stride = 0;  // elements from one agent's array to the next
  SURGE_HD_INLINE T* operator[](std::int64_t agent) const { return data + agent * stride; }
};

// Doubles of scratch a batched reduction of `agents` segments of `width` needs on `device`
// (sim/parallel_segments.cuh's reduce_segments_scratch_size, for code that may not include it).
std::int64_t batched_reduce_scratch_doubles(Device device, std::int64_t agents, int width);

// compute_gae (rl/gae.hpp) for each agent: value [T+1][N], the others [T][N] per agent; gamma and lambda
// from hyper[k].
struct GaeBatch {
  PerAgent<const float> reward;
  PerAgent<const std::uint8_t> terminated;
  PerAgent<const std::uint8_t> truncated;
  PerAgent<const float> value;
  PerAgent<const float> final_value;
  PerAgent<float> advantage;
  PerAgent<float> returns;
};
void compute_gae_batched(const Stream& stream, int agents, std::int64_t num_steps, std::int64_t num_envs,
                         const AgentHyper* hyper, const GaeBatch& batch);

// gradient_norm_sq_reference (rl/adam.hpp) for each agent: the sum of squares of grads[k][count] into
// out[k * out_stride]. scratch holds batched_reduce_scratch_doubles(device, agents, 1) doubles.
void gradient_norm_sq_batched(const Stream& stream, int agents, PerAgent<const float> grads, std::int64_t count,
                              double* scratch, double* out, std::int64_t out_stride);

// adam_step (rl/adam.hpp) for each agent, with hyper[k]'s max_grad_norm and adam_eps and optimizer[k]'s
// scalars (learning rate, frozen flag; the step's scalars are written there). The gradient norms are a
// segmented reduction (on the CPU the per-agent chunks of adam_step), then one launch sets every agent's
// scalars and one updates all K * count parameters. scratch as for gradient_norm_sq_batched.
struct AdamBatch {
  PerAgent<float> params;
  PerAgent<const float> grads;
  PerAgent<float> m;
  PerAgent<float> v;
};
void adam_step_batched(const Stream& stream, const AdamConfig& config, int agents, const AgentHyper* hyper,
                       const AdamBatch& batch, std::int64_t count, OptimizerScalars* optimizer, double* scratch);

// begin_iteration and end_epoch (rl/trainer_kernels.hpp) for each agent: state[k], optimizer[k], hyper[k];
// end_epoch reads agent k's last minibatch's loss terms at last_terms[k]. One thread per agent.
void begin_iteration_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                             OptimizerScalars* optimizer, std::int64_t num_iterations);
void end_epoch_batched(const Stream& stream, int agents, const AgentHyper* hyper, TrainState* state,
                       OptimizerScalars* optimizer, PerAgent<const double> last_terms, std::int64_t minibatch_size);

// explained_variance_sums (rl/trainer_kernels.hpp) for each agent, into sums[k * 4 .. k * 4 + 3]. scratch
// holds batched_reduce_scratch_doubles(device, agents, 4) doubles.
void explained_variance_sums_batched(const Stream& stream, int agents, std::int64_t slots,
                                     PerAgent<const float> returns, PerAgent<const float> value, double* scratch,
                                     double* sums);

// sample_actions (rl/categorical.hpp) for each agent, agent k's draws from seeds[k] (device) and its own
// counter: what ActionDraw{seeds[k], draw_counter[k], draws_per_count, draw, first_env} gives a solo run.
struct BatchedActionDraw {
  const std::uint64_t* seeds = nullptr;         // [K], device
  PerAgent<const std::int64_t> draw_counter{};  // agent k's counter at draw_counter[k]; data null means 0
  std::int64_t draws_per_count = 0;
  std::int64_t draw = 0;
  std::int64_t first_env = 0;
};
void sample_actions_batched(const Stream& stream, int agents, PerAgent<const float> logits, std::int64_t n,
                            int num_actions, const BatchedActionDraw& draw, bool greedy, PerAgent<std::int32_t> actions,
                            PerAgent<float> logprob);

}  // namespace surge::rl
