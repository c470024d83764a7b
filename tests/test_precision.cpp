// precision = "bf16" on the CPU (rl/fused_mlp_bf16.hpp): the rounding, both kernels against a double
// reference within a derived bound, the native kernel against the portable one, and training.
//
// The bound, per output element. bf16 keeps 8 significant bits, so rounding to nearest gives
// bf16(a) = a (1 + d), |d| <= u = 2^-8. A product of two rounded inputs is exact in fp32 (8 x 8 bits), so
//   |bf16(a) bf16(b) - a b| <= |a b| (2u + u^2).
// The inputs are themselves computed: a = a* + e with |e| <= E (a* exact), so per product
//   |bf16(a) bf16(b) - a* b| <= (|a*| + E) |b| (2u + u^2) + E |b|.
// The products go into an fp32 sum (vdpbf16ps adds each product to the lane with one rounding; the
// portable kernel does the same), which for n additions and any order is off by at most
//   gamma_n sum |bf16(a) bf16(b)| <= gamma_n (1 + u)^2 sum (|a*| + E) |b|, gamma_n = n v / (1 - n v), v = 2^-24,
// plus the bias or the running sum it starts from, within the same gamma_n. tanh and relu are 1-Lipschitz
// (their derivatives at most 1 in magnitude); fast_tanh adds at most 2e-7 + v absolute. The backward pass
// starts from each path's own fp32 activations (as both kernels do); bias gradients are fp32 sums of the
// fp32 gradients (gamma only). Each bound keeps every term, so the comparison is against the bound itself.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/mlp.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/philox.hpp"
#include "tests/support/ppo_gradient_batch.hpp"
#include "tests/support/small_train_config.hpp"
#include "tests/support/trained_metrics.hpp"

using namespace surge::rl;
using surge::testing::normal;

namespace {

constexpr double kBf16Unit = 1.0 / 256;                           // u
constexpr double kRound = 2 * kBf16Unit + kBf16Unit * kBf16Unit;  // 2u + u^2
constexpr double kGrow = (1 + kBf16Unit) * (1 + kBf16Unit);       // (1 + u)^2
constexpr double kFloatUnit = 1.0 / (1 << 24);                    // v
double gamma_of(std::int64_t n) { return n * kFloatUnit / (1.0 - n * kFloatUnit); }

struct Bounded {
  double value = 0, bound = 0;
};

// Adds one product a b (a with error bound `error`) to a running value and its bound terms.
struct Sum {
  double value = 0, rounding = 0, carried = 0, magnitude = 0;
  void add(double a, double error, double b) {
    value += a * b;
    rounding += (std::abs(a) + error) * std::abs(b) * kRound;
    carried += error * std::abs(b);
    magnitude += kGrow * (std::abs(a) + error) * std::abs(b);
  }
  // The bound after `additions` fp32 roundings, starting from `start` (a bias, or 0).
  double bound(std::int64_t additions, double start = 0) const {
    return rounding + carried + gamma_of(additions) * (std::abs(start) + magnitude);
  }
};

struct Reference {
  std::vector<std::vector<Bounded>> layer_outputs;
  std::vector<Bounded> grads;
};

Reference reference(const Mlp& mlp, std::int64_t total, const std::vector<float>& params,
                    const std::vector<float>& input, const std::vector<float>& activations,
                    const std::vector<float>& d_output, std::int64_t batch) {
  Reference ref{{}, std::vector<Bounded>(static_cast<std::size_t>(total))};
  std::vector<Bounded> x;
  for (const float v : input) x.push_back({v, 0.0});
  for (int l = 0; l < mlp.num_layers(); ++l) {
    const int in = mlp.layer_in(l);
    const bool hidden = l + 1 < mlp.num_layers();
    std::vector<Bounded> y;
    for (std::int64_t r = 0; r < batch; ++r)
      for (int o = 0; o < mlp.layer_out(l); ++o) {
        Sum sum;
        for (int i = 0; i < in; ++i)
          sum.add(x[r * in + i].value, x[r * in + i].bound, params[mlp.weight_offset(l) + o * in + i]);
        const double b = params[mlp.bias_offset(l) + o];
        const double z = b + sum.value, bound = sum.bound(in, b);
        if (hidden && mlp.activation() == Activation::Tanh)
          y.push_back({std::tanh(z), bound + 2e-7 + kFloatUnit});
        else
          y.push_back({hidden && mlp.activation() == Activation::Relu ? std::max(0.0, z) : z, bound});
      }
    ref.layer_outputs.push_back(y);
    x = y;
  }
  const std::int64_t chunks = (batch + kFusedMlpChunkRows - 1) / kFusedMlpChunkRows;
  std::vector<Bounded> dy;
  for (const float v : d_output) dy.push_back({v, 0.0});
  for (int l = mlp.num_layers() - 1; l >= 0; --l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const float* xs = l == 0 ? input.data() : activations.data() + mlp.activation_offset(l - 1, batch);
    for (int o = 0; o < out; ++o) {
      // The bias gradient: an fp32 sum of the fp32 gradients, nothing rounded to bf16.
      double value = 0, carried = 0, magnitude = 0;
      for (std::int64_t r = 0; r < batch; ++r) {
        const Bounded& g = dy[r * out + o];
        value += g.value;
        carried += g.bound;
        magnitude += std::abs(g.value) + g.bound;
      }
      ref.grads[mlp.bias_offset(l) + o] = {value, carried + gamma_of(batch + chunks) * magnitude};
      for (int i = 0; i < in; ++i) {
        Sum sum;
        for (std::int64_t r = 0; r < batch; ++r) sum.add(dy[r * out + o].value, dy[r * out + o].bound, xs[r * in + i]);
        ref.grads[mlp.weight_offset(l) + o * in + i] = {sum.value, sum.bound(batch + chunks)};
      }
    }
    if (l == 0) break;
    std::vector<Bounded> dx(static_cast<std::size_t>(batch * in));
    for (std::int64_t r = 0; r < batch; ++r)
      for (int i = 0; i < in; ++i) {
        Sum sum;
        for (int o = 0; o < out; ++o)
          sum.add(dy[r * out + o].value, dy[r * out + o].bound, params[mlp.weight_offset(l) + o * in + i]);
        const double y = xs[r * in + i];
        const double slope = mlp.activation() == Activation::Tanh ? 1.0 - y * y : (y > 0 ? 1.0 : 0.0);
        const double bound = sum.bound(out);
        // The slope and the product with it in fp32: three roundings of v.
        dx[r * in + i] = {sum.value * slope, bound * std::abs(slope) + 3 * kFloatUnit * (std::abs(sum.value) + bound)};
      }
    dy = dx;
  }
  return ref;
}

// A network (input width, output width, hidden widths, activation) and the rows it runs on.
struct Shape {
  int input, output;
  std::vector<int> hidden;
  Activation activation;
  std::int64_t batch;
};

struct Run {
  std::vector<float> activations, output, grads;
};

struct Case {
  ParamTable table;
  Mlp mlp;
  std::int64_t batch;
  std::vector<float> params, input, d_output;

  Case(const Shape& shape, std::uint64_t seed)
      : mlp(table, "net", shape.input, shape.hidden, shape.output, shape.activation, 1.0), batch(shape.batch) {
    surge::Rng rng(seed, 11, 0);
    params.assign(static_cast<std::size_t>(table.total()), 0.0f);
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const double scale = 1.5 / std::sqrt(mlp.layer_in(l));
      for (int j = 0; j < mlp.layer_in(l) * mlp.layer_out(l); ++j)
        params[mlp.weight_offset(l) + j] = static_cast<float>(scale * normal(rng));
      for (int o = 0; o < mlp.layer_out(l); ++o) params[mlp.bias_offset(l) + o] = static_cast<float>(0.3 * normal(rng));
    }
    input.resize(static_cast<std::size_t>(batch * shape.input));
    d_output.resize(static_cast<std::size_t>(batch * shape.output));
    for (float& v : input) v = static_cast<float>(normal(rng));
    for (float& v : d_output) v = static_cast<float>(normal(rng));
  }

  Run run(Bf16Kernel kernel) const {
    Run r{std::vector<float>(mlp.activation_size(batch)), std::vector<float>(batch * mlp.output_dim()),
          std::vector<float>(static_cast<std::size_t>(table.total()), 0.0f)};
    fused_mlp_bf16_forward(mlp, params.data(), input.data(), batch, r.activations.data(), r.output.data(), kernel);
    fused_mlp_bf16_backward(mlp, params.data(), input.data(), batch, r.activations.data(), d_output.data(),
                            r.grads.data(), kernel);
    return r;
  }

  void check_against_reference(Bf16Kernel kernel) const {
    const Run got = run(kernel);
    const Reference ref = reference(mlp, table.total(), params, input, got.activations, d_output, batch);
    const char* name = kernel == Bf16Kernel::Native ? "native" : "portable";
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const bool head = l + 1 == mlp.num_layers();
      const float* values = head ? got.output.data() : got.activations.data() + mlp.activation_offset(l, batch);
      const auto& want = ref.layer_outputs[static_cast<std::size_t>(l)];
      for (std::size_t j = 0; j < want.size(); ++j) {
        INFO(name << " layer " << l << " output " << j << ": " << values[j] << " vs " << want[j].value << " bound "
                  << want[j].bound);
        CHECK(std::abs(values[j] - want[j].value) <= want[j].bound);
      }
    }
    for (std::size_t j = 0; j < ref.grads.size(); ++j) {
      INFO(name << " gradient " << j << ": " << got.grads[j] << " vs " << ref.grads[j].value << " bound "
                << ref.grads[j].bound);
      CHECK(std::abs(got.grads[j] - ref.grads[j].value) <= ref.grads[j].bound);
    }
  }
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> list = {
      {4, 2, {64, 64}, Activation::Tanh, 128},  // CleanRL's CartPole actor
      {4, 1, {64, 64}, Activation::Tanh, 5},    // an odd batch: a row pair half empty
      {3, 1, {17}, Activation::Relu, 37},       // odd widths everywhere
      {11, 3, {100, 33}, Activation::Tanh, 1},
      {8, 5, {256, 256}, Activation::Tanh, 2 * kFusedMlpChunkRows + 19},  // widest, several chunks
  };
  return list;
}

float float_of(std::uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

TEST_CASE("bf16 rounding is to nearest, ties to even", "[precision]") {
  CHECK(from_bf16(to_bf16(1.0f)) == 1.0f);
  CHECK(from_bf16(to_bf16(1.0f + 1.0f / 256)) == 1.0f);                             // a tie: down to the even 1
  CHECK(from_bf16(to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);                // a tie: up to the even 1 + 2^-6
  CHECK(from_bf16(to_bf16(1.0f + 1.0f / 256 + 1.0f / 4096)) == 1.0f + 1.0f / 128);  // above the tie: up
  CHECK(from_bf16(to_bf16(-2.5f)) == -2.5f);
  CHECK(std::isinf(from_bf16(to_bf16(std::numeric_limits<float>::max()))));  // rounds past the largest bf16
  CHECK(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(from_bf16(to_bf16(float_of(0x7f800001u)))));  // a NaN whose payload would round to inf
  // Every float of a sweep: the nearest of the two bf16 values around it, within u relative.
  for (std::uint32_t bits = 0x00800000u; bits < 0x7f000000u; bits += 0x00012345u) {
    const float x = float_of(bits);
    const float down = float_of(bits & 0xffff0000u), up = float_of((bits & 0xffff0000u) + 0x10000u);
    const float r = from_bf16(to_bf16(x));
    INFO(x);
    REQUIRE((r == down || r == up));
    CHECK(std::abs(double(r) - x) <= std::min(std::abs(double(down) - x), std::abs(double(up) - x)));
    CHECK(std::abs(double(r) - x) <= kBf16Unit * std::abs(x));
  }
}

TEST_CASE("bf16 fused MLP, portable kernel, within the derived bound of a double reference", "[precision]") {
  std::uint64_t seed = 1;
  for (const Shape& shape : shapes()) Case(shape, seed++).check_against_reference(Bf16Kernel::Portable);
}

TEST_CASE("bf16 fused MLP, AVX-512 BF16 kernel: the reference's bound, and the portable kernel's bits", "[precision]") {
  if (!bf16_native_supported()) {
    WARN("this CPU (or build) has no AVX-512 BF16: the native kernel is not tested here");
    return;
  }
  std::uint64_t seed = 1;
  for (const Shape& shape : shapes()) {
    const Case c(shape, seed++);
    c.check_against_reference(Bf16Kernel::Native);
    const Run native = c.run(Bf16Kernel::Native), portable = c.run(Bf16Kernel::Portable);
    CHECK(std::memcmp(native.output.data(), portable.output.data(), native.output.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(native.activations.data(), portable.activations.data(),
                      native.activations.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(native.grads.data(), portable.grads.data(), native.grads.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("bf16 differs from fp32 by about bf16's rounding, not more, not less", "[precision]") {
  // The same network in fp32: bf16's outputs differ (the test above could not tell the paths apart if they
  // did not), by no more than the bound.
  const Case c({4, 2, {64, 64}, Activation::Tanh, 64}, 9);
  const Run bf16 = c.run(Bf16Kernel::Portable);
  std::vector<float> activations(c.mlp.activation_size(c.batch)), output(c.batch * 2);
  fused_mlp_forward(c.mlp, c.params.data(), c.input.data(), c.batch, activations.data(), output.data());
  double largest = 0;
  for (std::size_t j = 0; j < output.size(); ++j)
    largest = std::max(largest, std::abs(double(output[j]) - bf16.output[j]));
  CHECK(largest > 1e-4);
  CHECK(largest < 0.1);
}

TEST_CASE("PPO trains in bf16: finite losses, parameters that move", "[precision][trainer]") {
  if (!bf16_native_supported()) {
    WARN("this CPU (or build) has no AVX-512 BF16: the trainer refuses bf16 here");
    return;
  }
  TrainConfig config = surge::testing::small_train_config(8, 32, 4, {64, 64}, 3);
  config.precision = "bf16";
  auto engine = surge::make_engine("cartpole", surge::Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  const auto params = trainer.parameters();
  const std::vector<float> before(params.data, params.data + params.size);
  const std::vector<IterationMetrics> metrics = surge::testing::trained_metrics(trainer, 4);
  REQUIRE(metrics.size() == 4);
  for (const auto& m : metrics) {
    CHECK(std::isfinite(m.policy_loss));
    CHECK(std::isfinite(m.value_loss));
    CHECK(std::isfinite(m.entropy));
  }
  const std::vector<float> after(params.data, params.data + params.size);
  REQUIRE(after.size() == before.size());
  std::size_t moved = 0;
  for (std::size_t j = 0; j < after.size(); ++j) {
    REQUIRE(std::isfinite(after[j]));
    moved += after[j] != before[j];
  }
  CHECK(moved > after.size() / 2);
}
