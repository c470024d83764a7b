// The CPU's fused small-MLP path (rl/fused_mlp.hpp) and the BLAS path, both in float, against a
// double-precision reference computed here from the same float inputs, within a rounding-error bound
// derived alongside the reference (Higham's running bound for sums of products):
//   a float sum of k products, in any order, differs from the exact sum by at most
//   gamma_k sum |a_i b_i|, gamma_k = k u / (1 - k u), u = 2^-24;
//   an error e in an input reaches the output as sum |w_i| e_i (tanh and relu are 1-Lipschitz, their
//   derivatives bounded by 1);
//   fast_tanh adds at most 2e-7 absolute, a multiply u relative.
// The bound is per element, doubled for the second-order terms dropped; the two paths must each stay
// inside it, so they agree with each other within twice that. Finite differences of the whole loss
// through the fused path are in tests/test_ppo_gradient.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "sim/philox.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
using surge::testing::normal;

namespace {

constexpr double kUnit = 1.0 / (1 << 24);
double gamma_of(std::int64_t k) { return k * kUnit / (1.0 - k * kUnit); }

struct Shape {
  int input;
  std::vector<int> hidden;
  int output;
  Activation activation;
  std::int64_t batch;
};

// Value and error bound of one element.
struct Bounded {
  double value = 0, bound = 0;
};

struct Reference {
  std::vector<std::vector<Bounded>> layer_outputs;  // per layer [batch][out], after the activation for hidden ones
  std::vector<Bounded> grads;                       // [table total]
};

Reference reference(const Mlp& mlp, std::int64_t total, const std::vector<float>& params,
                    const std::vector<float>& input, const std::vector<float>& activations,
                    const std::vector<float>& d_output, std::int64_t batch) {
  Reference ref;
  ref.grads.assign(static_cast<std::size_t>(total), Bounded{});
  std::vector<Bounded> x(input.size());
  for (std::size_t j = 0; j < input.size(); ++j) x[j].value = input[j];
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const bool head = l + 1 == mlp.num_layers();
    std::vector<Bounded> y(static_cast<std::size_t>(batch * out));
    for (std::int64_t r = 0; r < batch; ++r)
      for (int o = 0; o < out; ++o) {
        const double b = params[mlp.bias_offset(l) + o];
        double sum = b, magnitude = std::abs(b), carried = 0;
        for (int i = 0; i < in; ++i) {
          const double w = params[mlp.weight_offset(l) + o * in + i];
          sum += w * x[r * in + i].value;
          magnitude += std::abs(w * x[r * in + i].value);
          carried += std::abs(w) * x[r * in + i].bound;
        }
        Bounded& e = y[r * out + o];
        e.value = sum;
        e.bound = gamma_of(in + 1) * magnitude + carried;
        if (!head && mlp.activation() == Activation::Tanh) e = {std::tanh(sum), e.bound + 2e-7 + kUnit};
        if (!head && mlp.activation() == Activation::Relu) e.value = std::max(0.0, sum);
      }
    ref.layer_outputs.push_back(y);
    x = y;
  }
  // Backward from the float activations given, as both paths take them.
  std::vector<Bounded> dy(d_output.size());
  for (std::size_t j = 0; j < d_output.size(); ++j) dy[j].value = d_output[j];
  for (int l = mlp.num_layers() - 1; l >= 0; --l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const float* xs = l == 0 ? input.data() : activations.data() + mlp.activation_offset(l - 1, batch);
    for (int o = 0; o < out; ++o) {
      Bounded& db = ref.grads[mlp.bias_offset(l) + o];
      double magnitude = 0;
      for (std::int64_t r = 0; r < batch; ++r) {
        db.value += dy[r * out + o].value;
        magnitude += std::abs(dy[r * out + o].value);
        db.bound += dy[r * out + o].bound;
      }
      db.bound += gamma_of(batch) * magnitude;
      for (int i = 0; i < in; ++i) {
        Bounded& dw = ref.grads[mlp.weight_offset(l) + o * in + i];
        magnitude = 0;
        for (std::int64_t r = 0; r < batch; ++r) {
          dw.value += dy[r * out + o].value * xs[r * in + i];
          magnitude += std::abs(dy[r * out + o].value * xs[r * in + i]);
          dw.bound += dy[r * out + o].bound * std::abs(xs[r * in + i]);
        }
        dw.bound += gamma_of(batch) * magnitude;
      }
    }
    if (l == 0) break;
    std::vector<Bounded> dx(static_cast<std::size_t>(batch * in));
    for (std::int64_t r = 0; r < batch; ++r)
      for (int i = 0; i < in; ++i) {
        double sum = 0, magnitude = 0, carried = 0;
        for (int o = 0; o < out; ++o) {
          const double w = params[mlp.weight_offset(l) + o * in + i];
          sum += dy[r * out + o].value * w;
          magnitude += std::abs(dy[r * out + o].value * w);
          carried += dy[r * out + o].bound * std::abs(w);
        }
        const double y = xs[r * in + i];
        const double slope = mlp.activation() == Activation::Tanh ? 1.0 - y * y : (y > 0 ? 1.0 : 0.0);
        dx[r * in + i] = {sum * slope,
                          (gamma_of(out) * magnitude + carried) * std::abs(slope) + 3 * kUnit * std::abs(sum)};
      }
    dy = dx;
  }
  return ref;
}

void check_paths(const Shape& shape, std::uint64_t seed) {
  ParamTable table;
  const Mlp mlp(table, "net", shape.input, shape.hidden, shape.output, shape.activation, 1.0);
  REQUIRE(fused_mlp_fits(mlp));
  const std::int64_t total = table.total(), batch = shape.batch;
  surge::Rng rng(seed, 7, 0);
  std::vector<float> params(static_cast<std::size_t>(total), 0.0f);
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const double scale = 1.5 / std::sqrt(mlp.layer_in(l));
    for (int j = 0; j < mlp.layer_in(l) * mlp.layer_out(l); ++j)
      params[mlp.weight_offset(l) + j] = static_cast<float>(scale * normal(rng));
    for (int o = 0; o < mlp.layer_out(l); ++o) params[mlp.bias_offset(l) + o] = static_cast<float>(0.3 * normal(rng));
  }
  std::vector<float> input(static_cast<std::size_t>(batch * shape.input)),
      d_output(static_cast<std::size_t>(batch * shape.output));
  for (float& v : input) v = static_cast<float>(normal(rng));
  for (float& v : d_output) v = static_cast<float>(normal(rng));

  const surge::Device cpu = surge::Device::cpu();
  const surge::Stream stream(cpu);
  std::vector<float> ones(static_cast<std::size_t>(batch), 1.0f), scratch(mlp.scratch_size(batch));
  for (const bool fused : {true, false}) {
    Mlp path = mlp;
    path.set_fused_on_cpu(fused);
    std::vector<float> activations(path.activation_size(batch)), output(batch * shape.output);
    std::vector<float> grads(static_cast<std::size_t>(total), 0.0f);
    mlp_forward<float>(stream, path, params.data(), input.data(), batch, activations.data(), output.data());
    mlp_backward<float>(stream, path, params.data(), input.data(), batch, activations.data(), d_output.data(),
                        ones.data(), grads.data(), scratch.data());
    // Each path's backward pass starts from its own forward pass's activations.
    const Reference ref = reference(mlp, total, params, input, activations, d_output, batch);
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const bool head = l + 1 == mlp.num_layers();
      const float* got = head ? output.data() : activations.data() + mlp.activation_offset(l, batch);
      const auto& want = ref.layer_outputs[static_cast<std::size_t>(l)];
      for (std::size_t j = 0; j < want.size(); ++j) {
        INFO((fused ? "fused" : "BLAS") << " layer " << l << " output " << j << ": " << got[j] << " vs "
                                        << want[j].value);
        CHECK(std::abs(got[j] - want[j].value) <= 2 * want[j].bound);
      }
    }
    for (std::int64_t j = 0; j < total; ++j) {
      INFO((fused ? "fused" : "BLAS") << " gradient " << j << ": " << grads[j] << " vs " << ref.grads[j].value);
      CHECK(std::abs(grads[j] - ref.grads[j].value) <= 2 * ref.grads[j].bound);
    }
  }
}

}  // namespace

TEST_CASE("Fused MLP matches the reference on CleanRL's network", "[mlp][fused]") {
  check_paths({4, {64, 64}, 2, Activation::Tanh, 128}, 1);
  check_paths({4, {64, 64}, 1, Activation::Tanh, 4}, 2);
}

TEST_CASE("Fused MLP handles widths that are not whole vectors and ragged tiles", "[mlp][fused]") {
  check_paths({3, {17}, 1, Activation::Relu, 37}, 3);
  check_paths({11, {100, 33}, 3, Activation::Tanh, 1}, 4);
  check_paths({6, {5, 70, 9}, 4, Activation::Relu, 45}, 5);
}

TEST_CASE("Fused MLP at its widest, over several chunks of rows", "[mlp][fused]") {
  check_paths({8, {256, 256}, 5, Activation::Tanh, 2 * kFusedMlpChunkRows + 19}, 6);
}

TEST_CASE("Fused MLP declines networks wider than its limit", "[mlp][fused]") {
  ParamTable table;
  const Mlp wide(table, "wide", 4, {kFusedMlpMaxWidth + 1}, 2, Activation::Tanh, 1.0);
  CHECK_FALSE(fused_mlp_fits(wide));
  ParamTable other;
  const Mlp input(other, "input", kFusedMlpMaxWidth + 1, {8}, 2, Activation::Tanh, 1.0);
  CHECK_FALSE(fused_mlp_fits(input));
}

TEST_CASE("Fused MLP gradients are the same bits on one thread and on several", "[mlp][fused]") {
  ParamTable table;
  const Mlp mlp(table, "net", 5, {64, 48}, 3, Activation::Tanh, 1.0);
  const std::int64_t batch = 3 * kFusedMlpChunkRows + 7;
  surge::Rng rng(11, 7, 0);
  std::vector<float> params(static_cast<std::size_t>(table.total())), input(batch * 5), d_output(batch * 3);
  for (float& v : params) v = static_cast<float>(0.2 * normal(rng));
  for (float& v : input) v = static_cast<float>(normal(rng));
  for (float& v : d_output) v = static_cast<float>(normal(rng));
  std::vector<std::vector<float>> grads;
  for (const int threads : {1, 2, 3}) {
    set_cpu_threads(threads);
    std::vector<float> activations(mlp.activation_size(batch)), output(batch * 3), g(params.size(), 0.0f);
    fused_mlp_forward(mlp, params.data(), input.data(), batch, activations.data(), output.data());
    fused_mlp_backward(mlp, params.data(), input.data(), batch, activations.data(), d_output.data(), g.data());
    grads.push_back(g);
  }
  set_cpu_threads(1);
  CHECK(grads[0] == grads[1]);
  CHECK(grads[0] == grads[2]);
}

namespace {

// Parameters from 0.3 N(0, 1) and inputs from N(0, 1), for the tests of the packed-weight cache.
void draw_weights_and_input(int seed, std::vector<float>& params, std::vector<float>& input) {
  surge::Rng rng(seed, 7, 0);
  for (float& v : params) v = static_cast<float>(0.3 * normal(rng));
  for (float& v : input) v = static_cast<float>(normal(rng));
}

}  // namespace

TEST_CASE("Fused MLP sees a weight changed in place between calls", "[mlp][fused]") {
  // The repacked weights are cached per network; a change to one parameter in the same buffer must reach
  // the next pass, as an optimiser step does.
  ParamTable table;
  const Mlp first(table, "first", 4, {64, 64}, 2, Activation::Tanh, 1.0);
  const Mlp second(table, "second", 4, {64, 64}, 2, Activation::Tanh, 1.0);
  const std::int64_t batch = 6;
  std::vector<float> params(static_cast<std::size_t>(table.total())), input(batch * 4);
  draw_weights_and_input(12, params, input);
  std::vector<float> activations(first.activation_size(batch)), before(batch * 2), after(batch * 2), other(batch * 2);
  fused_mlp_forward(first, params.data(), input.data(), batch, activations.data(), before.data());
  fused_mlp_forward(second, params.data(), input.data(), batch, activations.data(), other.data());
  for (const std::int64_t offset : {first.weight_offset(1) + 70, first.bias_offset(2) + 1}) {
    const float original = params[static_cast<std::size_t>(offset)];
    params[static_cast<std::size_t>(offset)] = original + 0.5f;
    fused_mlp_forward(first, params.data(), input.data(), batch, activations.data(), after.data());
    CHECK(after != before);
    // The other network's cached weights are still its own.
    std::vector<float> again(batch * 2);
    fused_mlp_forward(second, params.data(), input.data(), batch, activations.data(), again.data());
    CHECK(again == other);
    params[static_cast<std::size_t>(offset)] = original;
    fused_mlp_forward(first, params.data(), input.data(), batch, activations.data(), after.data());
    CHECK(after == before);
  }
}

TEST_CASE("Fused MLP repacks a versioned buffer when its version changes", "[mlp][fused]") {
  // Under a version the passes trust the version instead of comparing the weights: a write followed by a
  // new version reaches the next pass, and a pass without a version still compares them.
  ParamTable table;
  const Mlp mlp(table, "net", 4, {64, 64}, 2, Activation::Tanh, 1.0);
  const std::int64_t batch = 6;
  std::vector<float> params(static_cast<std::size_t>(table.total())), input(batch * 4);
  draw_weights_and_input(13, params, input);
  std::vector<float> activations(mlp.activation_size(batch)), before(batch * 2), after(batch * 2);
  const auto run = [&](std::uint64_t version, std::vector<float>& output) {
    fused_mlp_forward(mlp, params.data(), input.data(), batch, activations.data(), output.data(), version);
  };
  const std::uint64_t first = fused_mlp_new_version();
  CHECK(first != 0);
  run(first, before);
  const std::size_t offset = static_cast<std::size_t>(mlp.weight_offset(1) + 70);
  const float original = params[offset];
  params[offset] = original + 0.5f;
  const std::uint64_t second = fused_mlp_new_version();
  CHECK(second != first);
  run(second, after);
  CHECK(after != before);
  params[offset] = original;
  run(0, after);
  CHECK(after == before);
  params[offset] = original + 0.5f;
  std::vector<float> changed(batch * 2);
  run(fused_mlp_new_version(), changed);
  params[offset] = original;
  run(fused_mlp_new_version(), after);
  CHECK(after == before);
  CHECK(changed != before);
}
