// The diagonal Gaussian policy's per-sample math against closed forms, and its sampler's draws against
// the moments of the distribution they should follow.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/gaussian.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"

using namespace surge::rl;

namespace {

constexpr double kPi = 3.14159265358979323846;

double normal_log_density(double x, double mean, double std_dev) {
  const double z = (x - mean) / std_dev;
  return -0.5 * z * z - std::log(std_dev) - 0.5 * std::log(2.0 * kPi);
}

}  // namespace

TEST_CASE("Gaussian log-probability and entropy match their closed forms", "[gaussian]") {
  const double mean[] = {0.3, -1.2, 2.0}, log_std[] = {0.0, -0.7, 0.4}, action[] = {1.1, -1.0, -0.5};
  double expected_logp = 0.0, expected_entropy = 0.0;
  for (int k = 0; k < 3; ++k) {
    expected_logp += normal_log_density(action[k], mean[k], std::exp(log_std[k]));
    // The differential entropy of N(m, s^2) is 0.5 log(2 pi e s^2).
    expected_entropy += 0.5 * std::log(2.0 * kPi * std::exp(1.0) * std::exp(2.0 * log_std[k]));
  }
  CHECK(gaussian_log_prob(action, mean, log_std, 3) == Approx(expected_logp).epsilon(1e-13));
  CHECK(gaussian_entropy(log_std, 3) == Approx(expected_entropy).epsilon(1e-13));
  // One dimension at its mean with unit variance: -0.5 log(2 pi).
  const double zero = 0.0;
  CHECK(gaussian_log_prob(&zero, &zero, &zero, 1) == Approx(-0.5 * std::log(2.0 * kPi)).epsilon(1e-15));
  // float agrees with double.
  const float mean_f[] = {0.3f, -1.2f, 2.0f}, log_std_f[] = {0.0f, -0.7f, 0.4f}, action_f[] = {1.1f, -1.0f, -0.5f};
  CHECK(gaussian_log_prob(action_f, mean_f, log_std_f, 3) == Approx(expected_logp).epsilon(1e-6));
  CHECK(gaussian_entropy(log_std_f, 3) == Approx(expected_entropy).epsilon(1e-6));
}

TEST_CASE("standard_normal_pair is Box-Muller on two words of the stream, as curand_normal", "[gaussian]") {
  surge::Rng rng(7, 3, 10), words(7, 3, 10);
  for (int draw = 0; draw < 1000; ++draw) {
    const NormalPair pair = standard_normal_pair(rng);
    const std::uint32_t x = words.next_u32(), y = words.next_u32();
    const double u = (static_cast<double>(x) + 0.5) * std::ldexp(1.0, -32);
    const double v = (static_cast<double>(y) + 0.5) * std::ldexp(1.0, -32) * 2.0 * kPi;
    const double s = std::sqrt(-2.0 * std::log(u));
    INFO("draw " << draw);
    CHECK(std::abs(pair.x - s * std::sin(v)) <= 2e-5 + 2e-6 * std::abs(s));
    CHECK(std::abs(pair.y - s * std::cos(v)) <= 2e-5 + 2e-6 * std::abs(s));
  }
  CHECK(rng.offset() == words.offset());
  CHECK(gaussian_words_per_draw(1) == 2);
  CHECK(gaussian_words_per_draw(2) == 2);
  CHECK(gaussian_words_per_draw(3) == 4);
}

TEST_CASE("Gaussian sampler: moments, log-probabilities, clipping and the deterministic mean", "[gaussian]") {
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  const std::int64_t n = 200000;
  const int dims = 3;
  const float mean_row[dims] = {0.5f, -1.0f, 0.0f}, log_std[dims] = {0.0f, -1.2f, 0.6f};
  const float low[dims] = {-2.0f, -1.5f, -1.0f}, high[dims] = {2.0f, 1.0f, 1.0f};
  std::vector<float> mean(n * dims);
  for (std::int64_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) mean[i * dims + k] = mean_row[k];
  std::vector<float> actions(n * dims), env_actions(n * dims), logprob(n);
  const std::int64_t iteration = 2;
  const ActionDraw draw{11, &iteration, 5, 3};
  sample_gaussian_actions(stream, mean.data(), log_std, n, dims, low, high, draw, false, actions.data(), logprob.data(),
                          env_actions.data());

  for (int k = 0; k < dims; ++k) {
    double sum = 0.0, sum_sq = 0.0, cross = 0.0;
    const int next = (k + 1) % dims;
    for (std::int64_t i = 0; i < n; ++i) {
      const double z = (actions[i * dims + k] - mean_row[k]) / std::exp(static_cast<double>(log_std[k]));
      const double z_next = (actions[i * dims + next] - mean_row[next]) / std::exp(static_cast<double>(log_std[next]));
      sum += z;
      sum_sq += z * z;
      cross += z * z_next;
    }
    const double m = sum / n, variance = sum_sq / n - m * m, correlation = cross / n;
    INFO("dimension " << k);
    // Standard errors with n = 2e5: mean 0.0022, variance 0.0032, correlation 0.0022; allow 5 of them.
    CHECK(std::abs(m) < 0.012);
    CHECK(std::abs(variance - 1.0) < 0.016);
    CHECK(std::abs(correlation) < 0.012);
  }
  int clipped = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double expected = 0.0;
    for (int k = 0; k < dims; ++k) {
      const float a = actions[i * dims + k];
      expected += normal_log_density(a, mean_row[k], std::exp(static_cast<double>(log_std[k])));
      const float bounded = a < low[k] ? low[k] : (a > high[k] ? high[k] : a);
      if (env_actions[i * dims + k] != bounded) FAIL("env action " << i << "," << k << " is not the clipped sample");
      clipped += bounded != a;
    }
    // The log-probability is the unclipped sample's.
    if (std::abs(logprob[i] - expected) > 1e-4 + 1e-5 * std::abs(expected))
      FAIL("logprob " << i << ": " << logprob[i] << " vs " << expected);
  }
  CHECK(clipped > n / 10);  // the bounds were met, so the clipping was exercised

  // Env i's draw sits at word (iteration * 5 + 3) * 4 of stream (11, Action i).
  for (std::int64_t i : {std::int64_t(0), std::int64_t(1), n - 1}) {
    surge::Rng rng(11, surge::rng_subsequence(surge::RngPurpose::Action, static_cast<std::uint64_t>(i)),
                   (2 * 5 + 3) * 4);
    float expected[dims];
    sample_gaussian(mean_row, log_std, dims, rng, expected);
    for (int k = 0; k < dims; ++k) CHECK(actions[i * dims + k] == expected[k]);
  }

  // Deterministic: the mean, clipped for the environment; no actions or log-probabilities needed.
  std::vector<float> greedy(n * dims, 99.0f);
  sample_gaussian_actions(stream, mean.data(), log_std, n, dims, low, high, draw, true, nullptr, nullptr,
                          greedy.data());
  for (std::int64_t i = 0; i < n; i += 997)
    for (int k = 0; k < dims; ++k) CHECK(greedy[i * dims + k] == std::min(std::max(mean_row[k], low[k]), high[k]));
}
