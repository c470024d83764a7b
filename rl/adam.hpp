#pragma once
// Adam with global gradient-norm clipping, entirely on the device: the norm is reduced there, the
// clipping scale and the bias corrections are computed there, and the learning rate is read from
// device memory, so a whole training iteration can be enqueued (or captured in a CUDA graph) without
// the host waiting for anything.
#include <cstdint>

#include "rl/agent_hyper.hpp"
#include "rl/learner_configs.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// The optimiser's scalars, one struct in device memory.
struct OptimizerScalars {
  double learning_rate;          // read by every update; whoever schedules it writes it on the device
  double step;                   // updates taken so far (Adam's t)
  double grad_norm_sq;           // sum of squared gradients of the latest update, before clipping
  double grad_scale;             // clipping factor applied to the latest update (1 when not clipped)
  double step_size;              // learning_rate / (1 - beta1^t) of the latest update
  double bias_correction2_sqrt;  // sqrt(1 - beta2^t) of the latest update
  double frozen;                 // nonzero: updates are skipped (target-KL early stop); the step does not advance
};
// Seven doubles: a checkpoint keeps the struct as float64 [7].
static_assert(sizeof(OptimizerScalars) == 7 * sizeof(double));

// One Adam step over the flat buffers (all [count], the same ParamTable layout). Enqueues: the gradient
// norm reduction, a one-thread kernel that turns it and the step count into this update's scalars, and
// the element-wise update. Like PyTorch's clip_grad_norm_, gradients are scaled by
// min(1, max_grad_norm / (norm + 1e-6)). `scratch` holds reduce_scratch_size(device, 1) doubles.
// max_grad_norm and adam_eps are hyper[agent]'s (device memory); config gives beta1 and beta2.
void adam_step(const Stream& stream, const AdamConfig& config, const AgentHyper* hyper, int agent, Span<float> params,
               Span<const float> grads, Span<float> m, Span<float> v, OptimizerScalars* scalars, double* scratch);
// The same with config's max_grad_norm and adam_eps (put in a device array of their own; waits).
void adam_step(const Stream& stream, const AdamConfig& config, Span<float> params, Span<const float> grads,
               Span<float> m, Span<float> v, OptimizerScalars* scalars, double* scratch);

// The sum of squared gradients as a plain parallel_reduce computes it, into *out (device memory):
// adam_step's CPU path gives the same bits faster, and tests compare the two.
void gradient_norm_sq_reference(const Stream& stream, Span<const float> grads, double* scratch, double* out);

// The CPU's adam_step in pieces, the same bits, for a learner that updates its networks' parameters on
// separate threads (rl/ppo_loss_fused.cpp). The sum of squares runs over kCpuNormChunks chunks, chunk c
// holding grads [n c / kCpuNormChunks, n (c + 1) / kCpuNormChunks) summed in index order, and adds the
// chunks' sums in chunk order.
inline constexpr std::int64_t kCpuNormChunks = 64;
// Chunks [first, last) of the sum of squares of grads [n] into partial[c].
void cpu_squared_norm_chunks(const float* grads, std::int64_t n, std::int64_t first, std::int64_t last,
                             double* partial);
// This update's scalars from every chunk's sum partial[kCpuNormChunks] and the step count, as adam_step
// sets them.
void cpu_adam_scalars(const AdamConfig& config, const double* partial, OptimizerScalars* scalars);
// The element-wise update of parameters [begin, end) with this update's scalars.
void cpu_adam_update(const AdamConfig& config, const OptimizerScalars& scalars, float* params, const float* grads,
                     float* m, float* v, std::int64_t begin, std::int64_t end);

}  // namespace surge::rl
