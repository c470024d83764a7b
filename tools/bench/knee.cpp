#include "tools/bench/knee.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/error.hpp"

namespace surge::throughput {

double gain_per_doubling(const ScalingPoint& from, const ScalingPoint& to) {
  SURGE_CHECK(from.num_envs > 0 && to.num_envs > from.num_envs, "scaling points must have increasing N");
  SURGE_CHECK(from.rate > 0 && to.rate > 0, "scaling points must have positive rates");
  const double doublings = std::log2(static_cast<double>(to.num_envs) / static_cast<double>(from.num_envs));
  return std::pow(to.rate / from.rate, 1.0 / doublings);
}

SaturationFit fit_saturation(const std::vector<ScalingPoint>& points) {
  // With t_k = N_k / rate_k, minimise sum((a + b N_k) / t_k - 1)^2 over a (overhead) and b (1 / peak
  // rate): linear least squares in u_k = 1 / t_k and x_k = N_k / t_k = rate_k, solved by its 2x2
  // normal equations. Relative error keeps the large-N points from drowning the small ones.
  SaturationFit fit;
  if (points.size() < 2) return fit;
  double suu = 0, sux = 0, sxx = 0, su = 0, sx = 0;
  for (const ScalingPoint& p : points) {
    const double u = p.rate / static_cast<double>(p.num_envs);
    const double x = p.rate;
    suu += u * u;
    sux += u * x;
    sxx += x * x;
    su += u;
    sx += x;
  }
  const double det = suu * sxx - sux * sux;
  if (!(det > 0)) return fit;
  const double a = (su * sxx - sx * sux) / det;
  const double b = (suu * sx - sux * su) / det;
  // A per-env cost that adds under a millionth of the fixed cost even at the largest N is rounding:
  // the series is still linear and has no peak to report.
  const double largest = static_cast<double>(points.back().num_envs);
  if (!(a > 0) || !(b * largest > 1e-6 * a)) return fit;
  double squares = 0;
  for (const ScalingPoint& p : points) {
    const double residual = (a + b * static_cast<double>(p.num_envs)) * p.rate / static_cast<double>(p.num_envs) - 1.0;
    squares += residual * residual;
  }
  fit.valid = true;
  fit.overhead_s = a;
  fit.peak_rate = 1.0 / b;
  fit.half_rate_num_envs = a / b;
  fit.rms_relative_error = std::sqrt(squares / static_cast<double>(points.size()));
  return fit;
}

ScalingAnalysis analyse_scaling(const std::vector<ScalingPoint>& points, const KneeRule& rule) {
  SURGE_CHECK(!points.empty(), "no scaling points to analyse");
  SURGE_CHECK(rule.min_gain > 1.0 && rule.recommend_fraction > 0.0 && rule.recommend_fraction <= 1.0,
              "knee rule needs min_gain > 1 and a recommend fraction in (0, 1]");
  ScalingAnalysis analysis;
  for (std::size_t k = 0; k + 1 < points.size(); ++k) {
    analysis.gains.push_back(gain_per_doubling(points[k], points[k + 1]));
    if (!analysis.knee && analysis.gains.back() < rule.min_gain) analysis.knee = k;
  }
  for (std::size_t k = 0; k < points.size(); ++k) {
    SURGE_CHECK(points[k].rate > 0, "scaling points must have positive rates");
    if (points[k].rate > points[analysis.best].rate) analysis.best = k;
  }
  const double target = rule.recommend_fraction * points[analysis.best].rate;
  analysis.recommended = analysis.best;
  for (std::size_t k = 0; k < points.size(); ++k) {
    if (points[k].rate >= target) {
      analysis.recommended = k;
      break;
    }
  }
  analysis.fit = fit_saturation(points);
  return analysis;
}

const char* sweep_stop_name(SweepStop stop) {
  switch (stop) {
    case SweepStop::Continue: return "continue";
    case SweepStop::Saturated: return "saturated";
    case SweepStop::ReachedLimit: return "reached_limit";
    case SweepStop::WouldNotFit: return "would_not_fit";
  }
  return "unknown";
}

SweepStop next_sweep_step(const std::vector<ScalingPoint>& points, const KneeRule& rule, std::int64_t max_num_envs,
                          const std::function<bool(std::int64_t next_num_envs)>& next_fits) {
  SURGE_CHECK(!points.empty(), "a sweep decides its next step after at least one point");
  const std::size_t last = points.size() - 1;
  if (last > 0 && gain_per_doubling(points[last - 1], points[last]) < rule.min_gain) return SweepStop::Saturated;
  const std::int64_t next = 2 * points[last].num_envs;
  if (next > max_num_envs) return SweepStop::ReachedLimit;
  if (!next_fits(next)) return SweepStop::WouldNotFit;
  return SweepStop::Continue;
}

}  // namespace surge::throughput
