// precision on CUDA: tf32 GEMMs within a derived bound of a double reference, bf16 layers against the
// CPU's bf16 path within twice a derived bound, and PPO training in tf32 and bf16. Runs only where a
// usable GPU exists (the GPU test main reports a skip otherwise).
//
// The tf32 bound: cuBLASLt's FAST_TF32 compute feeds the tensor cores fp32 inputs with 10 significand
// bits kept; rounded to nearest that is off by at most 2^-11 relative, cut short at most 2^-10, so with
// t = 2^-10 each product is within |a b| (2t + t^2) of the exact one; the fp32 sum of k products (and the
// bias) adds at most gamma_(k+1) (1 + t)^2 (sum |a b| + |bias|), gamma_n = n w / (1 - n w), with
// w = 2^-23 (each fp32 addition rounded, or cut short as some tensor-core adders do).
//
// The bf16 bound (tests/test_precision.cpp derives it): with u = 2^-8, a product of two inputs rounded to
// bf16 is within |a b| (2u + u^2) of the exact one, and the fp32 sum of n of them (and the bias) adds
// gamma_n (1 + u)^2 (sum |a b| + |bias|). Both paths round the same inputs the same way and differ only in
// the fp32 summation order, each within that bound of the exact value: so within twice it of each other.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "rl/precision.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/small_train_config.hpp"
#include "tests/support/trained_metrics.hpp"

using namespace surge;
using surge::rl::Transpose;

namespace {

const Device kCuda = Device::cuda(0);

// count values of U(-2, 2) from Philox stream (17, stream_id).
std::vector<float> drawn_values(std::int64_t count, std::uint64_t stream_id) {
  std::vector<float> values(static_cast<std::size_t>(count));
  std::generate(values.begin(), values.end(),
                [rng = Rng(17, stream_id, 0)]() mutable { return rng.uniform(-2.0f, 2.0f); });
  return values;
}

}  // namespace

TEST_CASE("tf32 GEMMs on CUDA stay within the derived bound of a double reference", "[gpu][precision]") {
  if (rl::cuda_compute_capability(kCuda) < 80) {
    WARN("compute capability below 8.0: no tf32");
    return;
  }
  constexpr double t = 1.0 / 1024, w = 1.0 / (1 << 23);
  const std::int64_t m = 256, n = 64, k = 64;
  const auto a = drawn_values(m * k, 1), b = drawn_values(k * n, 2), bias = drawn_values(n, 3);
  Stream gpu(kCuda);
  rl::prepare_gemm(kCuda);
  rl::set_cuda_gemm_tf32(true);
  DeviceBuffer<float> a_gpu(kCuda, m * k), b_gpu(kCuda, k * n), bias_gpu(kCuda, n), c_gpu(kCuda, m * n);
  from_host(a_gpu.span(), a, gpu);
  from_host(b_gpu.span(), b, gpu);
  from_host(bias_gpu.span(), bias, gpu);
  // y = x W^T + b, as the MLP's forward pass calls it.
  rl::gemm<float>(gpu, Transpose::No, Transpose::Yes, m, n, k, 1.0f, a_gpu.data(), k, b_gpu.data(), k, 0.0f,
                  c_gpu.data(), n, bias_gpu.data());
  const std::vector<float> c = to_host(c_gpu.cspan(), gpu);
  rl::set_cuda_gemm_tf32(false);
  const double gamma = (k + 1) * w / (1 - (k + 1) * w);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double exact = bias[j], magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        exact += double(a[i * k + p]) * b[j * k + p];
        magnitude += std::abs(double(a[i * k + p]) * b[j * k + p]);
      }
      const double bound = magnitude * (2 * t + t * t) + gamma * (1 + t) * (1 + t) * (magnitude + std::abs(bias[j]));
      INFO("c[" << i << "][" << j << "] = " << c[i * n + j] << ", exact " << exact << ", bound " << bound);
      CHECK(std::abs(c[i * n + j] - exact) <= bound);
    }
}

TEST_CASE("a bf16 layer on CUDA matches the CPU's bf16 path within twice the derived bound", "[gpu][precision]") {
  if (rl::cuda_compute_capability(kCuda) < 80) {
    WARN("compute capability below 8.0: no bf16");
    return;
  }
  constexpr double u = 1.0 / 256, w = 1.0 / (1 << 23), grow = (1 + u) * (1 + u);
  const auto gamma = [&](std::int64_t n) { return n * w / (1 - n * w); };
  const int in = 24, out = 40;
  const std::int64_t batch = 2 * rl::kFusedMlpChunkRows + 45;
  rl::ParamTable table;
  rl::Mlp mlp(table, "net", in, {}, out, rl::Activation::Tanh, 1.0);  // one layer: y = x W^T + b
  mlp.set_precision(rl::Precision::Bf16);
  std::vector<float> params = drawn_values(table.total(), 4);
  const auto input = drawn_values(batch * in, 5), d_output = drawn_values(batch * out, 6);
  std::vector<float> cpu_y(static_cast<std::size_t>(batch * out)), cpu_grads(params.size(), 0.0f), none(1);
  rl::fused_mlp_bf16_forward(mlp, params.data(), input.data(), batch, none.data(), cpu_y.data(),
                             rl::Bf16Kernel::Portable);
  rl::fused_mlp_bf16_backward(mlp, params.data(), input.data(), batch, none.data(), d_output.data(), cpu_grads.data(),
                              rl::Bf16Kernel::Portable);

  Stream gpu(kCuda);
  rl::prepare_gemm(kCuda);
  DeviceBuffer<float> p_gpu(kCuda, table.total()), x_gpu(kCuda, batch * in), dy_gpu(kCuda, batch * out),
      y_gpu(kCuda, batch * out), g_gpu(kCuda, table.total()), ones(kCuda, batch), scratch(kCuda, 1), act(kCuda, 1);
  DeviceBuffer<std::uint16_t> w16(kCuda, table.total()), x16(kCuda, batch * out), dy16(kCuda, batch * out);
  from_host(p_gpu.span(), params, gpu);
  from_host(x_gpu.span(), input, gpu);
  from_host(dy_gpu.span(), d_output, gpu);
  from_host(ones.span(), std::vector<float>(static_cast<std::size_t>(batch), 1.0f), gpu);
  const rl::Bf16Operands operands{w16.data(), x16.data(), dy16.data()};
  rl::mlp_forward<float>(gpu, mlp, p_gpu.data(), x_gpu.data(), batch, act.data(), y_gpu.data(), &operands);
  rl::mlp_backward<float>(gpu, mlp, p_gpu.data(), x_gpu.data(), batch, act.data(), dy_gpu.data(), ones.data(),
                          g_gpu.data(), scratch.data(), &operands);
  const std::vector<float> gpu_y = to_host(y_gpu.cspan(), gpu), gpu_grads = to_host(g_gpu.cspan(), gpu);

  for (std::int64_t r = 0; r < batch; ++r)
    for (int o = 0; o < out; ++o) {
      const double bias = params[mlp.bias_offset(0) + o];
      double magnitude = 0;
      for (int i = 0; i < in; ++i)
        magnitude += std::abs(double(input[r * in + i]) * params[mlp.weight_offset(0) + o * in + i]);
      const double bound = magnitude * (2 * u + u * u) + gamma(in + 1) * grow * (magnitude + std::abs(bias));
      INFO("y[" << r << "][" << o << "]: " << gpu_y[r * out + o] << " vs " << cpu_y[r * out + o]);
      CHECK(std::abs(gpu_y[r * out + o] - cpu_y[r * out + o]) <= 2 * bound);
    }
  const std::int64_t chunks = (batch + rl::kFusedMlpChunkRows - 1) / rl::kFusedMlpChunkRows;
  for (int o = 0; o < out; ++o) {
    double bias_magnitude = 0;
    for (std::int64_t r = 0; r < batch; ++r) bias_magnitude += std::abs(d_output[r * out + o]);
    const std::int64_t db = mlp.bias_offset(0) + o;
    CHECK(std::abs(gpu_grads[db] - cpu_grads[db]) <= 2 * gamma(batch + chunks) * bias_magnitude);
    for (int i = 0; i < in; ++i) {
      double magnitude = 0;
      for (std::int64_t r = 0; r < batch; ++r) magnitude += std::abs(double(d_output[r * out + o]) * input[r * in + i]);
      const double bound = magnitude * (2 * u + u * u) + gamma(batch + chunks) * grow * magnitude;
      const std::int64_t dw = mlp.weight_offset(0) + o * in + i;
      INFO("dW[" << o << "][" << i << "]: " << gpu_grads[dw] << " vs " << cpu_grads[dw]);
      CHECK(std::abs(gpu_grads[dw] - cpu_grads[dw]) <= 2 * bound);
    }
  }
}

TEST_CASE("PPO trains on CUDA in tf32 and in bf16", "[gpu][precision]") {
  if (rl::cuda_compute_capability(kCuda) < 80) return;
  for (const char* precision : {"tf32", "bf16"}) {
    INFO(precision);
    rl::TrainConfig config = testing::small_train_config(64, 16, 3, {64, 64}, 4);
    config.precision = precision;
    auto engine = make_engine("cartpole", kCuda, config.num_envs, config.seed);
    rl::Trainer trainer(*engine, config);
    CHECK(rl::Trainer::memory_plan(config, engine->spec(), kCuda).allocated_bytes() == trainer.device_bytes());
    const std::vector<rl::IterationMetrics> metrics = testing::trained_metrics(trainer, 3);
    REQUIRE(metrics.size() == 3);
    for (const auto& m : metrics) {
      CHECK(std::isfinite(m.policy_loss));
      CHECK(std::isfinite(m.value_loss));
    }
  }
}
