// The strided-batched GEMM and the batched MLP passes on CUDA: one cuBLASLt matmul for all K agents
// (counted through rl::cuda_gemm_calls), against one gemm call per agent. cuBLASLt's heuristic sees the
// batch count and may choose another kernel for the batch than for one agent (another tiling, another
// split of the inner dimension), so the two are compared within the float rounding bound of a sum of k
// products, not bit for bit; whether the bits matched is printed. Runs only where a usable GPU exists.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "rl/bf16.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "rl/param_table.hpp"
#include "sim/memory.hpp"

using namespace surge;
using surge::rl::Transpose;

namespace {

const Device kCuda = Device::cuda(0);
constexpr double kUnit = 1.0 / (1 << 24);  // float's unit roundoff
double gamma_of(std::int64_t k) { return k * kUnit / (1.0 - k * kUnit); }

// Values in [-1, 1] that differ from element to element and from buffer to buffer, on the host and, copied,
// on the GPU.
struct Values {
  std::vector<float> host;
  DeviceBuffer<float> gpu;
  Values(std::int64_t count, int buffer, const Stream& stream)
      : host(static_cast<std::size_t>(count)), gpu(kCuda, count) {
    for (std::size_t i = 0; i < host.size(); ++i)
      host[i] = static_cast<float>(std::sin(0.7 * double(i) + 1.3 * buffer));
    from_host(gpu.span(), host, stream);
  }
};

void report_bits(const char* what, const std::vector<float>& x, const std::vector<float>& y) {
  const bool same = std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  std::printf("%s: batched and per-agent bits %s\n", what, same ? "identical" : "differ (within the bound)");
}

void check_batched_gemm(Transpose ta, Transpose tb, bool with_bias, float beta) {
  const std::int64_t m = 33, n = 17, k = 12, agents = 5, pad = 4;
  const std::int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
  const std::int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
  const std::int64_t lda = a_cols, ldb = b_cols, ldc = n + pad;
  const std::int64_t stride_a = a_rows * lda + pad, stride_b = b_rows * ldb + pad, stride_c = m * ldc + pad;
  const std::int64_t stride_bias = 20;  // 80 bytes: every agent's bias 16-byte aligned, for the epilogue
  const float alpha = 0.75f;
  Stream gpu(kCuda);
  rl::prepare_gemm(kCuda);
  const Values a(agents * stride_a, 1, gpu), b(agents * stride_b, 2, gpu), bias(agents * stride_bias, 4, gpu);
  Values batched(agents * stride_c, 3, gpu), per_agent(agents * stride_c, 3, gpu);
  const std::vector<float>& c = batched.host;
  const float* bias_pointer = with_bias ? bias.gpu.data() : nullptr;

  const std::uint64_t before = rl::cuda_gemm_calls();
  rl::gemm_strided_batched<float>(gpu, ta, tb, m, n, k, alpha, a.gpu.data(), lda, stride_a, b.gpu.data(), ldb, stride_b,
                                  beta, batched.gpu.data(), ldc, stride_c, agents, bias_pointer, stride_bias);
  CHECK(rl::cuda_gemm_calls() - before == 1);
  for (std::int64_t i = 0; i < agents; ++i)
    rl::gemm<float>(gpu, ta, tb, m, n, k, alpha, a.gpu.data() + i * stride_a, lda, b.gpu.data() + i * stride_b, ldb,
                    beta, per_agent.gpu.data() + i * stride_c, ldc,
                    with_bias ? bias_pointer + i * stride_bias : nullptr);
  CHECK(rl::cuda_gemm_calls() - before == 1 + agents);
  const auto got = to_host(batched.gpu.cspan(), gpu), expected = to_host(per_agent.gpu.cspan(), gpu);
  report_bits("gemm", got, expected);
  // Each result is within gamma_{k+2} (|alpha| sum |a b| + |beta c| + |bias|) of the exact value.
  for (std::int64_t agent = 0; agent < agents; ++agent)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < ldc; ++j) {
        const std::int64_t at = agent * stride_c + i * ldc + j;
        if (j >= n) {  // padding nobody may write
          CHECK(got[at] == c[at]);
          continue;
        }
        double magnitude = std::abs(beta * c[at]) + (with_bias ? std::abs(bias.host[agent * stride_bias + j]) : 0.0);
        for (std::int64_t p = 0; p < k; ++p) {
          const float a_ip = a.host[agent * stride_a + (ta == Transpose::No ? i * lda + p : p * lda + i)];
          const float b_pj = b.host[agent * stride_b + (tb == Transpose::No ? p * ldb + j : j * ldb + p)];
          magnitude += std::abs(alpha * a_ip * b_pj);
        }
        INFO("agent " << agent << " row " << i << " column " << j);
        CHECK(std::abs(got[at] - expected[at]) <= 2 * gamma_of(k + 2) * magnitude);
      }
}

}  // namespace

TEST_CASE("one cuBLASLt matmul computes every agent's GEMM", "[gemm][batched][gpu]") {
  // Every transpose of A and B, with and without the bias, with beta 0 and not: the bits of `variant`.
  for (int variant = 0; variant < 16; ++variant) {
    const Transpose ta = variant & 1 ? Transpose::Yes : Transpose::No,
                    tb = variant & 2 ? Transpose::Yes : Transpose::No;
    const bool bias = (variant & 4) != 0;
    const float beta = variant & 8 ? 0.5f : 0.0f;
    INFO("ta " << int(ta) << " tb " << int(tb) << " bias " << bias << " beta " << beta);
    check_batched_gemm(ta, tb, bias, beta);
  }
}

TEST_CASE("one cuBLASLt matmul computes every agent's bf16 GEMM", "[gemm][batched][gpu]") {
  if (rl::cuda_compute_capability(kCuda) < 80) {
    WARN("compute capability below 8.0: no bf16");
    return;
  }
  // C = A B^T (+ bias), as the bf16 layers make it: operands rounded to bf16 on the host, whose products
  // fp32 holds exactly, so the bound is that of an fp32 sum of k + 1 terms.
  const std::int64_t m = 29, n = 24, k = 40, agents = 3;
  const std::int64_t stride_a = m * k + 8, stride_b = n * k + 8, stride_c = m * n + 4, stride_bias = 32;
  Stream gpu(kCuda);
  rl::prepare_gemm(kCuda);
  const auto to_bf16 = [&](const Values& values) {
    std::vector<std::uint16_t> bits(values.host.size());
    for (std::size_t i = 0; i < bits.size(); ++i)
      bits[i] = static_cast<std::uint16_t>(rl::rounded_bf16(values.host[i]));
    DeviceBuffer<std::uint16_t> on_gpu(kCuda, static_cast<std::int64_t>(bits.size()));
    from_host(on_gpu.span(), bits, gpu);
    return std::make_pair(bits, std::move(on_gpu));
  };
  const auto [a, a_gpu] = to_bf16(Values(agents * stride_a, 5, gpu));
  const auto [b, b_gpu] = to_bf16(Values(agents * stride_b, 6, gpu));
  const Values bias(agents * stride_bias, 7, gpu);
  Values batched(agents * stride_c, 8, gpu), per_agent(agents * stride_c, 8, gpu);
  const std::uint64_t before = rl::cuda_gemm_calls();
  rl::gemm_bf16_strided_batched(gpu, Transpose::No, Transpose::Yes, m, n, k, a_gpu.data(), k, stride_a, b_gpu.data(), k,
                                stride_b, batched.gpu.data(), n, stride_c, agents, bias.gpu.data(), stride_bias);
  CHECK(rl::cuda_gemm_calls() - before == 1);
  for (std::int64_t i = 0; i < agents; ++i)
    rl::gemm_bf16(gpu, Transpose::No, Transpose::Yes, m, n, k, a_gpu.data() + i * stride_a, k,
                  b_gpu.data() + i * stride_b, k, per_agent.gpu.data() + i * stride_c, n,
                  bias.gpu.data() + i * stride_bias);
  const auto got = to_host(batched.gpu.cspan(), gpu), expected = to_host(per_agent.gpu.cspan(), gpu);
  report_bits("bf16 gemm", got, expected);
  const auto value = [](std::uint16_t bits) {
    const std::uint32_t widened = std::uint32_t{bits} << 16;
    float x;
    std::memcpy(&x, &widened, sizeof x);
    return static_cast<double>(x);
  };
  for (std::int64_t agent = 0; agent < agents; ++agent)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double magnitude = std::abs(bias.host[agent * stride_bias + j]);
        for (std::int64_t p = 0; p < k; ++p)
          magnitude += std::abs(value(a[agent * stride_a + i * k + p]) * value(b[agent * stride_b + j * k + p]));
        const std::int64_t at = agent * stride_c + i * n + j;
        INFO("agent " << agent << " row " << i << " column " << j);
        CHECK(std::abs(got[at] - expected[at]) <= 2 * gamma_of(k + 1) * magnitude);
      }
}

TEST_CASE("the batched MLP passes on CUDA make one cuBLASLt call per GEMM for all agents", "[mlp][batched][gpu]") {
  rl::ParamTable table;
  rl::Mlp mlp(table, "net", 5, {64, 37}, 3, rl::Activation::Tanh, 1.0);
  mlp.set_fused_on_cuda(false);
  const std::int64_t agents = 3, batch = 13, layers = mlp.num_layers();
  rl::MlpAgentStrides strides;
  strides.params = strides.grads = table.total();
  strides.input = batch * mlp.input_dim();
  strides.activations = mlp.activation_size(batch);
  strides.output = strides.d_output = batch * mlp.output_dim();
  strides.scratch = mlp.scratch_size(batch);
  Stream gpu(kCuda);
  rl::prepare_gemm(kCuda);
  const Values params(agents * strides.params, 10, gpu), input(agents * strides.input, 11, gpu),
      d_output(agents * strides.d_output, 12, gpu);
  DeviceBuffer<float> ones(kCuda, batch);
  from_host(ones.span(), std::vector<float>(static_cast<std::size_t>(batch), 1.0f), gpu);
  DeviceBuffer<float> activations(kCuda, agents * strides.activations), output(kCuda, agents * strides.output),
      grads(kCuda, agents * strides.grads), scratch(kCuda, agents * strides.scratch);
  DeviceBuffer<float> activations_ref(kCuda, agents * strides.activations), output_ref(kCuda, agents * strides.output),
      grads_ref(kCuda, agents * strides.grads), scratch_ref(kCuda, agents * strides.scratch);
  zero_bytes(grads.data(), kCuda, grads.bytes(), gpu);
  zero_bytes(grads_ref.data(), kCuda, grads_ref.bytes(), gpu);

  const std::uint64_t before = rl::cuda_gemm_calls();
  rl::mlp_forward_batched<float>(gpu, mlp, agents, strides, params.gpu.data(), input.gpu.data(), batch,
                                 activations.data(), output.data());
  CHECK(rl::cuda_gemm_calls() - before == static_cast<std::uint64_t>(layers));
  rl::mlp_backward_batched<float>(gpu, mlp, agents, strides, params.gpu.data(), input.gpu.data(), batch,
                                  activations.data(), d_output.gpu.data(), ones.data(), grads.data(), scratch.data());
  // dW and db for every layer, d_x for all but the first.
  CHECK(rl::cuda_gemm_calls() - before == static_cast<std::uint64_t>(layers + 3 * layers - 1));
  for (std::int64_t i = 0; i < agents; ++i) {
    rl::mlp_forward<float>(gpu, mlp, params.gpu.data() + i * strides.params, input.gpu.data() + i * strides.input,
                           batch, activations_ref.data() + i * strides.activations,
                           output_ref.data() + i * strides.output);
    rl::mlp_backward<float>(gpu, mlp, params.gpu.data() + i * strides.params, input.gpu.data() + i * strides.input,
                            batch, activations_ref.data() + i * strides.activations,
                            d_output.gpu.data() + i * strides.d_output, ones.data(),
                            grads_ref.data() + i * strides.grads, scratch_ref.data() + i * strides.scratch);
  }
  // Three layers of float sums of at most 64 products of values below 1 in size: a loose bound.
  const auto close = [](const std::vector<float>& x, const std::vector<float>& y, const char* what) {
    report_bits(what, x, y);
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO(what << " element " << i);
      CHECK(std::abs(x[i] - y[i]) <= 1e-5f + 1e-4f * std::abs(y[i]));
    }
  };
  close(to_host(output.cspan(), gpu), to_host(output_ref.cspan(), gpu), "mlp output");
  close(to_host(grads.cspan(), gpu), to_host(grads_ref.cspan(), gpu), "mlp grads");
}
