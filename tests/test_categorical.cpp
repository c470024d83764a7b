// The categorical policy: log-softmax and entropy against direct formulas, and the Gumbel-max sampler's
// frequencies against softmax by a chi-square bound, including independence of successive draws.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/categorical.hpp"

using namespace surge::rl;

namespace {

std::vector<double> softmax(const std::vector<float>& logits) {
  double sum = 0.0;
  for (float l : logits) sum += std::exp(double(l));
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp(double(l)) / sum);
  return p;
}

// Pearson's statistic of observed counts against expected probabilities.
double chi_square(const std::vector<double>& counts, const std::vector<double>& probabilities, double total) {
  double statistic = 0.0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const double expected = probabilities[k] * total;
    statistic += (counts[k] - expected) * (counts[k] - expected) / expected;
  }
  return statistic;
}

}  // namespace

TEST_CASE("log-partition and entropy match direct formulas, also for large logits", "[categorical]") {
  const double logits[] = {1000.0, 999.0, 998.5};
  const double log_z = log_partition(logits, 3);
  CHECK(log_z == Approx(1000.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-1.5))).epsilon(1e-14));
  double entropy = 0.0;
  for (double l : logits) entropy -= std::exp(l - log_z) * (l - log_z);
  CHECK(categorical_entropy(logits, 3, log_z) == Approx(entropy).epsilon(1e-12));
  const float uniform[] = {0.3f, 0.3f, 0.3f, 0.3f};
  CHECK(categorical_entropy(uniform, 4, log_partition(uniform, 4)) == Approx(std::log(4.0)).epsilon(1e-6));
}

TEST_CASE("Gumbel draws stay finite for every 32-bit input", "[categorical]") {
  for (std::uint32_t bits : {0u, 1u, 511u, 512u, 0x7fffffffu, 0xfffffdffu, 0xfffffe00u, 0xffffffffu})
    CHECK(std::isfinite(gumbel_from_bits(bits)));
}

TEST_CASE("Gumbel-max sampling follows softmax, and successive draws are independent", "[categorical]") {
  const std::vector<float> row = {0.3f, -1.2f, 1.0f, 0.0f};
  const int k = static_cast<int>(row.size());
  const std::int64_t n = 200000;
  std::vector<float> logits(n * k);
  for (std::int64_t i = 0; i < n; ++i)
    for (int a = 0; a < k; ++a) logits[i * k + a] = row[a];
  std::vector<std::int32_t> first(n), second(n);
  std::vector<float> logprob(n);
  surge::Stream stream(surge::Device::cpu());
  const std::int64_t counter = 3;  // as the trainer's iteration counter on the device
  ActionDraw draw{42, &counter, 16, 5};
  sample_actions(stream, logits.data(), n, k, draw, false, first.data(), logprob.data());
  draw.draw = 6;
  sample_actions(stream, logits.data(), n, k, draw, false, second.data(), nullptr);

  const std::vector<double> p = softmax(row);
  std::vector<double> counts(k, 0.0), counts_second(k, 0.0), pairs(k * k, 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    REQUIRE(first[i] >= 0);
    REQUIRE(first[i] < k);
    counts[first[i]] += 1;
    counts_second[second[i]] += 1;
    pairs[first[i] * k + second[i]] += 1;
    REQUIRE(logprob[i] == Approx(std::log(p[first[i]])).margin(1e-6));
  }
  // The 1 - 1e-6 quantiles of chi-square with 3 and 15 degrees of freedom are about 30.7 and 54.0.
  CHECK(chi_square(counts, p, n) < 30.7);
  CHECK(chi_square(counts_second, p, n) < 30.7);
  std::vector<double> joint(k * k);
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b) joint[a * k + b] = p[a] * p[b];
  CHECK(chi_square(pairs, joint, n) < 54.0);
  // The two draws are different numbers, not a copy.
  std::int64_t same = 0;
  for (std::int64_t i = 0; i < n; ++i) same += first[i] == second[i];
  double p_same = 0.0;
  for (double q : p) p_same += q * q;
  CHECK(std::abs(same - p_same * n) < 6.0 * std::sqrt(n * p_same * (1 - p_same)));
}

TEST_CASE("greedy actions are the argmax and use no randomness", "[categorical]") {
  const float logits[] = {0.1f, 0.7f, -0.2f, 2.0f, 1.0f, 1.5f};
  std::int32_t actions[2];
  float logprob[2];
  surge::Stream stream(surge::Device::cpu());
  sample_actions(stream, logits, 2, 3, ActionDraw{}, true, actions, logprob);
  CHECK(actions[0] == 1);
  CHECK(actions[1] == 0);
  CHECK(logprob[1] == Approx(2.0 - std::log(std::exp(2.0) + std::exp(1.0) + std::exp(1.5))).epsilon(1e-6));
}
