#pragma once
// The layout of CUDA's fully fused small-MLP kernels (rl/fused_mlp_cuda.cu): which networks they take, how a
// block's shared memory is carved, how many blocks a pass runs and where its per-block gradient sums go.
// Plain host code, built into the CPU tests too (tests/test_fused_mlp_cuda_plan.cpp); the kernels receive
// the plan by value.
//
// One block holds the whole layer stack: every layer's weights (fp32, or bf16 bits in bf16; W^T [in_p][out_p]
// in the forward pass, W [out_p][in_p] in the backward pass, so that both read B row-major) and b [out_p], widths
// padded to 16 with zeros (a tensor-core tile), plus fp32 activation tiles of kCudaFusedMlpTileRows rows by the widest
// padded width, and in bf16 the same tiles again as bf16 operands. Padded columns stay zero through every layer
// (tanh(0) = relu(0) = 0) and padded rows are zero inputs, so no product is masked.
#include <algorithm>
#include <cstdint>

#include "rl/mlp.hpp"
#include "rl/precision.hpp"
#include "sim/hd.hpp"

namespace surge::rl {

inline constexpr int kCudaFusedMlpMaxWidth = 128;  // every layer's input and output
inline constexpr int kCudaFusedMlpMaxLayers = 6;
inline constexpr int kCudaFusedMlpTileRows = 64;  // rows a block carries through the stack at once
inline constexpr int kCudaFusedMlpThreads = 256;  // eight warps
inline constexpr int kCudaFusedMlpRowsPerThread = 4;

constexpr int padded_to_16(int n) { return (n + 15) / 16 * 16; }
constexpr std::int64_t aligned_to_128(std::int64_t bytes) { return (bytes + 127) / 128 * 128; }

struct FusedMlpCudaPlan {
  int layers = 0;
  int widest = 0;  // the widest padded width, input or output: the tiles' leading dimension
  Precision precision = Precision::Fp32;
  Activation activation = Activation::Tanh;
  int in[kCudaFusedMlpMaxLayers] = {}, out[kCudaFusedMlpMaxLayers] = {};
  int in_p[kCudaFusedMlpMaxLayers] = {}, out_p[kCudaFusedMlpMaxLayers] = {};
  std::int64_t weight_offset[kCudaFusedMlpMaxLayers] = {}, bias_offset[kCudaFusedMlpMaxLayers] = {};  // in params
  std::int64_t activation_offset[kCudaFusedMlpMaxLayers] = {};  // hidden layer l's [batch][out] in the workspace
  // Shared memory, in bytes from the start of the block's dynamic allocation, each 128-byte aligned.
  std::int64_t weight_at[kCudaFusedMlpMaxLayers] = {}, bias_at[kCudaFusedMlpMaxLayers] = {};
  std::int64_t tile_at[3] = {};  // fp32 [rows][widest]: forward uses two, backward three
  // bf16 only: bf16 copies [rows][widest] of the products' inputs, one in the forward pass (after its two
  // tiles), two in the backward pass (after its three).
  std::int64_t forward_operand_at = 0, backward_operand_at[2] = {};
  std::int64_t forward_bytes = 0, backward_bytes = 0;
  // One block's gradient sums, in floats: per layer dW [out_p][in_p], then db [out_p] (16-float aligned).
  std::int64_t partial_weight[kCudaFusedMlpMaxLayers] = {}, partial_bias[kCudaFusedMlpMaxLayers] = {};
  std::int64_t partial_floats = 0;

  bool bf16() const { return precision == Precision::Bf16; }
};

// The plan for `mlp` over `batch` rows (batch only places the hidden activations in the workspace).
// Meaningful only when fused_mlp_cuda_shape_fits(mlp).
inline FusedMlpCudaPlan fused_mlp_cuda_plan(const Mlp& mlp, std::int64_t batch) {
  FusedMlpCudaPlan plan;
  plan.layers = mlp.num_layers();
  plan.precision = mlp.precision();
  plan.activation = mlp.activation();
  const std::int64_t weight_bytes = plan.bf16() ? 2 : 4;
  std::int64_t at = 0, partial = 0;
  for (int l = 0; l < plan.layers; ++l) {
    plan.in[l] = mlp.layer_in(l);
    plan.out[l] = mlp.layer_out(l);
    plan.in_p[l] = padded_to_16(plan.in[l]);
    plan.out_p[l] = padded_to_16(plan.out[l]);
    plan.widest = std::max({plan.widest, plan.in_p[l], plan.out_p[l]});
    plan.weight_offset[l] = mlp.weight_offset(l);
    plan.bias_offset[l] = mlp.bias_offset(l);
    if (l + 1 < plan.layers) plan.activation_offset[l] = mlp.activation_offset(l, batch);
    plan.weight_at[l] = at;
    at = aligned_to_128(at + std::int64_t{plan.out_p[l]} * plan.in_p[l] * weight_bytes);
    plan.bias_at[l] = at;
    at = aligned_to_128(at + std::int64_t{plan.out_p[l]} * 4);
    plan.partial_weight[l] = partial;
    partial += std::int64_t{plan.out_p[l]} * plan.in_p[l];
    plan.partial_bias[l] = partial;
    partial += plan.out_p[l];
  }
  plan.partial_floats = partial;
  const std::int64_t tile = aligned_to_128(std::int64_t{kCudaFusedMlpTileRows} * plan.widest * 4);
  const std::int64_t operand = plan.bf16() ? aligned_to_128(std::int64_t{kCudaFusedMlpTileRows} * plan.widest * 2) : 0;
  for (int t = 0; t < 3; ++t) plan.tile_at[t] = at + t * tile;
  plan.forward_operand_at = at + 2 * tile;
  plan.forward_bytes = at + 2 * tile + operand;
  for (int t = 0; t < 2; ++t) plan.backward_operand_at[t] = at + 3 * tile + t * operand;
  plan.backward_bytes = at + 3 * tile + 2 * operand;
  return plan;
}

// Whether the kernels take `mlp`'s shape: at most kCudaFusedMlpMaxLayers layers, every width at most
// kCudaFusedMlpMaxWidth.
inline bool fused_mlp_cuda_shape_fits(const Mlp& mlp) {
  if (mlp.num_layers() > kCudaFusedMlpMaxLayers) return false;
  for (int l = 0; l < mlp.num_layers(); ++l)
    if (mlp.layer_in(l) > kCudaFusedMlpMaxWidth || mlp.layer_out(l) > kCudaFusedMlpMaxWidth) return false;
  return true;
}

// Whether a pass fits a block's shared memory (`shared_limit` bytes, the device's opt-in maximum).
inline bool fused_mlp_cuda_fits(const FusedMlpCudaPlan& plan, std::int64_t shared_limit) {
  return std::max(plan.forward_bytes, plan.backward_bytes) <= shared_limit;
}

// Where entry j of a block's gradient sums goes in the parameter table; -1 for the padding.
SURGE_HD_INLINE std::int64_t fused_mlp_cuda_sum_target(const FusedMlpCudaPlan& plan, std::int64_t j) {
  for (int l = 0; l < plan.layers; ++l) {
    if (j >= plan.partial_bias[l] + plan.out_p[l]) continue;
    if (j >= plan.partial_bias[l]) {
      const std::int64_t o = j - plan.partial_bias[l];
      return o < plan.out[l] ? plan.bias_offset[l] + o : -1;
    }
    const std::int64_t o = (j - plan.partial_weight[l]) / plan.in_p[l], i = (j - plan.partial_weight[l]) % plan.in_p[l];
    return o < plan.out[l] && i < plan.in[l] ? plan.weight_offset[l] + o * plan.in[l] + i : -1;
  }
  return -1;
}

inline std::int64_t fused_mlp_cuda_tiles(std::int64_t batch) {
  return (batch + kCudaFusedMlpTileRows - 1) / kCudaFusedMlpTileRows;
}

// Blocks for a pass over `batch` rows: enough to fill the device (`resident` blocks at once), no more than
// there are tiles; the backward pass also no more than `scratch_floats` holds sums of (0: it cannot run).
inline std::int64_t fused_mlp_cuda_forward_blocks(std::int64_t batch, std::int64_t resident) {
  return std::max<std::int64_t>(1, std::min(fused_mlp_cuda_tiles(batch), resident));
}
inline std::int64_t fused_mlp_cuda_backward_blocks(const FusedMlpCudaPlan& plan, std::int64_t batch,
                                                   std::int64_t resident, std::int64_t scratch_floats) {
  return std::min(fused_mlp_cuda_forward_blocks(batch, resident), scratch_floats / plan.partial_floats);
}

}  // namespace surge::rl
