// The cuBLASLt GEMM against the CPU backend's: its first call on a device inside a CUDA graph capture,
// k = 0, a bias too little aligned for cuBLASLt's epilogue, and every transpose. Runs only where a
// usable GPU exists (the GPU test main reports a skip otherwise).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/device_graph.hpp"
#include "rl/gemm.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"

using namespace surge;
using surge::rl::Transpose;

namespace {

const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

std::vector<float> drawn(std::int64_t count, std::uint64_t stream_id) {
  Rng rng(5, stream_id, 0);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& x : values) x = rng.uniform(-1.0f, 1.0f);
  return values;
}

DeviceBuffer<float> uploaded(const std::vector<float>& host, const Stream& stream) {
  DeviceBuffer<float> buffer(kCuda, static_cast<std::int64_t>(host.size()));
  if (!host.empty()) from_host(buffer.span(), host, stream);
  return buffer;
}

void check_close(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(gpu[i] - cpu[i]) <= 1e-5f + 1e-5f * std::abs(cpu[i]));
  }
}

// One GEMM with the given operands (row-major, tight leading dimensions) on the GPU and on the CPU.
// `bias_offset` shifts the bias inside its buffer, to hand the GPU a pointer of lesser alignment.
struct GemmCase {
  Transpose ta = Transpose::No, tb = Transpose::No;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  bool bias = false;
  std::int64_t bias_offset = 0;
};

void check_against_cpu(const GemmCase& g) {
  const std::int64_t lda = g.ta == Transpose::No ? g.k : g.m, ldb = g.tb == Transpose::No ? g.n : g.k;
  const auto a = drawn(std::max<std::int64_t>(g.m * g.k, 1), 1), b = drawn(std::max<std::int64_t>(g.k * g.n, 1), 2);
  const auto bias = drawn(g.n + g.bias_offset, 3), c = drawn(g.m * g.n, 4);
  std::vector<float> cpu_c = c;
  Stream cpu(kCpu), gpu(kCuda);
  rl::gemm<float>(cpu, g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), std::max<std::int64_t>(lda, 1), b.data(),
                  std::max<std::int64_t>(ldb, 1), g.beta, cpu_c.data(), g.n,
                  g.bias ? bias.data() + g.bias_offset : nullptr);
  const auto a_gpu = uploaded(a, gpu), b_gpu = uploaded(b, gpu), bias_gpu = uploaded(bias, gpu),
             c_gpu = uploaded(c, gpu);
  rl::gemm<float>(gpu, g.ta, g.tb, g.m, g.n, g.k, g.alpha, a_gpu.data(), std::max<std::int64_t>(lda, 1), b_gpu.data(),
                  std::max<std::int64_t>(ldb, 1), g.beta, c_gpu.data(), g.n,
                  g.bias ? bias_gpu.data() + g.bias_offset : nullptr);
  check_close(to_host(c_gpu.cspan(), gpu), cpu_c);
}

}  // namespace

// First in this file, so that the capture holds this process's first GEMM on the device: the context
// comes from prepare_gemm, the plan is made during the capture, and the replay must compute.
TEST_CASE("a GEMM first seen inside a graph capture replays like the CPU's", "[gemm][gpu]") {
  const std::int64_t m = 33, n = 17, k = 12;
  const auto a = drawn(m * k, 11), b = drawn(k * n, 12), bias = drawn(n, 13);
  std::vector<float> expected(static_cast<std::size_t>(m * n), 0.0f);
  Stream cpu(kCpu), gpu(kCuda);
  rl::gemm<float>(cpu, Transpose::No, Transpose::No, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, expected.data(), n,
                  bias.data());
  rl::prepare_gemm(kCuda);
  const auto a_gpu = uploaded(a, gpu), b_gpu = uploaded(b, gpu), bias_gpu = uploaded(bias, gpu);
  DeviceBuffer<float> c_gpu(kCuda, m * n);
  rl::IterationGraph graph(gpu);
  graph.capture([&] {
    rl::gemm<float>(gpu, Transpose::No, Transpose::No, m, n, k, 1.0f, a_gpu.data(), k, b_gpu.data(), n, 0.0f,
                    c_gpu.data(), n, bias_gpu.data());
  });
  for (int replay = 0; replay < 2; ++replay) {
    zero_bytes(c_gpu.data(), kCuda, c_gpu.bytes(), gpu);
    graph.launch();
    check_close(to_host(c_gpu.cspan(), gpu), expected);
  }
}

TEST_CASE("GEMMs on CUDA match the CPU for every transpose, bias and beta", "[gemm][gpu]") {
  for (Transpose ta : {Transpose::No, Transpose::Yes})
    for (Transpose tb : {Transpose::No, Transpose::Yes})
      for (bool bias : {false, true})
        for (float beta : {0.0f, 0.5f}) {
          INFO("ta " << int(ta) << " tb " << int(tb) << " bias " << bias << " beta " << beta);
          check_against_cpu({ta, tb, 19, 7, 13, 0.75f, beta, bias, 0});
        }
}

TEST_CASE("a GEMM with k = 0 on CUDA is beta * C plus the bias, as on the CPU", "[gemm][gpu]") {
  for (bool bias : {false, true})
    for (float beta : {0.0f, 0.5f}) {
      INFO("bias " << bias << " beta " << beta);
      check_against_cpu({Transpose::No, Transpose::No, 9, 5, 0, 2.0f, beta, bias, 0});
      check_against_cpu({Transpose::Yes, Transpose::Yes, 9, 5, 0, 2.0f, beta, bias, 0});
    }
}

TEST_CASE("a bias below 16-byte alignment on CUDA gives the CPU's result", "[gemm][gpu]") {
  // The same shape with an aligned bias first, so that a plan keyed without the bias's alignment
  // would be reused for the misaligned one.
  for (std::int64_t offset : {0, 1, 2, 3, 4}) {
    INFO("bias offset " << offset << " floats");
    check_against_cpu({Transpose::No, Transpose::Yes, 64, 32, 16, 1.0f, 0.0f, true, offset});
    check_against_cpu({Transpose::No, Transpose::Yes, 64, 32, 16, 1.0f, 0.5f, true, offset});
  }
}

TEST_CASE("a GEMM captured on a device never prepared is refused with the way out", "[gemm][gpu]") {
  // Only meaningful on a second GPU that no test here has touched.
  if (cuda_status().device_count < 2) return;
  const Device second = Device::cuda(1);
  Stream stream(second);
  DeviceBuffer<float> a(second, 4), c(second, 4);
  rl::IterationGraph graph(stream);
  CHECK_THROWS_WITH(graph.capture([&] {
    rl::gemm<float>(stream, Transpose::No, Transpose::No, 2, 2, 2, 1.0f, a.data(), 2, a.data(), 2, 0.0f, c.data(), 2);
  }),
                    Catch::Contains("prepare_gemm"));
}
