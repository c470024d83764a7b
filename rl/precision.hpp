#pragma once
// The learner's precision (config key `precision`): the format of every GEMM's or fused layer's inputs.
//   fp32: fp32 inputs, fp32 products and sums (the default).
//   tf32: CUDA only; cuBLASLt rounds fp32 inputs to TF32 (10-bit significands) on tensor cores
//         (CUBLAS_COMPUTE_32F_FAST_TF32), fp32 sums. The CPU has no TF32 arithmetic and refuses it.
//   bf16: weights and activations rounded to bf16 (8-bit significands, fp32's 8-bit exponent) as the
//         products' inputs, fp32 sums and outputs. The CPU runs it on AVX-512 BF16 (rl/fused_mlp_bf16.hpp)
//         and refuses it where the CPU or the build lacks that; CUDA on cuBLASLt's bf16 GEMMs (rl/mlp.hpp's
//         Bf16Operands), from compute capability 8.0.
// In every precision the master weights, loss, advantages, gradients and Adam's state stay fp32. bf16
// needs no loss scaling: its exponent range is fp32's, so small gradients do not underflow as in fp16.
// Plain C++: also read by nvcc.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/device.hpp"

namespace surge::rl {

enum class Precision : std::uint8_t { Fp32, Tf32, Bf16 };

bool is_precision_name(const std::string& name);
// "fp32", "tf32" or "bf16"; throws InputError otherwise.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision precision);

// The precisions the CPU backend runs on this machine in this build: fp32, and bf16 with AVX-512 BF16.
std::vector<std::string> cpu_precisions();
// Those a GPU of compute capability major.minor runs in a CUDA build: fp32, and tf32 and bf16 from 8.0.
std::vector<std::string> cuda_precisions(int cc_major);

class ActorCritic;
// Throws InputError (one line: the value and the way out) when `device` cannot run the network in its
// precision: tf32 on the CPU; bf16 on a CPU without AVX-512 BF16, in a build without its kernel, or with a
// network the fused path does not take (a layer wider than 256 or cpu_fused_mlp = false).
void check_precision(const ActorCritic& network, Device device);

}  // namespace surge::rl
