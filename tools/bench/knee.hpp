#pragma once
// Where throughput stops growing with the number of environments, and which N to train with.
//
// The sweep measures env-steps/s at N0, 2 N0, 4 N0, ... . Definitions (docs/throughput.md):
//   gain of a doubling   rate(2N) / rate(N); between points further apart, the per-doubling
//                        geometric mean (rate_b / rate_a)^(1 / log2(N_b / N_a)). Perfectly linear
//                        scaling gains 2; a saturated device gains 1.
//   knee                 the first N whose next doubling gains less than `min_gain` (default 1.1):
//                        the last N at which doubling still paid. None when every doubling paid.
//   recommended N        the smallest measured N whose rate reaches `recommend_fraction` (default
//                        0.9) of the best measured rate: nearly all the speed, for the least memory
//                        and the smallest batch.
//   saturation model     t(N) = overhead + N / peak_rate, the time of one step of all N envs: a fixed
//                        cost (launches, synchronisation, thread start) plus a cost per env. Fitted by
//                        least squares on relative error; reports the peak rate it tends to and the N
//                        at which half of it is reached (overhead * peak_rate).
// Everything here is pure: no device, no clock, so it is tested on synthetic series.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace surge::throughput {

struct ScalingPoint {
  std::int64_t num_envs = 0;
  double rate = 0;  // env-steps per second (a median over repeats)
};

struct KneeRule {
  double min_gain = 1.1;            // a doubling that multiplies the rate by less than this no longer pays
  double recommend_fraction = 0.9;  // recommend the smallest N reaching this fraction of the best rate
};

// Per-doubling gain between two points with from.num_envs < to.num_envs.
double gain_per_doubling(const ScalingPoint& from, const ScalingPoint& to);

struct SaturationFit {
  bool valid = false;             // false when the series shows no per-env cost or no fixed cost
  double overhead_s = 0;          // fixed cost of one step of the batch, seconds
  double peak_rate = 0;           // env-steps/s as N grows without bound
  double half_rate_num_envs = 0;  // N at which the model reaches peak_rate / 2
  double rms_relative_error = 0;  // of the modelled step time against the measured one
};

// t(N) = overhead + N / peak_rate fitted to the points, minimising sum((t_model / t_measured - 1)^2).
SaturationFit fit_saturation(const std::vector<ScalingPoint>& points);

struct ScalingAnalysis {
  std::vector<double> gains;        // [points - 1] gain from point k to point k+1
  std::optional<std::size_t> knee;  // index of the knee point, if the series has one
  std::size_t best = 0;             // index of the highest rate
  std::size_t recommended = 0;      // index of the recommended N
  SaturationFit fit;
};

// Points must be in strictly increasing N with positive rates (at least one point).
ScalingAnalysis analyse_scaling(const std::vector<ScalingPoint>& points, const KneeRule& rule = {});

// Why a doubling sweep stops after the points measured so far, or Continue.
enum class SweepStop { Continue, Saturated, ReachedLimit, WouldNotFit };
const char* sweep_stop_name(SweepStop stop);  // "saturated", "reached_limit", "would_not_fit", "continue"

// The sweep's rule, checked in this order: the last doubling gained less than min_gain (Saturated);
// the next N = 2 * last would pass max_num_envs (ReachedLimit); the next N would not fit in memory
// (WouldNotFit). `next_fits` is asked only when the first two did not stop the sweep.
SweepStop next_sweep_step(const std::vector<ScalingPoint>& points, const KneeRule& rule, std::int64_t max_num_envs,
                          const std::function<bool(std::int64_t next_num_envs)>& next_fits);

}  // namespace surge::throughput
