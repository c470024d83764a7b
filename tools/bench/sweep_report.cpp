#include "tools/bench/sweep_report.hpp"

#include <cmath>
#include <cstdio>
#include <optional>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/bench/svg_chart.hpp"
#include "tools/cli/json.hpp"

namespace surge::throughput {
namespace {

using cli::benchmark_json;
using cli::JsonObject;

// "65536 (2^16)" for powers of two, else the number.
std::string envs_text(std::int64_t n) {
  std::string text = std::to_string(n);
  if (n > 0 && (n & (n - 1)) == 0)
    text += " (2^" + std::to_string(static_cast<int>(std::log2(static_cast<double>(n)))) + ")";
  return text;
}

JsonObject point_json(const ScalingAnalysis& analysis, const std::vector<SweepPoint>& points, std::size_t k) {
  const SweepPoint& p = points[k];
  JsonObject json;
  json.add("num_envs", p.num_envs)
      .add("steps", p.steps)
      .add("batches_per_repeat", p.batches_per_repeat)
      .add("env_steps_per_s", p.rate)
      .add("env_steps_per_s_runs", p.rates)
      .add("ns_per_env_step", 1e9 / p.rate)
      .add("device_bytes", static_cast<std::int64_t>(p.device_bytes));
  json.add("gain_from_previous", k > 0 ? std::optional(analysis.gains[k - 1]) : std::nullopt);
  return json;
}

JsonObject at_point(const SweepPoint& p) {
  JsonObject json;
  json.add("num_envs", p.num_envs).add("env_steps_per_s", p.rate);
  return json;
}

}  // namespace

std::vector<ScalingPoint> scaling_points(const std::vector<SweepPoint>& points) {
  std::vector<ScalingPoint> out;
  for (const SweepPoint& p : points) out.push_back({p.num_envs, p.rate});
  return out;
}

std::string sweep_json(const SweepResult& r, const std::string& surge_version) {
  SURGE_CHECK(!r.points.empty(), "a sweep report needs at least one point");
  const ScalingAnalysis& a = r.analysis;
  std::vector<JsonObject> points;
  for (std::size_t k = 0; k < r.points.size(); ++k) points.push_back(point_json(a, r.points, k));
  JsonObject model;
  model.add("valid", a.fit.valid);
  if (a.fit.valid) {
    model.add("overhead_s", a.fit.overhead_s)
        .add("peak_env_steps_per_s", a.fit.peak_rate)
        .add("half_rate_num_envs", a.fit.half_rate_num_envs)
        .add("rms_relative_error", a.fit.rms_relative_error);
  }
  JsonObject memory;
  memory.add("known", r.memory_known).add("source", r.memory_source);
  memory.add("free_bytes", r.memory_known ? std::optional(static_cast<std::int64_t>(r.free_bytes)) : std::nullopt);

  JsonObject json = benchmark_json(surge_version, "sweep", r.what, r.scenario, r.device);
  json.add("mode", r.mode)
      .add("command", r.command)
      .add("from", r.from)
      .add("to", r.to)
      .add("min_env_steps", r.min_env_steps)
      .add("repeats", r.repeats)
      .add("min_gain", r.rule.min_gain)
      .add("recommend_fraction", r.rule.recommend_fraction)
      .add_objects("points", points)
      .add("stop", sweep_stop_name(r.stop))
      .add("stop_detail", r.stop_detail);
  json.add("knee", a.knee ? std::optional(at_point(r.points[*a.knee])) : std::nullopt)
      .add("best", at_point(r.points[a.best]))
      .add("recommended_num_envs", r.points[a.recommended].num_envs)
      .add("model", model)
      .add("memory", memory);
  return json.str() + "\n";
}

std::string sweep_svg(const SweepResult& r) {
  SURGE_CHECK(!r.points.empty(), "a sweep figure needs at least one point");
  const ScalingAnalysis& a = r.analysis;
  LogLogChart chart(r.scenario + " on " + r.device + ": env-steps/s against the number of environments",
                    {"number of environments N", TickStyle::PowersOfTwo},
                    {"env-steps per second (median)", TickStyle::PowersOfTen});
  chart.subtitle(r.command);
  ChartSeries measured{"measured (" + r.what + ", " + r.mode + ")", {}, "#1f77b4", true, false};
  for (const SweepPoint& p : r.points) measured.points.push_back({static_cast<double>(p.num_envs), p.rate});
  // Linear scaling from the first point, drawn up to twice the best rate so it does not flatten the figure.
  ChartSeries linear{"linear scaling from the first point", {}, "#999999", false, true};
  const SweepPoint& first = r.points.front();
  const double ceiling = 2.0 * r.points[a.best].rate;
  const double slope = first.rate / static_cast<double>(first.num_envs);
  for (const SweepPoint& p : r.points) {
    const double n = static_cast<double>(p.num_envs);
    if (slope * n > ceiling) {
      linear.points.push_back({ceiling / slope, ceiling});
      break;
    }
    linear.points.push_back({n, slope * n});
  }
  chart.add(linear).add(measured);
  const SweepPoint& rec = r.points[a.recommended];
  const ChartPoint rec_at{static_cast<double>(rec.num_envs), rec.rate};
  if (a.knee && *a.knee == a.recommended) {
    chart.add(ChartMarker{rec_at, "knee and recommended --num-envs: " + envs_text(rec.num_envs), "#d62728"});
  } else {
    if (a.knee) {
      const SweepPoint& k = r.points[*a.knee];
      chart.add(
          ChartMarker{{static_cast<double>(k.num_envs), k.rate}, "knee: N = " + envs_text(k.num_envs), "#d62728"});
    }
    chart.add(ChartMarker{rec_at, "recommended --num-envs " + std::to_string(rec.num_envs), "#2ca02c", true});
  }
  return chart.svg();
}

std::string sweep_table(const SweepResult& r) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%12s %8s %14s %10s %8s %12s\n", "num_envs", "steps", "env-steps/s", "ns/step",
                "gain", "device MiB");
  out += line;
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const SweepPoint& p = r.points[k];
    const std::string gain = k ? format_number("%.2fx", r.analysis.gains[k - 1]) : "";
    std::snprintf(line, sizeof line, "%12lld %8lld %14.4g %10.3g %8s %12.1f\n", static_cast<long long>(p.num_envs),
                  static_cast<long long>(p.steps), p.rate, 1e9 / p.rate, gain.c_str(),
                  static_cast<double>(p.device_bytes) / (1024.0 * 1024.0));
    out += line;
  }
  const ScalingAnalysis& a = r.analysis;
  out += "stopped: " + r.stop_detail + "\n";
  out += a.knee
             ? "knee: N = " + envs_text(r.points[*a.knee].num_envs) + ": doubling it gained " +
                   format_number("%.3gx", a.gains[*a.knee]) + ", under " + format_number("%.3gx", r.rule.min_gain) +
                   "\n"
             : "knee: not reached (every doubling gained at least " + format_number("%.3gx", r.rule.min_gain) + ")\n";
  out += "best: " + format_number("%.4g", r.points[a.best].rate) +
         " env-steps/s at N = " + envs_text(r.points[a.best].num_envs) + "\n";
  if (a.fit.valid)
    out += "model: a step of N envs takes " + format_number("%.3g", a.fit.overhead_s * 1e6) + " us + N / " +
           format_number("%.4g", a.fit.peak_rate) + " s, so the rate tends to " +
           format_number("%.4g", a.fit.peak_rate) +
           " env-steps/s and reaches half of it at N = " + format_number("%.3g", a.fit.half_rate_num_envs) +
           " (rms error " + format_number("%.1f", 100.0 * a.fit.rms_relative_error) + "%)\n";
  out += "recommended: --num-envs " + std::to_string(r.points[a.recommended].num_envs) + " (the smallest N within " +
         format_number("%.0f", 100.0 * r.rule.recommend_fraction) + "% of the best rate)\n";
  return out;
}

}  // namespace surge::throughput
