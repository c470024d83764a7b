// The minibatch shuffle: a bijection of [0, n) for awkward sizes, different for each shuffle number, and
// close to uniform in where it sends an index.
#include <catch2/catch.hpp>

#include <vector>

#include "rl/shuffle.hpp"

using surge::rl::Permutation;

TEST_CASE("the permutation is a bijection of [0, n)", "[shuffle]") {
  surge::Stream stream(surge::Device::cpu());
  for (std::int64_t n : {1, 2, 3, 7, 64, 1000, 4097, 65536}) {
    const Permutation p = Permutation::make(n, 9, 0);
    std::vector<std::int64_t> out(n);
    surge::rl::write_permutation(stream, p, nullptr, out.data());
    std::vector<int> hits(n, 0);
    for (std::int64_t x : out) {
      REQUIRE(x >= 0);
      REQUIRE(x < n);
      hits[x] += 1;
    }
    for (int h : hits) REQUIRE(h == 1);
  }
}

TEST_CASE("each shuffle number gives another permutation, read from device memory", "[shuffle]") {
  surge::Stream stream(surge::Device::cpu());
  const std::int64_t n = 512;
  const Permutation p = Permutation::make(n, 9, 0);
  std::vector<std::int64_t> a(n), b(n), c(n);
  const std::int64_t first = 0, second = 1;
  surge::rl::write_permutation(stream, p, &first, a.data());
  surge::rl::write_permutation(stream, p, &second, b.data());
  surge::rl::write_permutation(stream, p, nullptr, c.data());
  CHECK(a != b);
  CHECK(a == c);  // the permutation's own number is 0
  std::int64_t fixed_points = 0;
  for (std::int64_t j = 0; j < n; ++j) fixed_points += a[j] == j;
  CHECK(fixed_points < 8);  // a random permutation has about one
}

TEST_CASE("an index lands uniformly over many shuffles", "[shuffle]") {
  // Over ten equal bins of [0, n), for a tiny domain (2 bits a half) and a larger one.
  for (std::int64_t n : {10, 5000}) {
    const std::int64_t shuffles = 20000;
    std::vector<double> counts(10, 0.0);
    const Permutation base = Permutation::make(n, 1234, 0);
    for (std::int64_t s = 0; s < shuffles; ++s) counts[base.with_shuffle(s)(3) * 10 / n] += 1;
    double statistic = 0.0;
    const double expected = double(shuffles) / 10;
    for (double c : counts) statistic += (c - expected) * (c - expected) / expected;
    INFO("n = " << n);
    CHECK(statistic < 42.0);  // 1 - 1e-6 quantile of chi-square with 9 degrees of freedom is about 41.7
  }
}
