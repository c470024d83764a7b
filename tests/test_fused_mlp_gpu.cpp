// CUDA's fused small-MLP kernels (rl/fused_mlp_cuda.hpp) against a double-precision reference computed here
// with a rounding-error bound per element, against the cuBLASLt path and against the CPU's path, in fp32,
// tf32 and bf16; and finite differences of the exact function against the kernels' gradients.
//
// The bound (Higham's, as tests/test_fused_mlp.cpp and tests/test_precision_gpu.cpp derive it): with t the
// unit roundoff of the products' input format (0 in fp32; 2^-10 for tf32, covering inputs cut short as well
// as rounded; 2^-8 for bf16) a product of two rounded inputs is within (2t + t^2) |a b| of the exact one;
// a sum of n products in fp32, in any order and split over any blocks, adds gamma_n (1 + t)^2 sum |a b|,
// gamma_n = n w / (1 - n w) with w = 2^-24 (2^-23 on tensor cores, whose adders may cut short); an error e
// in an input reaches the output as (1 + t) sum |w_i| e_i (tanh and relu are 1-Lipschitz); fast_tanh adds
// 2e-7 + w; a slope 1 - y^2 computed in fp32 adds 3w of the result. Each path stays within twice the bound
// of the reference (the factor covers the second-order terms dropped), so two paths agree within four times.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/fused_mlp_cuda.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge;
using namespace surge::rl;
using surge::testing::normal;

namespace {

const Device kCuda = Device::cuda(0);

struct Case {
  int input;
  std::vector<int> hidden;
  int output;
  Activation activation;
  std::int64_t batch;
};

struct Units {
  double input, sum;
};
Units units_of(Precision precision) {
  if (precision == Precision::Fp32) return {0.0, std::ldexp(1.0, -24)};
  return {precision == Precision::Tf32 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -8), std::ldexp(1.0, -23)};
}

struct Bounded {
  double value = 0, bound = 0;
};

// sum_j a_j b_j with its bound, where a carries errors a_error (b exact).
struct Dot {
  double sum = 0, magnitude = 0, carried = 0;
  void add(double a, double a_error, double b) {
    sum += a * b;
    magnitude += std::abs(a * b);
    carried += a_error * std::abs(b);
  }
  double bound(Units u, std::int64_t terms) const {
    const double gamma = terms * u.sum / (1 - terms * u.sum), t = u.input;
    return (2 * t + t * t) * magnitude + gamma * (1 + t) * (1 + t) * magnitude + (1 + t) * carried;
  }
};

struct Network {
  ParamTable table;
  Mlp mlp;
  std::vector<float> params, input, d_output;
  Network(const Case& c, Precision precision, std::uint64_t seed)
      : mlp(table, "net", c.input, c.hidden, c.output, c.activation, 1.0) {
    mlp.set_precision(precision);
    Rng rng(seed, 11, 0);
    const auto draw = [&](std::vector<float>& values, std::int64_t at, std::int64_t count, double scale) {
      if (values.size() < static_cast<std::size_t>(at + count)) values.resize(static_cast<std::size_t>(at + count));
      for (std::int64_t j = at; j < at + count; ++j) values[j] = static_cast<float>(scale * normal(rng));
    };
    params.assign(static_cast<std::size_t>(table.total()), 0.0f);
    for (int l = 0; l < mlp.num_layers(); ++l) {  // weights of about unit gain, biases of about 0.3
      draw(params, mlp.weight_offset(l), mlp.layer_in(l) * mlp.layer_out(l), 1.5 / std::sqrt(mlp.layer_in(l)));
      draw(params, mlp.bias_offset(l), mlp.layer_out(l), 0.3);
    }
    draw(input, 0, c.batch * c.input, 1.0);
    draw(d_output, 0, c.batch * c.output, 1.0);
  }
  float weight(int l, int o, int i) const { return params[mlp.weight_offset(l) + o * mlp.layer_in(l) + i]; }
};

// Every layer's output [batch][out] (after the activation for hidden ones), from `params` in double.
std::vector<std::vector<Bounded>> reference_forward(const Network& net, const std::vector<double>& params,
                                                    std::int64_t batch, Units u) {
  const Mlp& mlp = net.mlp;
  std::vector<std::vector<Bounded>> outputs;
  std::vector<Bounded> x(net.input.size());
  for (std::size_t j = 0; j < x.size(); ++j) x[j].value = net.input[j];
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    std::vector<Bounded> y(static_cast<std::size_t>(batch * out));
    for (std::int64_t r = 0; r < batch; ++r)
      for (int o = 0; o < out; ++o) {
        const double bias = params[mlp.bias_offset(l) + o];
        Dot dot;
        for (int i = 0; i < in; ++i)
          dot.add(x[r * in + i].value, x[r * in + i].bound, params[mlp.weight_offset(l) + o * in + i]);
        Bounded& e = y[r * out + o];
        e = {dot.sum + bias, dot.bound(u, in + 1) + (in + 1) * u.sum * std::abs(bias)};
        if (l + 1 < mlp.num_layers() && mlp.activation() == Activation::Tanh)
          e = {std::tanh(e.value), e.bound + 2e-7 + u.sum};
        if (l + 1 < mlp.num_layers() && mlp.activation() == Activation::Relu) e.value = std::max(0.0, e.value);
      }
    outputs.push_back(y);
    x = y;
  }
  return outputs;
}

// Every gradient [table total] from the activations given (the float ones the paths are given, or exact ones).
template <class Scalar>
std::vector<Bounded> reference_backward(const Network& net, const std::vector<Scalar>& activations, std::int64_t batch,
                                        Units u) {
  const Mlp& mlp = net.mlp;
  std::vector<Bounded> grads(net.params.size());
  std::vector<Bounded> dy(net.d_output.size());
  for (std::size_t j = 0; j < dy.size(); ++j) dy[j].value = net.d_output[j];
  for (int l = mlp.num_layers() - 1; l >= 0; --l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const std::vector<double> input(net.input.begin(), net.input.end());
    const auto x = [&](std::int64_t j) -> double {
      return l == 0 ? input[j] : activations[mlp.activation_offset(l - 1, batch) + j];
    };
    for (int o = 0; o < out; ++o) {
      Dot bias;
      for (std::int64_t r = 0; r < batch; ++r) bias.add(dy[r * out + o].value, dy[r * out + o].bound, 1.0);
      // cuBLASLt's tf32 rounds dy here too (the fused kernels do not): the bound allows for it.
      grads[mlp.bias_offset(l) + o] = {bias.sum, bias.bound(u, batch)};
      for (int i = 0; i < in; ++i) {
        Dot dw;
        for (std::int64_t r = 0; r < batch; ++r) dw.add(dy[r * out + o].value, dy[r * out + o].bound, x(r * in + i));
        grads[mlp.weight_offset(l) + o * in + i] = {dw.sum, dw.bound(u, batch)};
      }
    }
    if (l == 0) break;
    std::vector<Bounded> dx(static_cast<std::size_t>(batch * in));
    for (std::int64_t r = 0; r < batch; ++r)
      for (int i = 0; i < in; ++i) {
        Dot dot;
        for (int o = 0; o < out; ++o) dot.add(dy[r * out + o].value, dy[r * out + o].bound, net.weight(l, o, i));
        const double y = x(r * in + i);
        const double slope = mlp.activation() == Activation::Tanh ? 1.0 - y * y : (y > 0 ? 1.0 : 0.0);
        dx[r * in + i] = {dot.sum * slope, dot.bound(u, out) * std::abs(slope) + 3 * u.sum * std::abs(dot.sum)};
      }
    dy = dx;
  }
  return grads;
}

// One path's forward pass (outputs of every layer, concatenated as the reference's) and its backward pass
// from the activations `given` (so that every path's gradients answer the same question).
struct Run {
  std::vector<float> activations, output, grads;
};

enum class Path { Fused, CuBlasLt, Cpu };

Run run(const Network& net, Path path, std::int64_t batch, const std::vector<float>* given) {
  Mlp mlp = net.mlp;
  mlp.set_fused_on_cuda(path == Path::Fused);
  const std::int64_t total = net.table.total(), widest = widest_layer(mlp);
  Run result;
  if (path == Path::Cpu) {
    result.activations.resize(mlp.activation_size(batch));
    result.output.resize(batch * mlp.output_dim());
    result.grads.assign(total, 0.0f);
    const std::vector<float>& acts = given ? *given : result.activations;
    if (mlp.precision() == Precision::Bf16) {
      fused_mlp_bf16_forward(mlp, net.params.data(), net.input.data(), batch, result.activations.data(),
                             result.output.data(), Bf16Kernel::Portable);
      fused_mlp_bf16_backward(mlp, net.params.data(), net.input.data(), batch, acts.data(), net.d_output.data(),
                              result.grads.data(), Bf16Kernel::Portable);
    } else {
      fused_mlp_forward(mlp, net.params.data(), net.input.data(), batch, result.activations.data(),
                        result.output.data());
      fused_mlp_backward(mlp, net.params.data(), net.input.data(), batch, acts.data(), net.d_output.data(),
                         result.grads.data());
    }
    return result;
  }
  Stream gpu(kCuda);
  prepare_gemm(kCuda);
  set_cuda_gemm_tf32(mlp.precision() == Precision::Tf32);
  DeviceBuffer<float> params(kCuda, total), input(kCuda, batch * mlp.input_dim()),
      output(kCuda, batch * mlp.output_dim()), activations(kCuda, mlp.activation_size(batch)),
      d_output(kCuda, batch * mlp.output_dim()), grads(kCuda, total), ones(kCuda, batch),
      scratch(kCuda, mlp.scratch_size(batch));
  DeviceBuffer<std::int32_t> bf16_weights(kCuda, total), bf16_x(kCuda, batch * widest), bf16_dy(kCuda, batch * widest);
  Bf16Operands bf16{reinterpret_cast<std::uint16_t*>(bf16_weights.data()),
                    reinterpret_cast<std::uint16_t*>(bf16_x.data()), reinterpret_cast<std::uint16_t*>(bf16_dy.data())};
  from_host(params.span(), net.params, gpu);
  from_host(input.span(), net.input, gpu);
  from_host(d_output.span(), net.d_output, gpu);
  from_host(ones.span(), std::vector<float>(static_cast<std::size_t>(batch), 1.0f), gpu);
  from_host(grads.span(), std::vector<float>(static_cast<std::size_t>(total), 0.0f), gpu);
  mlp_forward<float>(gpu, mlp, params.data(), input.data(), batch, activations.data(), output.data(), &bf16);
  result.activations = to_host(activations.cspan(), gpu);
  result.output = to_host(output.cspan(), gpu);
  if (given) from_host(activations.span(), *given, gpu);
  mlp_backward<float>(gpu, mlp, params.data(), input.data(), batch, activations.data(), d_output.data(), ones.data(),
                      grads.data(), scratch.data(), &bf16);
  result.grads = to_host(grads.cspan(), gpu);
  set_cuda_gemm_tf32(false);
  return result;
}

void check_case(const Case& c, Precision precision, std::uint64_t seed) {
  const Network net(c, precision, seed);
  const Mlp& mlp = net.mlp;
  REQUIRE(fused_mlp_cuda_forward_fits(mlp, kCuda));
  REQUIRE(fused_mlp_cuda_backward_fits(mlp, kCuda, c.batch, mlp.scratch_size(c.batch)));
  const Units u = units_of(precision);
  const Run fused = run(net, Path::Fused, c.batch, nullptr);
  std::vector<Run> others{run(net, Path::CuBlasLt, c.batch, &fused.activations)};
  if (precision != Precision::Tf32) others.push_back(run(net, Path::Cpu, c.batch, &fused.activations));

  const std::vector<double> exact_params(net.params.begin(), net.params.end());
  const auto layers = reference_forward(net, exact_params, c.batch, u);
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const bool head = l + 1 == mlp.num_layers();
    const auto& want = layers[static_cast<std::size_t>(l)];
    const auto got = [&](const Run& r) {
      return head ? r.output.data() : r.activations.data() + mlp.activation_offset(l, c.batch);
    };
    for (std::size_t j = 0; j < want.size(); ++j) {
      INFO(precision_name(precision) << " layer " << l << " element " << j << ": fused " << got(fused)[j]
                                     << ", reference " << want[j].value << " +- " << want[j].bound);
      CHECK(std::abs(got(fused)[j] - want[j].value) <= 2 * want[j].bound);
      for (std::size_t p = 0; p < others.size(); ++p) {
        INFO((p == 0 ? "cuBLASLt " : "CPU ") << got(others[p])[j]);
        CHECK(std::abs(got(fused)[j] - got(others[p])[j]) <= 4 * want[j].bound);
      }
    }
  }
  const auto grads = reference_backward(net, fused.activations, c.batch, u);
  for (std::size_t j = 0; j < grads.size(); ++j) {
    INFO(precision_name(precision) << " gradient " << j << ": fused " << fused.grads[j] << ", reference "
                                   << grads[j].value << " +- " << grads[j].bound);
    CHECK(std::abs(fused.grads[j] - grads[j].value) <= 2 * grads[j].bound);
    for (std::size_t p = 0; p < others.size(); ++p) {
      INFO((p == 0 ? "cuBLASLt " : "CPU ") << others[p].grads[j]);
      CHECK(std::abs(fused.grads[j] - others[p].grads[j]) <= 4 * grads[j].bound);
    }
  }
}

const std::vector<Case> kCases = {
    {4, {64, 64}, 2, Activation::Tanh, 4096 + 37},  // CleanRL's CartPole network, a ragged last tile
    {4, {64, 64}, 1, Activation::Tanh, 5},          // fewer rows than a tile
    {11, {100, 33}, 3, Activation::Relu, 301},      // widths that are not whole tensor-core tiles
    {32, {128, 128}, 20, Activation::Tanh, 700},    // the widest hidden layers
};

}  // namespace

TEST_CASE("Fused CUDA MLP in fp32 matches the reference, cuBLASLt and the CPU", "[gpu][mlp][fused]") {
  for (std::size_t k = 0; k < kCases.size(); ++k) check_case(kCases[k], Precision::Fp32, 1 + k);
}

TEST_CASE("Fused CUDA MLP in tf32 and bf16 on tensor cores", "[gpu][mlp][fused]") {
  if (cuda_compute_capability(kCuda) < 80) {
    WARN("compute capability below 8.0: no tf32 or bf16");
    return;
  }
  // cuBLASLt keeps a shape's tf32 choice from its first call: these batches are shapes no fp32 case used.
  for (std::size_t k = 0; k < kCases.size(); ++k) {
    Case shifted = kCases[k];
    shifted.batch += 3;
    check_case(shifted, Precision::Tf32, 11 + k);
    check_case(kCases[k], Precision::Bf16, 21 + k);
  }
}

TEST_CASE("Fused CUDA MLP gradients match finite differences of the exact network", "[gpu][mlp][fused]") {
  const Case c{6, {64, 32}, 3, Activation::Tanh, 90};
  const Network net(c, Precision::Fp32, 31);
  const Units u = units_of(Precision::Fp32);
  const Run fused = run(net, Path::Fused, c.batch, nullptr);
  // The exact gradient, from the exact activations; the fused one starts from fp32 activations, which moves
  // it by |gradient from those - gradient from the exact ones| (computed here in double) on top of its bound.
  std::vector<double> params(net.params.begin(), net.params.end()), exact_activations(fused.activations.size());
  const auto layers = reference_forward(net, params, c.batch, u);
  for (int l = 0; l + 1 < net.mlp.num_layers(); ++l)
    for (std::size_t j = 0; j < layers[l].size(); ++j)
      exact_activations[net.mlp.activation_offset(l, c.batch) + j] = layers[l][j].value;
  const auto from_fused = reference_backward(net, fused.activations, c.batch, u);
  const auto exact = reference_backward(net, exact_activations, c.batch, u);
  // loss = sum d_output * output in double: central differences with step h = 1e-6 are off by O(h^2) from
  // truncation and about 1e-16 |loss| / h from rounding, both below 1e-7 here.
  const auto loss = [&](const std::vector<double>& values) {
    const auto outputs = reference_forward(net, values, c.batch, u);
    double sum = 0;
    for (std::size_t j = 0; j < net.d_output.size(); ++j) sum += net.d_output[j] * outputs.back()[j].value;
    return sum;
  };
  const double h = 1e-6;
  for (std::size_t j = 0; j < params.size(); j += 7) {
    const double saved = params[j];
    params[j] = saved + h;
    const double up = loss(params);
    params[j] = saved - h;
    const double down = loss(params);
    params[j] = saved;
    const double difference = (up - down) / (2 * h);
    INFO("parameter " << j << ": fused " << fused.grads[j] << ", finite difference " << difference);
    CHECK(std::abs(exact[j].value - difference) <= 1e-7 * (1 + std::abs(difference)));
    CHECK(std::abs(fused.grads[j] - difference) <=
          2 * from_fused[j].bound + std::abs(from_fused[j].value - exact[j].value) + 1e-7 * (1 + std::abs(difference)));
  }
}

TEST_CASE("Fused CUDA MLP gradients are the same bits from run to run", "[gpu][mlp][fused]") {
  const Network net({4, {64, 64}, 2, Activation::Tanh, 20000}, Precision::Fp32, 41);
  const Run first = run(net, Path::Fused, 20000, nullptr), second = run(net, Path::Fused, 20000, nullptr);
  CHECK(first.output == second.output);
  CHECK(first.grads == second.grads);
}
