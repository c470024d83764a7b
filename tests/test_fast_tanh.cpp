// The float tanh the learner uses against libm's in double, and the float MLP (fast tanh, SGEMM) against
// its double twin (libm tanh, DGEMM) on the same weights and inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/scalar_math.hpp"
#include "sim/philox.hpp"

TEST_CASE("fast_tanh is within 2e-7 of tanh everywhere and exact at the ends", "[tanh]") {
  double worst = 0.0, worst_relative = 0.0;
  for (double x = -12.0; x <= 12.0; x += 3.7e-5) {
    const float xf = static_cast<float>(x);
    const double exact = std::tanh(static_cast<double>(xf));
    const float fast = surge::rl::fast_tanh(xf);
    worst = std::max(worst, std::abs(fast - exact));
    if (std::abs(exact) > 1e-30) worst_relative = std::max(worst_relative, std::abs(fast - exact) / std::abs(exact));
    REQUIRE(surge::rl::fast_tanh(-xf) == -fast);
    REQUIRE(std::abs(fast) <= 1.0f);
  }
  CHECK(worst < 2e-7);
  CHECK(worst_relative < 1e-6);
  CHECK(surge::rl::fast_tanh(0.0f) == 0.0f);
  CHECK(surge::rl::fast_tanh(1e-20f) == 1e-20f);
  CHECK(surge::rl::fast_tanh(30.0f) == 1.0f);
  CHECK(surge::rl::fast_tanh(-1e30f) == -1.0f);
}

TEST_CASE("the float MLP matches its double twin", "[tanh][mlp]") {
  surge::rl::NetworkConfig config;
  config.hidden = {64, 64};
  const surge::rl::ActorCritic net(4, 2, config);
  const std::vector<double> params = net.initial_parameters(11);
  const std::vector<float> params_f(params.begin(), params.end());
  const std::int64_t batch = 257;
  std::vector<double> obs(batch * 4);
  surge::Rng rng(1, 2, 3);
  for (auto& x : obs) x = rng.uniform(-3.0f, 3.0f);
  const std::vector<float> obs_f(obs.begin(), obs.end());
  surge::Stream stream(surge::Device::cpu());
  surge::rl::PpoGradient<double> twin(surge::Device::cpu(), net, batch);
  surge::rl::PpoGradient<float> learner(surge::Device::cpu(), net, batch);
  std::vector<double> logits(batch * 2), values(batch);
  std::vector<float> logits_f(batch * 2), values_f(batch);
  twin.forward(stream, params.data(), obs.data(), batch, logits.data(), values.data());
  learner.forward(stream, params_f.data(), obs_f.data(), batch, logits_f.data(), values_f.data());
  for (std::int64_t i = 0; i < batch; ++i) {
    CHECK(std::abs(values_f[i] - values[i]) <= 2e-5 + 1e-5 * std::abs(values[i]));
    for (int k = 0; k < 2; ++k)
      CHECK(std::abs(logits_f[i * 2 + k] - logits[i * 2 + k]) <= 1e-6 + 1e-5 * std::abs(logits[i * 2 + k]));
  }
}
