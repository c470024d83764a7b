// The fused update's Adam step in pieces (cpu_squared_norm_chunks, cpu_adam_scalars, cpu_adam_update)
// against adam_step on the CPU, bit for bit, over second moments spread across the whole float range:
// cpu_adam_update divides by the bias correction as a multiplication in double precision, which must give
// the division's float in every case (rl/adam.cu says why).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "rl/adam.hpp"
#include "sim/philox.hpp"

using surge::rl::AdamConfig;
using surge::rl::OptimizerScalars;

namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

float float_of(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

struct AdamState {
  std::vector<float> params, m, v;
  OptimizerScalars scalars;
};

// The first differing element of two float arrays, or -1.
std::int64_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (bits_of(a[i]) != bits_of(b[i])) return static_cast<std::int64_t>(i);
  return -1;
}

}  // namespace

TEST_CASE("The fused update's Adam pieces give adam_step's bits over the whole float range", "[fused_mlp][adam]") {
  // Every 4093rd bit pattern of the non-negative floats, zeros, subnormals and infinity among them, as the
  // second moment; gradients mostly zero (the moment then decays alone), some large enough to clip.
  std::vector<float> second;
  for (std::uint32_t bits = 0; bits <= 0x7f800000u; bits += 4093) second.push_back(float_of(bits));
  second.push_back(0.0f);
  second.push_back(std::numeric_limits<float>::denorm_min());
  second.push_back(std::numeric_limits<float>::max());
  second.push_back(std::numeric_limits<float>::infinity());
  const std::int64_t count = static_cast<std::int64_t>(second.size());
  surge::Rng rng(17, 0, 0);
  AdamState start;
  start.v = second;
  start.params.resize(count);
  start.m.resize(count);
  std::vector<float> grads(count, 0.0f);
  for (std::int64_t i = 0; i < count; ++i) {
    start.params[i] = rng.uniform(-1.0f, 1.0f);
    start.m[i] = rng.uniform(-1.0f, 1.0f) * std::pow(10.0f, rng.uniform(-30.0f, 10.0f));
    if (i % 7 == 0) grads[i] = rng.uniform(-1.0f, 1.0f) * std::pow(10.0f, rng.uniform(-20.0f, 3.0f));
  }
  surge::Stream stream(surge::Device::cpu());
  std::int64_t checked = 0;
  // Steps from the first (the bias correction sqrt(1 - beta2) = 0.0316) to where it is 1 in float.
  for (const double step : {0.0, 1.0, 9.0, 99.0, 2999.0, 100000.0})
    for (const double eps : {1e-5, 1e-8})
      for (const double max_grad_norm : {0.5, 0.0})
        for (const bool frozen : {false, true}) {
          AdamConfig config;
          config.adam_eps = eps;
          config.max_grad_norm = max_grad_norm;
          start.scalars = OptimizerScalars{};
          start.scalars.learning_rate = 2.5e-4;
          start.scalars.step = step;
          // Frozen: as after an update that stopped at the target KL, the latest scalars still in place.
          start.scalars.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(config.beta2, step + 1.0));
          start.scalars.step_size = 2.5e-4;
          start.scalars.grad_scale = 0.75;
          start.scalars.frozen = frozen ? 1.0 : 0.0;

          AdamState whole = start;
          surge::rl::adam_step(stream, config, {whole.params.data(), count}, {grads.data(), count},
                               {whole.m.data(), count}, {whole.v.data(), count}, &whole.scalars, nullptr);
          AdamState pieces = start;
          double partial[surge::rl::kCpuNormChunks];
          // In uneven ranges, as the fused update's halves take them, groups of fewer chunks than interleave among
          // them; the later ranges lie beside earlier ones, which must keep their sums.
          for (const auto& [first, last] :
               {std::pair<std::int64_t, std::int64_t>{14, surge::rl::kCpuNormChunks}, {0, 13}, {13, 14}})
            surge::rl::cpu_squared_norm_chunks(grads.data(), count, first, last, partial);
          surge::rl::cpu_adam_scalars(config, partial, &pieces.scalars);
          // Two ranges, as the fused update's two halves take them.
          for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, count / 3}, {count / 3, count}})
            surge::rl::cpu_adam_update(config, pieces.scalars, pieces.params.data(), grads.data(), pieces.m.data(),
                                       pieces.v.data(), begin, end);

          INFO("step " << step + 1 << ", eps " << eps << ", max_grad_norm " << max_grad_norm << ", frozen " << frozen);
          REQUIRE(std::memcmp(&whole.scalars, &pieces.scalars, sizeof(OptimizerScalars)) == 0);
          CHECK(first_difference(whole.params, pieces.params) == -1);
          CHECK(first_difference(whole.m, pieces.m) == -1);
          CHECK(first_difference(whole.v, pieces.v) == -1);
          // The case has teeth: the parameters moved (or, frozen, stayed) and the clip came into play.
          if (frozen) CHECK(first_difference(whole.params, start.params) == -1);
          if (!frozen) CHECK(first_difference(whole.params, start.params) != -1);
          if (!frozen && max_grad_norm > 0.0) CHECK(whole.scalars.grad_scale < 1.0);
          ++checked;
        }
  CHECK(checked == 48);
}
