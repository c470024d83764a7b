// Adam with global gradient-norm clipping against a double-precision reference written from PyTorch's
// definitions (torch.optim.Adam, torch.nn.utils.clip_grad_norm_), with the learning rate changed in
// device memory between steps, and the freeze flag honoured.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/adam.hpp"
#include "sim/philox.hpp"

using surge::rl::AdamConfig;
using surge::rl::OptimizerScalars;

TEST_CASE("Adam with clipping matches the reference over several steps", "[adam]") {
  const std::int64_t count = 300;
  surge::Rng rng(4, 0, 0);
  std::vector<float> params(count), m(count, 0.0f), v(count, 0.0f), grads(count);
  for (auto& p : params) p = rng.uniform(-1.0f, 1.0f);
  std::vector<double> ref_p(params.begin(), params.end()), ref_m(count, 0.0), ref_v(count, 0.0);
  AdamConfig config;
  config.max_grad_norm = 0.5;
  OptimizerScalars scalars{};
  surge::Stream stream(surge::Device::cpu());
  const double learning_rates[] = {2.5e-4, 2.0e-4, 1.5e-3, 1e-3, 5e-4, 1e-2};
  const double grad_scales[] = {0.001, 0.5, 0.01, 3.0, 0.02, 1.0};  // some steps under the clip norm, some over
  int clipped_steps = 0;
  for (int step = 1; step <= 6; ++step) {
    for (auto& g : grads) g = rng.uniform(-1.0f, 1.0f) * static_cast<float>(grad_scales[step - 1]);
    scalars.learning_rate = learning_rates[step - 1];  // as the trainer's schedule writes it
    surge::rl::adam_step(stream, config, {params.data(), count}, {grads.data(), count}, {m.data(), count},
                         {v.data(), count}, &scalars, nullptr);
    // Reference.
    double norm_sq = 0.0;
    for (float g : grads) norm_sq += double(g) * g;
    const double coef = config.max_grad_norm / (std::sqrt(norm_sq) + 1e-6);
    const double scale = coef < 1.0 ? coef : 1.0;
    clipped_steps += coef < 1.0;
    const double bc1 = 1.0 - std::pow(config.beta1, step), bc2 = 1.0 - std::pow(config.beta2, step);
    for (std::int64_t i = 0; i < count; ++i) {
      const double g = grads[i] * scale;
      ref_m[i] = config.beta1 * ref_m[i] + (1 - config.beta1) * g;
      ref_v[i] = config.beta2 * ref_v[i] + (1 - config.beta2) * g * g;
      const double denom = std::sqrt(ref_v[i]) / std::sqrt(bc2) + config.adam_eps;
      ref_p[i] -= learning_rates[step - 1] / bc1 * ref_m[i] / denom;
    }
    CHECK(scalars.step == step);
    CHECK(scalars.grad_norm_sq == Approx(norm_sq).epsilon(1e-12));
    CHECK(scalars.grad_scale == Approx(scale).epsilon(1e-12));
    for (std::int64_t i = 0; i < count; ++i) {
      INFO("step " << step << " element " << i);
      // beta2 = 0.999 is itself rounded to float, so 1 - beta2 carries a relative error of about 1e-5.
      REQUIRE(std::abs(params[i] - ref_p[i]) <= 1e-6 + 1e-5 * std::abs(ref_p[i]));
      REQUIRE(std::abs(m[i] - ref_m[i]) <= 1e-9 + 1e-4 * std::abs(ref_m[i]));
      REQUIRE(std::abs(v[i] - ref_v[i]) <= 1e-14 + 1e-4 * std::abs(ref_v[i]));
    }
  }
  CHECK(clipped_steps >= 2);
  CHECK(clipped_steps <= 4);

  // Frozen: nothing moves, the step count stays.
  const auto before = params;
  const auto m_before = m;
  scalars.frozen = 1;
  surge::rl::adam_step(stream, config, {params.data(), count}, {grads.data(), count}, {m.data(), count},
                       {v.data(), count}, &scalars, nullptr);
  CHECK(params == before);
  CHECK(m == m_before);
  CHECK(scalars.step == 6);
}

TEST_CASE("Adam without clipping leaves large gradients unscaled", "[adam]") {
  const std::int64_t count = 5;
  std::vector<float> params(count, 0.0f), m(count, 0.0f), v(count, 0.0f), grads = {10, -20, 30, -40, 50};
  AdamConfig config;
  config.max_grad_norm = 0.0;
  OptimizerScalars scalars{};
  scalars.learning_rate = 0.1;
  surge::Stream stream(surge::Device::cpu());
  surge::rl::adam_step(stream, config, {params.data(), count}, {grads.data(), count}, {m.data(), count},
                       {v.data(), count}, &scalars, nullptr);
  CHECK(scalars.grad_scale == 1.0);
  // The first Adam step moves every parameter by lr * sign(g) (up to eps).
  for (std::int64_t i = 0; i < count; ++i) CHECK(params[i] == Approx(grads[i] > 0 ? -0.1 : 0.1).epsilon(1e-5));
}

TEST_CASE("Adam's CPU gradient norm is the plain reduction's, bit for bit", "[adam]") {
  // adam_step sums the squares on the CPU in interleaved chunks; the order of additions must stay the
  // one parallel_reduce uses, so every reference run keeps its clipping scale to the bit. Sizes around
  // the 64 chunks' edges, the interleave of 8, and past the 4096 that brings in the other thread.
  surge::Stream stream(surge::Device::cpu());
  surge::Rng rng(11, 0, 0);
  AdamConfig config;
  config.max_grad_norm = 0.5;
  for (const std::int64_t count : {1, 7, 8, 63, 64, 65, 127, 513, 9347, 100003}) {
    std::vector<float> params(count, 0.0f), m(count, 0.0f), v(count, 0.0f), grads(count);
    // Magnitudes over six decades: with equal ones most orders of addition would round alike.
    for (auto& g : grads) g = rng.uniform(-1.0f, 1.0f) * std::pow(10.0f, rng.uniform(-3.0f, 3.0f));
    double reference = -1.0;
    surge::rl::gradient_norm_sq_reference(stream, {grads.data(), count}, nullptr, &reference);
    OptimizerScalars scalars{};
    scalars.learning_rate = 1e-3;
    surge::rl::adam_step(stream, config, {params.data(), count}, {grads.data(), count}, {m.data(), count},
                         {v.data(), count}, &scalars, nullptr);
    INFO("count " << count);
    CHECK(scalars.grad_norm_sq == reference);
    // The check has teeth: summing in plain index order gives other bits for most sizes.
    double sequential = 0.0;
    for (float g : grads) sequential += double(g) * g;
    if (count == 100003) CHECK(sequential != reference);
  }
}
