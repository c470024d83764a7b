// The layout CUDA's fused MLP kernels follow (rl/fused_mlp_cuda_plan.hpp), checked on the CPU: padded
// widths, a shared-memory carve-up whose regions are aligned, disjoint and inside the bytes a pass asks
// for, gradient sums that hold every weight and bias once, and the number of blocks a pass runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "rl/fused_mlp_cuda.hpp"
#include "rl/fused_mlp_cuda_plan.hpp"
#include "rl/mlp.hpp"
#include "rl/param_table.hpp"

using namespace surge::rl;

namespace {

using Region = std::pair<std::int64_t, std::int64_t>;  // [begin, end) in bytes

// The regions a pass uses must be 128-byte aligned, disjoint and end within its bytes.
void check_regions(std::vector<Region> regions, std::int64_t bytes) {
  std::sort(regions.begin(), regions.end());
  for (std::size_t k = 0; k < regions.size(); ++k) {
    INFO("region " << regions[k].first << ".." << regions[k].second << " of " << bytes);
    CHECK(regions[k].first % 128 == 0);
    CHECK(regions[k].second <= bytes);
    if (k > 0) CHECK(regions[k - 1].second <= regions[k].first);
  }
}

void check_plan(const Mlp& mlp, std::int64_t batch) {
  const FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, batch);
  REQUIRE(plan.layers == mlp.num_layers());
  const std::int64_t weight_bytes = plan.bf16() ? 2 : 4, tile = std::int64_t{kCudaFusedMlpTileRows} * plan.widest;
  std::vector<Region> weights;
  std::vector<bool> covered(static_cast<std::size_t>(plan.partial_floats), false);
  for (int l = 0; l < plan.layers; ++l) {
    CHECK(plan.in_p[l] % 16 == 0);
    CHECK(plan.in_p[l] >= plan.in[l]);
    CHECK(plan.in_p[l] < plan.in[l] + 16);
    CHECK(plan.out_p[l] % 16 == 0);
    CHECK(plan.out_p[l] >= plan.out[l]);
    CHECK(plan.widest >= std::max(plan.in_p[l], plan.out_p[l]));
    CHECK(plan.weight_offset[l] == mlp.weight_offset(l));
    CHECK(plan.bias_offset[l] == mlp.bias_offset(l));
    if (l + 1 < plan.layers) CHECK(plan.activation_offset[l] == mlp.activation_offset(l, batch));
    if (l > 0) CHECK(plan.in[l] == plan.out[l - 1]);
    weights.push_back(
        {plan.weight_at[l], plan.weight_at[l] + std::int64_t{plan.out_p[l]} * plan.in_p[l] * weight_bytes});
    weights.push_back({plan.bias_at[l], plan.bias_at[l] + std::int64_t{plan.out_p[l]} * 4});
    // The tensor cores' accumulators load from the sums: 32-byte aligned rows of 16-float tiles.
    CHECK(plan.partial_weight[l] % 16 == 0);
    CHECK(plan.partial_bias[l] == plan.partial_weight[l] + std::int64_t{plan.out_p[l]} * plan.in_p[l]);
    for (std::int64_t j = plan.partial_weight[l]; j < plan.partial_bias[l] + plan.out_p[l]; ++j) {
      CHECK_FALSE(covered[static_cast<std::size_t>(j)]);
      covered[static_cast<std::size_t>(j)] = true;
    }
  }
  CHECK(std::count(covered.begin(), covered.end(), false) == 0);
  CHECK(plan.partial_floats % 16 == 0);

  std::vector<Region> forward = weights, backward = weights;
  for (int t = 0; t < 2; ++t) forward.push_back({plan.tile_at[t], plan.tile_at[t] + tile * 4});
  for (int t = 0; t < 3; ++t) backward.push_back({plan.tile_at[t], plan.tile_at[t] + tile * 4});
  if (plan.bf16()) {
    forward.push_back({plan.forward_operand_at, plan.forward_operand_at + tile * 2});
    for (int t = 0; t < 2; ++t)
      backward.push_back({plan.backward_operand_at[t], plan.backward_operand_at[t] + tile * 2});
  }
  check_regions(forward, plan.forward_bytes);
  check_regions(backward, plan.backward_bytes);
}

}  // namespace

TEST_CASE("Fused CUDA MLP plans are aligned, disjoint and complete", "[mlp][fused][cuda_plan]") {
  const struct {
    int input;
    std::vector<int> hidden;
    int output;
  } shapes[] = {
      {4, {64, 64}, 2}, {4, {64, 64}, 1}, {11, {100, 33}, 3}, {32, {128, 128}, 20}, {3, {5, 7, 9, 11, 13}, 1}};
  for (const auto& shape : shapes)
    for (const Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
      ParamTable table;
      Mlp mlp(table, "net", shape.input, shape.hidden, shape.output, Activation::Tanh, 1.0);
      mlp.set_precision(precision);
      INFO(shape.input << " inputs, " << shape.hidden.size() << " hidden layers, " << precision_name(precision));
      REQUIRE(fused_mlp_cuda_shape_fits(mlp));
      check_plan(mlp, 1000);
    }
}

TEST_CASE("Fused CUDA MLP gradient sums land on every weight and bias once", "[mlp][fused][cuda_plan]") {
  ParamTable table;
  const Mlp mlp(table, "net", 11, {100, 33}, 3, Activation::Relu, 1.0);
  const FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, 77);
  std::vector<int> hits(static_cast<std::size_t>(table.total()), 0);
  for (std::int64_t j = 0; j < plan.partial_floats; ++j) {
    const std::int64_t target = fused_mlp_cuda_sum_target(plan, j);
    if (target < 0) continue;
    REQUIRE(target < table.total());
    ++hits[static_cast<std::size_t>(target)];
  }
  CHECK(fused_mlp_cuda_sum_target(plan, plan.partial_floats) == -1);
  int parameters = 0;
  for (int l = 0; l < mlp.num_layers(); ++l) {
    for (int j = 0; j < mlp.layer_in(l) * mlp.layer_out(l); ++j) CHECK(hits[mlp.weight_offset(l) + j] == 1);
    for (int o = 0; o < mlp.layer_out(l); ++o) CHECK(hits[mlp.bias_offset(l) + o] == 1);
    parameters += (mlp.layer_in(l) + 1) * mlp.layer_out(l);
  }
  CHECK(std::accumulate(hits.begin(), hits.end(), 0) == parameters);  // nothing lands on the table's padding
  // Layer 1's weight (o = 5, i = 7) sits at row 5 of its padded block, column 7.
  CHECK(fused_mlp_cuda_sum_target(plan, plan.partial_weight[1] + 5 * plan.in_p[1] + 7) ==
        mlp.weight_offset(1) + 5 * 100 + 7);
  CHECK(fused_mlp_cuda_sum_target(plan, plan.partial_weight[1] + 5 * plan.in_p[1] + 100) == -1);
  CHECK(fused_mlp_cuda_sum_target(plan, plan.partial_bias[2] + 2) == mlp.bias_offset(2) + 2);
  CHECK(fused_mlp_cuda_sum_target(plan, plan.partial_bias[2] + 3) == -1);
}

TEST_CASE("Fused CUDA MLP shared memory for CleanRL's network", "[mlp][fused][cuda_plan]") {
  ParamTable table;
  Mlp mlp(table, "actor", 4, {64, 64}, 2, Activation::Tanh, 1.0);
  // Weights and biases: 64 x 16 + 64, 64 x 64 + 64, 16 x 64 + 16 floats (each region rounded up to 128
  // bytes); tiles of 64 rows x 64 floats, two forward and three backward.
  const std::int64_t weights = 4096 + 256 + 16384 + 256 + 4096 + 128, tile = 64 * 64 * 4;
  FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, 128);
  CHECK(plan.widest == 64);
  CHECK(plan.forward_bytes == weights + 2 * tile);
  CHECK(plan.backward_bytes == weights + 3 * tile);
  CHECK(plan.partial_floats == 64 * 16 + 64 + 64 * 64 + 64 + 16 * 64 + 16);
  mlp.set_precision(Precision::Bf16);
  plan = fused_mlp_cuda_plan(mlp, 128);
  const std::int64_t bf16_weights = 2048 + 256 + 8192 + 256 + 2048 + 128;
  CHECK(plan.forward_bytes == bf16_weights + 2 * tile + tile / 2);
  CHECK(plan.backward_bytes == bf16_weights + 3 * tile + 2 * (tile / 2));
  // An H100/H200 block may have 227 KiB, an A100's 163 KiB, an RTX 4090's 99 KiB: all take it.
  CHECK(fused_mlp_cuda_fits(plan, 99 * 1024));
  CHECK_FALSE(fused_mlp_cuda_fits(plan, plan.backward_bytes - 1));
}

TEST_CASE("Fused CUDA MLP declines shapes beyond its limits", "[mlp][fused][cuda_plan]") {
  ParamTable a, b, c, d;
  CHECK(
      fused_mlp_cuda_shape_fits(Mlp(a, "n", kCudaFusedMlpMaxWidth, {kCudaFusedMlpMaxWidth}, 20, Activation::Relu, 1)));
  CHECK_FALSE(fused_mlp_cuda_shape_fits(Mlp(b, "n", 4, {kCudaFusedMlpMaxWidth + 1}, 2, Activation::Tanh, 1)));
  CHECK_FALSE(fused_mlp_cuda_shape_fits(Mlp(c, "n", kCudaFusedMlpMaxWidth + 1, {64}, 2, Activation::Tanh, 1)));
  const std::vector<int> deep(kCudaFusedMlpMaxLayers, 8);
  CHECK_FALSE(fused_mlp_cuda_shape_fits(Mlp(d, "n", 4, deep, 2, Activation::Tanh, 1)));
  // A 128 x 128 network with 128 inputs needs more shared memory in fp32 than any GPU's block has.
  ParamTable e;
  const Mlp wide(e, "n", 128, {128, 128}, 20, Activation::Tanh, 1);
  CHECK_FALSE(fused_mlp_cuda_fits(fused_mlp_cuda_plan(wide, 1), 227 * 1024));
}

TEST_CASE("Fused CUDA MLP block counts", "[mlp][fused][cuda_plan]") {
  ParamTable table;
  const Mlp mlp(table, "critic", 4, {64, 64}, 1, Activation::Tanh, 1.0);
  const FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, 128);
  const std::int64_t resident = 264;
  CHECK(fused_mlp_cuda_tiles(1) == 1);
  CHECK(fused_mlp_cuda_tiles(kCudaFusedMlpTileRows) == 1);
  CHECK(fused_mlp_cuda_tiles(kCudaFusedMlpTileRows + 1) == 2);
  CHECK(fused_mlp_cuda_forward_blocks(1, resident) == 1);
  CHECK(fused_mlp_cuda_forward_blocks(1 << 20, resident) == resident);
  CHECK(fused_mlp_cuda_forward_blocks(10 * kCudaFusedMlpTileRows, resident) == 10);
  // The backward pass's sums live in mlp_backward's scratch: CleanRL's minibatch of 128 rows has room for
  // at least one block, a big minibatch for a full device.
  CHECK(fused_mlp_cuda_backward_blocks(plan, 128, resident, mlp.scratch_size(128)) >= 1);
  CHECK(fused_mlp_cuda_backward_blocks(plan, 1 << 18, resident, mlp.scratch_size(1 << 18)) == resident);
  CHECK(fused_mlp_cuda_backward_blocks(plan, 1 << 18, resident, 3 * plan.partial_floats + 5) == 3);
  CHECK(fused_mlp_cuda_backward_blocks(plan, 1 << 18, resident, plan.partial_floats - 1) == 0);
}

TEST_CASE("Without a CUDA device nothing takes the fused CUDA kernels", "[mlp][fused][cuda_plan]") {
  ParamTable table;
  const Mlp mlp(table, "actor", 4, {64, 64}, 2, Activation::Tanh, 1.0);
  CHECK_FALSE(fused_mlp_cuda_forward_fits(mlp, surge::Device::cpu()));
  CHECK_FALSE(fused_mlp_cuda_backward_fits(mlp, surge::Device::cpu(), 128, mlp.scratch_size(128)));
}
