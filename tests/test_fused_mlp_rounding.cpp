// The fused path's sums, bit for bit, whatever this build's vector width and register blocking
// (rl/fused_mlp.cpp): each element of a product is its initial value plus its products in the order of the
// summed index, one fused multiply-add each where the build has FMA (a multiply and an add otherwise), and
// a weight or bias gradient is the sum over each chunk of kFusedMlpChunkRows rows, the chunks added in order.
// Compiled with the library's flags, so that __FMA__ says which the library's build does. A reference with
// the other rounding must differ, so the check can tell them apart.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/mlp.hpp"
#include "rl/scalar_math.hpp"
#include "sim/philox.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
using surge::testing::normal;

namespace {

#if defined(__FMA__)
constexpr bool kBuildFuses = true;
#else
constexpr bool kBuildFuses = false;
#endif

// acc + a b in one rounding (fused) or two: the float product, exact in double, rounded once, then added.
float multiply_add(float a, float b, float acc, bool fused) {
  return fused ? std::fma(a, b, acc) : acc + static_cast<float>(static_cast<double>(a) * b);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One hidden tanh layer, its forward and backward passes through the fused path.
struct Case {
  int input_dim, hidden_dim, output_dim;
  std::int64_t batch;
  ParamTable table;
  Mlp mlp;
  std::vector<float> params, input, d_output, activations, output, grads;

  Case(int in, int hidden, int out, std::int64_t rows)
      : input_dim(in),
        hidden_dim(hidden),
        output_dim(out),
        batch(rows),
        mlp(table, "net", in, {hidden}, out, Activation::Tanh, 1.0) {
    surge::Rng rng(2026, 12, 0);
    params.assign(static_cast<std::size_t>(table.total()), 0.0f);
    for (float& p : params) p = static_cast<float>(0.4 * normal(rng));
    input.resize(batch * input_dim);
    for (float& x : input) x = static_cast<float>(normal(rng));
    d_output.resize(batch * output_dim);
    for (float& d : d_output) d = static_cast<float>(normal(rng));
    activations.resize(static_cast<std::size_t>(mlp.activation_size(batch)));
    output.resize(batch * output_dim);
    grads.assign(params.size(), 0.0f);
    fused_mlp_forward<float>(mlp, params.data(), input.data(), batch, activations.data(), output.data());
    fused_mlp_backward<float>(mlp, params.data(), input.data(), batch, activations.data(), d_output.data(),
                              grads.data());
  }
  float weight(int layer, int o, int i) const { return params[mlp.weight_offset(layer) + o * mlp.layer_in(layer) + i]; }
  float bias(int layer, int o) const { return params[mlp.bias_offset(layer) + o]; }
};

// How many of the forward pass's hidden activations and head outputs differ from init + products in order.
std::int64_t forward_mismatches(const Case& c, bool fused) {
  std::int64_t count = 0;
  const float* hidden = c.activations.data();
  for (std::int64_t r = 0; r < c.batch; ++r) {
    for (int o = 0; o < c.hidden_dim; ++o) {
      float acc = c.bias(0, o);
      for (int p = 0; p < c.input_dim; ++p)
        acc = multiply_add(c.input[r * c.input_dim + p], c.weight(0, o, p), acc, fused);
      count += !same_bits(hidden[r * c.hidden_dim + o], fast_tanh(acc));
    }
    for (int o = 0; o < c.output_dim; ++o) {
      float acc = c.bias(1, o);
      for (int p = 0; p < c.hidden_dim; ++p)
        acc = multiply_add(hidden[r * c.hidden_dim + p], c.weight(1, o, p), acc, fused);
      count += !same_bits(c.output[r * c.output_dim + o], acc);
    }
  }
  return count;
}

// How many of the head's weight and bias gradients differ from their chunks' sums (each the products of the
// chunk's rows in order, from zero) added in chunk order.
std::int64_t head_gradient_mismatches(const Case& c, bool fused) {
  std::int64_t count = 0;
  const float* hidden = c.activations.data();
  for (int o = 0; o < c.output_dim; ++o) {
    for (int i = 0; i <= c.hidden_dim; ++i) {  // i == hidden_dim: the bias
      float total = 0.0f;
      for (std::int64_t row0 = 0; row0 < c.batch; row0 += kFusedMlpChunkRows) {
        float chunk = 0.0f;
        for (std::int64_t r = row0; r < std::min(c.batch, row0 + kFusedMlpChunkRows); ++r) {
          const float dy = c.d_output[r * c.output_dim + o];
          chunk = i == c.hidden_dim ? chunk + dy : multiply_add(dy, hidden[r * c.hidden_dim + i], chunk, fused);
        }
        total = row0 == 0 ? chunk : total + chunk;
      }
      const float got = i == c.hidden_dim ? c.grads[c.mlp.bias_offset(1) + o]
                                          : c.grads[c.mlp.weight_offset(1) + o * c.hidden_dim + i];
      count += !same_bits(got, total);
    }
  }
  return count;
}

// Two chunks with a ragged last tile; one row (register blocks of one row and one vector, whose lone chain
// of multiply-adds GCC's AMD tuning would leave unfused); a one-output head over a hidden layer narrower
// than a vector (its weight gradient a block of one row and one vector).
template <class Check>
void for_each_case(Check check) {
  static const Case cases[] = {{37, 19, 3, kFusedMlpChunkRows + 188}, {37, 19, 3, 1}, {5, 7, 1, 33}};
  for (const Case& c : cases) {
    INFO(c.input_dim << " x " << c.hidden_dim << " x " << c.output_dim << " over " << c.batch << " rows");
    check(c);
  }
}

}  // namespace

TEST_CASE("The fused path's forward sums are init plus the products in order, rounded as the build fuses",
          "[fused][mlp]") {
  for_each_case([](const Case& c) {
    CHECK(forward_mismatches(c, kBuildFuses) == 0);
    CHECK(forward_mismatches(c, !kBuildFuses) > 0);
  });
}

TEST_CASE("The fused path's weight and bias gradients are chunk sums of the products in order, chunks in order",
          "[fused][mlp]") {
  for_each_case([](const Case& c) {
    CHECK(head_gradient_mismatches(c, kBuildFuses) == 0);
    if (c.batch > 1) CHECK(head_gradient_mismatches(c, !kBuildFuses) > 0);  // one row: one product, either way
  });
}
