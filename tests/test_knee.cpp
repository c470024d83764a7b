// Knee detection and the sweep's stopping rule on synthetic throughput series whose answers are
// known in closed form: linear scaling, a saturating device (t(N) = overhead + N / peak), the same
// with noise, a sweep capped by memory, and a CPU-like series that declines past its cache.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "tools/bench/knee.hpp"

using surge::throughput::analyse_scaling;
using surge::throughput::fit_saturation;
using surge::throughput::gain_per_doubling;
using surge::throughput::KneeRule;
using surge::throughput::next_sweep_step;
using surge::throughput::ScalingPoint;
using surge::throughput::SweepStop;

namespace {

bool close(double value, double reference, double rtol) {
  return std::abs(value - reference) <= 1e-12 + rtol * std::abs(reference);
}

constexpr double kOverhead = 1e-4;  // seconds per step of the batch
constexpr double kPeak = 1e8;       // env-steps/s; half of it is reached at N = kOverhead * kPeak = 10^4

// N = 2^6 .. 2^20 on the saturating model, each rate times `noise[k]` when given.
std::vector<ScalingPoint> saturating(const std::vector<double>& noise = {}) {
  std::vector<ScalingPoint> points;
  for (int p = 6; p <= 20; ++p) {
    const double n = std::ldexp(1.0, p);
    const double factor = noise.empty() ? 1.0 : noise[points.size()];
    points.push_back({static_cast<std::int64_t>(n), factor * n / (kOverhead + n / kPeak)});
  }
  return points;
}

std::int64_t n_at(const std::vector<ScalingPoint>& points, std::size_t k) { return points[k].num_envs; }

}  // namespace

TEST_CASE("gain per doubling is the rate ratio, normalised to one doubling") {
  CHECK(gain_per_doubling({100, 1000}, {200, 1500}) == Approx(1.5).epsilon(1e-15));
  CHECK(gain_per_doubling({100, 1000}, {400, 3000}) == Approx(std::sqrt(3.0)).epsilon(1e-15));
  CHECK(gain_per_doubling({64, 5e6}, {128, 2.5e6}) == Approx(0.5).epsilon(1e-15));
  CHECK_THROWS(gain_per_doubling({128, 1}, {128, 2}));
}

TEST_CASE("linear scaling has no knee and recommends the largest N") {
  std::vector<ScalingPoint> points;
  for (int p = 6; p <= 14; ++p) points.push_back({std::int64_t(1) << p, 3e5 * std::ldexp(1.0, p)});
  const auto analysis = analyse_scaling(points);
  REQUIRE(analysis.gains.size() == points.size() - 1);
  for (double g : analysis.gains) CHECK(g == Approx(2.0).epsilon(1e-12));
  CHECK_FALSE(analysis.knee.has_value());
  CHECK(analysis.best == points.size() - 1);
  CHECK(analysis.recommended == points.size() - 1);
  // Constant step time: no per-env cost to fit, so no peak to report.
  CHECK_FALSE(analysis.fit.valid);
}

TEST_CASE("a saturating series: knee where a doubling first gains under 1.1x, recommendation at 90% of the best") {
  const auto points = saturating();
  const auto analysis = analyse_scaling(points);
  // Gain from N to 2N is 2 (N + Nh) / (2N + Nh) with Nh = 10^4: under 1.1 once N > 4.5 Nh = 45000.
  // At N = 32768 it is 85536 / 75536 = 1.1324; at N = 65536, 151072 / 141072 = 1.0709.
  CHECK(analysis.gains[0] == Approx(2.0 * 10064.0 / 10128.0).epsilon(1e-12));
  CHECK(analysis.gains[9] == Approx(85536.0 / 75536.0).epsilon(1e-12));
  CHECK(analysis.gains[10] == Approx(151072.0 / 141072.0).epsilon(1e-12));
  REQUIRE(analysis.knee.has_value());
  CHECK(n_at(points, *analysis.knee) == 65536);
  CHECK(n_at(points, analysis.best) == 1048576);
  // Best rate 1048576 / 0.01058576 = 9.906e7, 90% of it is 8.915e7: N = 65536 reaches 8.676e7,
  // N = 131072 reaches 9.291e7.
  CHECK(n_at(points, analysis.recommended) == 131072);
  // The model is the one the series was drawn from, so the fit recovers it.
  REQUIRE(analysis.fit.valid);
  CHECK(close(analysis.fit.overhead_s, kOverhead, 1e-9));
  CHECK(close(analysis.fit.peak_rate, kPeak, 1e-9));
  CHECK(close(analysis.fit.half_rate_num_envs, 1e4, 1e-9));
  CHECK(analysis.fit.rms_relative_error < 1e-9);
}

TEST_CASE("a noisy saturating series lands within one doubling of the noise-free answers") {
  // Up to 5% multiplicative noise, as repeat-to-repeat jitter leaves after taking medians.
  const std::vector<double> noise = {1.04, 0.97, 1.02, 0.95, 1.05, 0.98, 1.01, 0.96,
                                     1.03, 0.99, 1.05, 0.95, 1.02, 0.97, 1.04};
  const auto points = saturating(noise);
  const auto analysis = analyse_scaling(points);
  REQUIRE(analysis.knee.has_value());
  CHECK(n_at(points, *analysis.knee) >= 32768);
  CHECK(n_at(points, *analysis.knee) <= 131072);
  CHECK(n_at(points, analysis.recommended) >= 65536);
  CHECK(n_at(points, analysis.recommended) <= 262144);
  REQUIRE(analysis.fit.valid);
  CHECK(close(analysis.fit.peak_rate, kPeak, 0.1));
  CHECK(close(analysis.fit.half_rate_num_envs, 1e4, 0.3));
  CHECK(analysis.fit.rms_relative_error > 0.005);  // the noise shows
  CHECK(analysis.fit.rms_relative_error < 0.05);
}

TEST_CASE("a series that declines past its cache: knee at the last paying doubling, recommendation below the peak") {
  const std::vector<ScalingPoint> points = {{64, 1.0e7},  {128, 1.9e7},  {256, 3.5e7},
                                            {512, 5.0e7}, {1024, 5.3e7}, {2048, 4.0e7}};
  const auto analysis = analyse_scaling(points);
  // Gains 1.9, 1.842, 1.429, 1.06, 0.755: the doubling from 512 is the first under 1.1.
  REQUIRE(analysis.knee.has_value());
  CHECK(n_at(points, *analysis.knee) == 512);
  CHECK(n_at(points, analysis.best) == 1024);
  CHECK(n_at(points, analysis.recommended) == 512);  // 5.0e7 >= 0.9 * 5.3e7 = 4.77e7
}

TEST_CASE("the knee rule's parameters move the answers as documented") {
  const auto points = saturating();
  KneeRule strict;
  strict.min_gain = 1.5;            // 2 (N + Nh) / (2N + Nh) < 1.5 once N > Nh / 2: 1.550 at 4096, 1.379 at 8192
  strict.recommend_fraction = 0.5;  // 0.5 * 9.906e7 = 4.95e7: first reached at N = 16384 (6.21e7); 8192 gives 4.50e7
  const auto analysis = analyse_scaling(points, strict);
  REQUIRE(analysis.knee.has_value());
  CHECK(n_at(points, *analysis.knee) == 8192);
  CHECK(n_at(points, analysis.recommended) == 16384);
  KneeRule bad;
  bad.min_gain = 1.0;
  CHECK_THROWS(analyse_scaling(points, bad));
}

TEST_CASE("a single point is its own recommendation") {
  const auto analysis = analyse_scaling({{4096, 1e6}});
  CHECK(analysis.gains.empty());
  CHECK_FALSE(analysis.knee.has_value());
  CHECK(analysis.recommended == 0);
  CHECK_FALSE(analysis.fit.valid);
}

TEST_CASE("the sweep stops when a doubling stops paying, at the limit, or before memory runs out, in that order") {
  const KneeRule rule;
  int asked = 0;
  auto fits_below = [&asked](std::int64_t limit) {
    return [&asked, limit](std::int64_t next) {
      ++asked;
      return next <= limit;
    };
  };
  const auto points = saturating();
  auto first = [&points](std::size_t count) {
    return std::vector<ScalingPoint>(points.begin(), points.begin() + count);
  };

  // Up to N = 32768 every doubling gained at least 1.132x: carry on while the next size fits.
  CHECK(next_sweep_step(first(10), rule, std::int64_t(1) << 30, fits_below(std::int64_t(1) << 30)) ==
        SweepStop::Continue);
  // The doubling to 131072 gained 1.071x: saturated, whatever memory says, and memory is not asked.
  asked = 0;
  CHECK(next_sweep_step(first(12), rule, std::int64_t(1) << 30, fits_below(0)) == SweepStop::Saturated);
  CHECK(asked == 0);
  // The next size would pass --to.
  CHECK(next_sweep_step(first(10), rule, 65535, fits_below(std::int64_t(1) << 30)) == SweepStop::ReachedLimit);
  CHECK(next_sweep_step(first(10), rule, 65536, fits_below(std::int64_t(1) << 30)) == SweepStop::Continue);

  // Memory-capped: a linear device whose memory holds at most 4096 envs.
  std::vector<ScalingPoint> capped;
  for (int p = 6; p <= 12; ++p) capped.push_back({std::int64_t(1) << p, 2e4 * std::ldexp(1.0, p)});
  asked = 0;
  CHECK(next_sweep_step(capped, rule, std::int64_t(1) << 30, fits_below(4096)) == SweepStop::WouldNotFit);
  CHECK(asked == 1);
  const auto analysis = analyse_scaling(capped);
  CHECK_FALSE(analysis.knee.has_value());
  CHECK(n_at(capped, analysis.recommended) == 4096);

  // After one point there is no doubling yet to judge.
  CHECK(next_sweep_step(first(1), rule, std::int64_t(1) << 30, fits_below(std::int64_t(1) << 30)) ==
        SweepStop::Continue);
}
