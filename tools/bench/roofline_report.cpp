#include "tools/bench/roofline_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/bench/svg_chart.hpp"
#include "tools/cli/json.hpp"

namespace surge::throughput {

using cli::benchmark_json;
using cli::JsonObject;

void place_phases(RooflineReport& report) {
  for (RooflinePhase& phase : report.phases)
    phase.placement = place_on_roofline(phase.work, phase.seconds, report.ceilings);
}

std::string roofline_json(const RooflineReport& r, const std::string& surge_version) {
  JsonObject ceilings;
  ceilings.add("gemm_flops_per_s", r.ceilings.flops_per_s)
      .add("gemm_source", r.gemm_source)
      .add("gemm_size", r.gemm_size)
      .add("copy_bytes_per_s", r.ceilings.bytes_per_s)
      .add("copy_bytes", static_cast<std::int64_t>(r.copy_bytes))
      .add("ridge_flops_per_byte", r.ceilings.ridge_intensity());
  const bool train = r.what == "train";
  std::vector<JsonObject> phases;
  for (const RooflinePhase& phase : r.phases) {
    const RooflinePlacement& p = phase.placement;
    JsonObject json;
    json.add("name", phase.work.name)
        .add("unit", phase.unit)
        .add("flops", phase.work.flops)
        .add("bytes", phase.work.bytes)
        .add("seconds", phase.seconds)
        .add("intensity_flops_per_byte", p.intensity)
        .add("achieved_flops_per_s", p.achieved_flops_per_s)
        .add("achieved_bytes_per_s", p.achieved_bytes_per_s)
        .add("fraction_of_compute", p.fraction_of_compute)
        .add("fraction_of_bandwidth", p.fraction_of_bandwidth)
        .add("attainable_flops_per_s", p.attainable_flops_per_s)
        .add("fraction_of_roof", p.fraction_of_roof)
        .add("bound", bound_name(p.bound));
    json.add("share_of_iteration", train ? std::optional(phase.seconds / r.iteration.seconds) : std::nullopt);
    phases.push_back(json);
  }
  JsonObject json = benchmark_json(surge_version, "roofline", r.what, r.scenario, r.device);
  json.add("command", r.command)
      .add("num_envs", r.num_envs)
      .add("steps", r.steps)
      .add("ceilings", ceilings)
      .add_objects("phases", phases);
  JsonObject iteration;
  iteration.add("seconds", r.iteration.seconds).add("other_seconds", r.iteration.other_seconds);
  json.add("iteration", train ? std::optional(iteration) : std::nullopt);
  return json.str() + "\n";
}

std::string roofline_svg(const RooflineReport& r) {
  SURGE_CHECK(!r.phases.empty(), "a roofline figure needs at least one phase");
  const double ridge = r.ceilings.ridge_intensity();
  double low = ridge, high = ridge;
  for (const RooflinePhase& phase : r.phases) {
    low = std::min(low, phase.placement.intensity);
    high = std::max(high, phase.placement.intensity);
  }
  low /= 4.0;
  high *= 4.0;
  LogLogChart chart("Roofline (" + r.what + "): " + r.scenario + " on " + r.device,
                    {"arithmetic intensity (FLOP per byte)", TickStyle::PowersOfTen},
                    {"FLOP per second", TickStyle::PowersOfTen});
  chart.subtitle(r.command);
  chart.add(ChartSeries{"memory roof: copy bandwidth " + format_number("%.3g", r.ceilings.bytes_per_s * 1e-9) +
                            " GB/s (a copy of " + format_bytes(r.copy_bytes) + ", read + write)",
                        {{low, r.ceilings.bytes_per_s * low}, {ridge, r.ceilings.flops_per_s}},
                        "#555555",
                        false,
                        false});
  chart.add(ChartSeries{"compute roof: " + r.gemm_source + " " + format_number("%.3g", r.ceilings.flops_per_s * 1e-9) +
                            " GFLOP/s (m = n = k = " + std::to_string(r.gemm_size) + ")",
                        {{ridge, r.ceilings.flops_per_s}, {high, r.ceilings.flops_per_s}},
                        "#555555",
                        false,
                        true});
  // Okabe and Ito's colour-blind-safe palette, without its yellow.
  const char* colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
  std::vector<std::string> above_memory, above_compute;
  for (std::size_t k = 0; k < r.phases.size(); ++k) {
    const RooflinePhase& phase = r.phases[k];
    const double percent = 100.0 * phase.placement.fraction_of_roof;
    chart.add(ChartMarker{{phase.placement.intensity, phase.placement.achieved_flops_per_s},
                          phase.work.name + " " + format_number("%.0f%%", percent),
                          colours[k % 7]});
    if (phase.placement.fraction_of_roof > 1.0)
      (phase.placement.bound == Bound::Memory ? above_memory : above_compute)
          .push_back(phase.work.name + " " + format_number("%.0f%%", percent));
  }
  chart.note(
      "Both roofs are measured in this run (the same device, before the phases), not taken from a data sheet. "
      "A phase's percentage is its FLOP/s over the roof at its intensity: the lower of the two roofs there.");
  auto list = [](const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t k = 0; k < names.size(); ++k) text += (k ? ", " : "") + names[k];
    return text;
  };
  if (!above_memory.empty())
    chart.note("Above the memory roof (" + list(above_memory) + "): that roof is the rate of a " +
               format_bytes(r.copy_bytes) +
               " copy, sized to exceed the caches and so measure main memory; a phase whose data stay in cache "
               "between its kernels moves its bytes (counted as if each went to memory) faster than that.");
  if (!above_compute.empty())
    chart.note("Above the compute roof (" + list(above_compute) +
               "): that roof is the rate of one SGEMM of m = n = k = " + std::to_string(r.gemm_size) + " through " +
               r.gemm_source +
               ", not the device's peak (a small GEMM falls well short of it); a phase's kernels can run faster.");
  return chart.svg();
}

std::string roofline_table(const RooflineReport& r) {
  std::string out;
  out += "ceilings: " + r.gemm_source + " " + format_number("%.4g", r.ceilings.flops_per_s * 1e-9) +
         " GFLOP/s (m = n = k = " + std::to_string(r.gemm_size) + "), copy " +
         format_number("%.4g", r.ceilings.bytes_per_s * 1e-9) + " GB/s (read + write), ridge at " +
         format_number("%.3g", r.ceilings.ridge_intensity()) + " FLOP/byte\n";
  char line[256];
  const bool train = r.what == "train";
  std::snprintf(line, sizeof line, "%-18s %-9s %10s %10s %9s %11s %7s %9s %8s %8s %7s %7s %8s\n", "phase", "per",
                "FLOP", "bytes", "FLOP/B", "time", train ? "share" : "", "GFLOP/s", "GB/s", "%comp", "%bw", "%roof",
                "bound");
  out += line;
  auto share = [&](double seconds) {
    return train ? format_number("%.1f%%", 100.0 * seconds / r.iteration.seconds) : std::string();
  };
  for (const RooflinePhase& phase : r.phases) {
    const RooflinePlacement& p = phase.placement;
    std::snprintf(line, sizeof line,
                  "%-18s %-9s %10.4g %10.4g %9.3g %9.3g s %7s %9.4g %8.4g %7.2f%% %6.1f%% %6.1f%% %8s\n",
                  phase.work.name.c_str(), phase.unit.c_str(), phase.work.flops, phase.work.bytes, p.intensity,
                  phase.seconds, share(phase.seconds).c_str(), p.achieved_flops_per_s * 1e-9,
                  p.achieved_bytes_per_s * 1e-9, 100.0 * p.fraction_of_compute, 100.0 * p.fraction_of_bandwidth,
                  100.0 * p.fraction_of_roof, bound_name(p.bound));
    out += line;
  }
  if (train) {
    std::snprintf(line, sizeof line, "%-18s %-9s %10s %10s %9s %9.3g s %7s\n", "other", "iteration", "", "", "",
                  r.iteration.other_seconds, share(r.iteration.other_seconds).c_str());
    out += line;
    out += "iteration: " + format_number("%.4g", r.iteration.seconds) +
           " s in the diagnostic pass (outside any CUDA graph), " +
           format_number("%.4g", static_cast<double>(r.num_envs * r.steps) / r.iteration.seconds) + " env-steps/s\n";
  }
  return out;
}

}  // namespace surge::throughput
