#pragma once
// The CPU's fused small-MLP path in bf16 (precision = "bf16"): the same passes as rl/fused_mlp.hpp in
// float, with every product's inputs rounded to bf16 (round to nearest, ties to even) and the products
// summed in fp32. Weights are rounded once each time they change (once per optimiser step), activations
// and gradients tile by tile just before each product; biases, outputs, the activations kept for the
// backward pass and the gradients stay fp32. The kernel is AVX-512 BF16's vdpbf16ps where the CPU has it;
// a portable one does the same arithmetic in the same order on any CPU (for tests). Host only.
#include <cstdint>

namespace surge::rl {

class Mlp;

enum class Bf16Kernel : std::uint8_t { Native, Portable };

// Whether this build has the AVX-512 BF16 kernel and this CPU can run it (cpuid).
bool bf16_native_built();
bool bf16_native_supported();

// Round to nearest, ties to even (NaN stays NaN); and back, exactly.
std::uint16_t to_bf16(float value);
float from_bf16(std::uint16_t bits);

// As fused_mlp_forward / fused_mlp_backward (rl/fused_mlp.hpp) in float, params_version included. Native
// runs the portable kernel where !bf16_native_supported(): the same bits, slower.
void fused_mlp_bf16_forward(const Mlp& mlp, const float* params, const float* input, std::int64_t batch,
                            float* activations, float* output, Bf16Kernel kernel = Bf16Kernel::Native,
                            std::uint64_t params_version = 0);
void fused_mlp_bf16_backward(const Mlp& mlp, const float* params, const float* input, std::int64_t batch,
                             const float* activations, const float* d_output, float* grads,
                             Bf16Kernel kernel = Bf16Kernel::Native, std::uint64_t params_version = 0);

}  // namespace surge::rl
