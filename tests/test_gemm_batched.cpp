// The strided-batched GEMM and the batched MLP passes on the CPU against the per-agent calls they
// stand for: each agent's result must equal `gemm` (or mlp_forward / mlp_backward's GEMM path) on that
// agent's slices bit for bit, with operands padded between agents so that a stride mixed up shows, and
// every agent's data different so that a mix-up of agents does.
#include <omp.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "rl/param_table.hpp"
#include "sim/error.hpp"
#include "sim/philox.hpp"

using namespace surge::rl;

namespace {

template <class Scalar>
std::vector<Scalar> drawn(std::int64_t count, std::uint64_t stream_id) {
  surge::Rng rng(23, stream_id, 0);
  std::vector<Scalar> values(static_cast<std::size_t>(count));
  for (Scalar& x : values) x = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
  return values;
}

template <class Scalar>
bool same_bits(const Scalar* x, const Scalar* y, std::int64_t count) {
  return std::memcmp(x, y, static_cast<std::size_t>(count) * sizeof(Scalar)) == 0;
}

// K agents' operands of one GEMM shape, each agent's A, B, C and bias `pad` elements past the previous
// agent's end, leading dimensions padded too.
template <class Scalar>
struct BatchedOperands {
  Transpose ta, tb;
  std::int64_t m, n, k, agents;
  std::int64_t lda, ldb, ldc, stride_a, stride_b, stride_c, stride_bias;
  std::vector<Scalar> a, b, c, bias;

  BatchedOperands(Transpose ta_, Transpose tb_, std::int64_t m_, std::int64_t n_, std::int64_t k_, std::int64_t agents_,
                  std::int64_t pad)
      : ta(ta_), tb(tb_), m(m_), n(n_), k(k_), agents(agents_) {
    const std::int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
    const std::int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
    lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
    stride_a = a_rows * lda + pad, stride_b = b_rows * ldb + pad, stride_c = m * ldc + pad, stride_bias = n + pad;
    // One agent more than used: a stride too long still reads inside the buffers.
    a = drawn<Scalar>((agents + 1) * stride_a, 1);
    b = drawn<Scalar>((agents + 1) * stride_b, 2);
    c = drawn<Scalar>(agents * stride_c, 3);
    bias = drawn<Scalar>((agents + 1) * stride_bias, 4);
  }

  // All K agents in one call, on a copy of C.
  std::vector<Scalar> batched(Scalar alpha, Scalar beta, bool with_bias, std::int64_t stride_b_used) const {
    std::vector<Scalar> out = c;
    surge::Stream stream(surge::Device::cpu());
    gemm_strided_batched<Scalar>(stream, ta, tb, m, n, k, alpha, a.data(), lda, stride_a, b.data(), ldb, stride_b_used,
                                 beta, out.data(), ldc, stride_c, agents, with_bias ? bias.data() : nullptr,
                                 stride_bias);
    return out;
  }

  // One gemm call per agent on its slices, on a copy of C.
  std::vector<Scalar> per_agent(Scalar alpha, Scalar beta, bool with_bias) const {
    std::vector<Scalar> out = c;
    surge::Stream stream(surge::Device::cpu());
    for (std::int64_t i = 0; i < agents; ++i)
      gemm<Scalar>(stream, ta, tb, m, n, k, alpha, a.data() + i * stride_a, lda, b.data() + i * stride_b, ldb, beta,
                   out.data() + i * stride_c, ldc, with_bias ? bias.data() + i * stride_bias : nullptr);
    return out;
  }
};

template <class Scalar>
void check_batched_gemm(std::int64_t agents, Transpose ta, Transpose tb, bool with_bias, Scalar beta) {
  const BatchedOperands<Scalar> ops(ta, tb, 7, 5, 9, agents, 3);
  const Scalar alpha = Scalar(0.75);
  const auto expected = ops.per_agent(alpha, beta, with_bias);
  const auto got = ops.batched(alpha, beta, with_bias, ops.stride_b);
  // The whole buffer: each agent's C and the padding between agents, which nobody may write.
  REQUIRE(same_bits(got.data(), expected.data(), static_cast<std::int64_t>(got.size())));
  for (std::int64_t i = 0; i < agents; ++i)
    for (std::int64_t j = ops.n; j < ops.ldc; ++j) CHECK(got[i * ops.stride_c + j] == ops.c[i * ops.stride_c + j]);
}

}  // namespace

TEST_CASE("gemm_strided_batched equals one gemm per agent, bit for bit", "[gemm][batched]") {
  for (std::int64_t agents : {1, 3, 5})
    for (Transpose ta : {Transpose::No, Transpose::Yes})
      for (Transpose tb : {Transpose::No, Transpose::Yes})
        for (bool bias : {false, true})
          for (double beta : {0.0, 0.5}) {
            INFO("K " << agents << " ta " << int(ta) << " tb " << int(tb) << " bias " << bias << " beta " << beta);
            check_batched_gemm<float>(agents, ta, tb, bias, static_cast<float>(beta));
            check_batched_gemm<double>(agents, ta, tb, bias, beta);
          }
}

TEST_CASE("gemm_strided_batched with a wrong stride gives other agents' products", "[gemm][batched]") {
  const BatchedOperands<float> ops(Transpose::No, Transpose::Yes, 7, 5, 9, 3, 3);
  const auto expected = ops.per_agent(1.0f, 0.0f, true);
  const auto got = ops.batched(1.0f, 0.0f, true, ops.stride_b + 1);
  // Agent 0 starts where it should; every later agent reads a B shifted by its index.
  CHECK(same_bits(got.data(), expected.data(), ops.stride_c));
  for (std::int64_t i = 1; i < ops.agents; ++i)
    CHECK_FALSE(same_bits(got.data() + i * ops.stride_c, expected.data() + i * ops.stride_c, ops.stride_c));
}

TEST_CASE("gemm_strided_batched shares an operand of stride 0 between the agents", "[gemm][batched]") {
  const BatchedOperands<double> ops(Transpose::Yes, Transpose::No, 6, 11, 4, 3, 2);
  const auto got = ops.batched(1.0, 0.0, false, 0);
  std::vector<double> expected = ops.c;
  surge::Stream stream(surge::Device::cpu());
  for (std::int64_t i = 0; i < ops.agents; ++i)
    gemm<double>(stream, ops.ta, ops.tb, ops.m, ops.n, ops.k, 1.0, ops.a.data() + i * ops.stride_a, ops.lda,
                 ops.b.data(), ops.ldb, 0.0, expected.data() + i * ops.stride_c, ops.ldc);
  CHECK(same_bits(got.data(), expected.data(), static_cast<std::int64_t>(got.size())));
}

TEST_CASE("gemm_strided_batched over the cores keeps every agent's bits", "[gemm][batched]") {
  // Enough work to fork the agents' loop where OpenMP has more than one thread.
  const BatchedOperands<float> ops(Transpose::No, Transpose::Yes, 64, 48, 40, 5, 16);
  const auto expected = ops.per_agent(1.0f, 0.0f, true);
  const int threads = omp_get_max_threads();
  const auto got = ops.batched(1.0f, 0.0f, true, ops.stride_b);
  CHECK(same_bits(got.data(), expected.data(), static_cast<std::int64_t>(got.size())));
  CHECK(omp_get_max_threads() == threads);  // the loop's one CBLAS thread per agent leaves OpenMP's count
}

TEST_CASE("gemm_strided_batched refuses agents whose Cs overlap", "[gemm][batched]") {
  const BatchedOperands<float> ops(Transpose::No, Transpose::No, 4, 4, 4, 2, 0);
  std::vector<float> c = ops.c;
  surge::Stream stream(surge::Device::cpu());
  CHECK_THROWS_AS(gemm_strided_batched<float>(stream, ops.ta, ops.tb, ops.m, ops.n, ops.k, 1.0f, ops.a.data(), ops.lda,
                                              ops.stride_a, ops.b.data(), ops.ldb, ops.stride_b, 0.0f, c.data(),
                                              ops.ldc, ops.m * ops.ldc - 1, 2),
                  surge::Error);
}

// ------------------------------ the batched MLP passes ------------------------------

namespace {

// K agents' buffers for one network, each agent's copy `pad` elements past the previous one's end
// (the parameters a whole table apart, as K arenas are).
struct MlpAgents {
  ParamTable table;
  Mlp mlp;
  std::int64_t agents, batch;
  MlpAgentStrides strides;
  std::vector<float> params, input, activations, output, d_output, ones, grads, scratch;

  MlpAgents(const std::vector<int>& hidden, Activation activation, std::int64_t agents_, std::int64_t batch_)
      : mlp(table, "net", 5, hidden, 3, activation, 0.01), agents(agents_), batch(batch_) {
    mlp.set_fused_on_cpu(false);
    strides.params = table.total();
    strides.grads = table.total() + 7;
    strides.input = batch * mlp.input_dim() + 3;
    strides.activations = mlp.activation_size(batch) + 5;
    strides.output = batch * mlp.output_dim() + 2;
    strides.d_output = batch * mlp.output_dim() + 1;
    strides.scratch = mlp.scratch_size(batch) + 9;
    params = drawn<float>(agents * strides.params, 10);
    input = drawn<float>(agents * strides.input, 11);
    activations = drawn<float>(agents * strides.activations, 12);
    output = drawn<float>(agents * strides.output, 13);
    d_output = drawn<float>(agents * strides.d_output, 14);
    ones.assign(static_cast<std::size_t>(batch), 1.0f);
    grads = drawn<float>(agents * strides.grads, 15);
    scratch = drawn<float>(agents * strides.scratch, 16);
  }
};

// Agent i's copy of a buffer.
template <class T>
T* agent_slice(std::vector<T>& buffer, std::int64_t stride, std::int64_t i) {
  return buffer.data() + i * stride;
}

// Forward and backward of every agent, batched or one call per agent.
void run_passes(MlpAgents& net, bool batched) {
  surge::Stream stream(surge::Device::cpu());
  const MlpAgentStrides& s = net.strides;
  if (batched) {
    mlp_forward_batched<float>(stream, net.mlp, net.agents, s, net.params.data(), net.input.data(), net.batch,
                               net.activations.data(), net.output.data());
    mlp_backward_batched<float>(stream, net.mlp, net.agents, s, net.params.data(), net.input.data(), net.batch,
                                net.activations.data(), net.d_output.data(), net.ones.data(), net.grads.data(),
                                net.scratch.data());
    return;
  }
  for (std::int64_t i = 0; i < net.agents; ++i) {
    mlp_forward<float>(stream, net.mlp, agent_slice(net.params, s.params, i), agent_slice(net.input, s.input, i),
                       net.batch, agent_slice(net.activations, s.activations, i), agent_slice(net.output, s.output, i));
    mlp_backward<float>(stream, net.mlp, agent_slice(net.params, s.params, i), agent_slice(net.input, s.input, i),
                        net.batch, agent_slice(net.activations, s.activations, i),
                        agent_slice(net.d_output, s.d_output, i), net.ones.data(), agent_slice(net.grads, s.grads, i),
                        agent_slice(net.scratch, s.scratch, i));
  }
}

}  // namespace

TEST_CASE("the batched MLP passes equal one mlp_forward and mlp_backward per agent, bit for bit", "[mlp][batched]") {
  for (const std::vector<int>& hidden : {std::vector<int>{64, 64}, std::vector<int>{37, 29}})
    for (Activation activation : {Activation::Tanh, Activation::Relu})
      for (std::int64_t agents : {1, 3}) {
        INFO("hidden " << hidden[0] << "," << hidden[1] << " " << activation_name(activation) << " K " << agents);
        MlpAgents batched(hidden, activation, agents, 13), expected(hidden, activation, agents, 13);
        run_passes(batched, true);
        run_passes(expected, false);
        // Whole buffers: every agent's copy and the padding between them.
        CHECK(same_bits(batched.output.data(), expected.output.data(),
                        static_cast<std::int64_t>(expected.output.size())));
        CHECK(same_bits(batched.activations.data(), expected.activations.data(),
                        static_cast<std::int64_t>(expected.activations.size())));
        CHECK(same_bits(batched.grads.data(), expected.grads.data(), static_cast<std::int64_t>(expected.grads.size())));
        CHECK(batched.output != MlpAgents(hidden, activation, agents, 13).output);  // the passes wrote something
      }
}

TEST_CASE("the batched MLP passes keep each agent's results apart", "[mlp][batched]") {
  MlpAgents batched({37, 29}, Activation::Tanh, 3, 13), expected({37, 29}, Activation::Tanh, 3, 13);
  run_passes(batched, true);
  run_passes(expected, false);
  const MlpAgentStrides& s = expected.strides;
  const std::int64_t outputs = expected.batch * expected.mlp.output_dim();
  for (std::int64_t i = 0; i + 1 < expected.agents; ++i) {
    // Against the next agent's expected results: an agent index off by one would pass this.
    CHECK_FALSE(
        same_bits(agent_slice(batched.output, s.output, i), agent_slice(expected.output, s.output, i + 1), outputs));
    CHECK_FALSE(same_bits(agent_slice(batched.grads, s.grads, i), agent_slice(expected.grads, s.grads, i + 1),
                          expected.table.total()));
    CHECK(same_bits(agent_slice(batched.output, s.output, i), agent_slice(expected.output, s.output, i), outputs));
  }
}
