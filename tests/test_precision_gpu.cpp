// precision on CUDA: tf32 GEMMs within a derived bound of a double reference, PPO training in tf32, and
// bf16 refused with one line until CUDA has it. Runs only where a usable GPU exists (the GPU test main
// reports a skip otherwise).
//
// The tf32 bound: cuBLASLt's FAST_TF32 compute feeds the tensor cores fp32 inputs with 10 significand
// bits kept; rounded to nearest that is off by at most 2^-11 relative, cut short at most 2^-10, so with
// t = 2^-10 each product is within |a b| (2t + t^2) of the exact one; the fp32 sum of k products (and the
// bias) adds at most gamma_(k+1) (1 + t)^2 (sum |a b| + |bias|), gamma_n = n w / (1 - n w), with
// w = 2^-23 (each fp32 addition rounded, or cut short as some tensor-core adders do).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/gemm.hpp"
#include "rl/precision.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/small_train_config.hpp"

using namespace surge;
using surge::rl::Transpose;

namespace {

const Device kCuda = Device::cuda(0);

std::vector<float> drawn_values(std::int64_t count, std::uint64_t stream_id) {
  Rng rng(17, stream_id, 0);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& x : values) x = rng.uniform(-2.0f, 2.0f);
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

TEST_CASE("PPO trains on CUDA in tf32; bf16 on CUDA is refused with one line", "[gpu][precision]") {
  rl::TrainConfig config = testing::small_train_config(64, 16, 3, {64, 64}, 4);
  auto engine = make_engine("cartpole", kCuda, config.num_envs, config.seed);
  config.precision = "bf16";
  CHECK_THROWS_AS(rl::Trainer(*engine, config), InputError);
  if (rl::cuda_compute_capability(kCuda) < 80) return;
  config.precision = "tf32";
  rl::Trainer trainer(*engine, config);
  std::vector<rl::IterationMetrics> metrics;
  for (int k = 0; k < 3; ++k) {
    trainer.iterate();
    for (const auto& m : trainer.ready_metrics()) metrics.push_back(m);
  }
  for (const auto& m : trainer.drain()) metrics.push_back(m);
  REQUIRE(metrics.size() == 3);
  for (const auto& m : metrics) {
    CHECK(std::isfinite(m.policy_loss));
    CHECK(std::isfinite(m.value_loss));
  }
}
