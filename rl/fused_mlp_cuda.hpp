#pragma once
// CUDA's fully fused small-MLP passes (rl/fused_mlp_cuda.cu; layout in rl/fused_mlp_cuda_plan.hpp): a
// minibatch's forward or backward pass through the whole layer stack in one kernel, each block holding every
// layer's weights in shared memory and carrying tiles of rows through them, instead of a cuBLASLt call and an
// element-wise pass per layer. fp32 multiplies with FMAs; tf32 and bf16 on tensor cores (WMMA), summing
// in fp32. Float networks only; mlp_forward / mlp_backward take it on CUDA when Mlp::fused_on_cuda() and
// these say the network fits, and keep cuBLASLt otherwise. In a build without CUDA nothing fits.
#include <cstdint>

#include "sim/stream.hpp"

namespace surge::rl {

class Mlp;

// Whether the forward pass runs fused on `device`: the widths fit and the block's shared memory holds
// the plan.
bool fused_mlp_cuda_forward_fits(const Mlp& mlp, Device device);
// Whether the backward pass over `batch` rows does: as the forward pass, and `scratch_floats` (backward's
// scratch) holds at least one block's gradient sums.
bool fused_mlp_cuda_backward_fits(const Mlp& mlp, Device device, std::int64_t batch, std::int64_t scratch_floats);

// As mlp_forward: output [batch][out], hidden activations into the workspace at the Mlp's offsets.
void fused_mlp_cuda_forward(const Stream& stream, const Mlp& mlp, const float* params, const float* input,
                            std::int64_t batch, float* activations, float* output);

// As mlp_backward: every weight and bias gradient of `mlp` into grads. Blocks sum their rows into their own
// part of `scratch` ([scratch_floats]), and one more pass adds those sums in block order, so the result is
// the same bits from run to run.
void fused_mlp_cuda_backward(const Stream& stream, const Mlp& mlp, const float* params, const float* input,
                             std::int64_t batch, const float* activations, const float* d_output, float* grads,
                             float* scratch, std::int64_t scratch_floats);

}  // namespace surge::rl
