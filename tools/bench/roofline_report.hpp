#pragma once
// The roofline report of one run: the two ceilings measured, and each phase's work, time and place
// under them, rendered as JSON (schema in docs/throughput.md), an SVG figure and a terminal table.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/roofline.hpp"

namespace surge::throughput {

struct RooflinePhase {
  PhaseWork work;      // per execution, of the unit below
  std::string unit;    // what one execution is: "env-step", "iteration"
  double seconds = 0;  // measured time of one execution
  RooflinePlacement placement;
};

// The phases of a training iteration add up to it, with the small kernels between them (metrics,
// learning-rate schedule, epoch bookkeeping) as "other".
struct IterationTiming {
  double seconds = 0;        // the whole diagnostic iteration
  double other_seconds = 0;  // time in no counted phase
};

struct RooflineReport {
  std::string scenario, device, command;
  std::int64_t num_envs = 0, steps = 0;
  Ceilings ceilings;
  std::string gemm_source;     // "OpenBLAS 0.3.21 SGEMM", "cuBLASLt SGEMM"
  std::int64_t gemm_size = 0;  // m = n = k of the ceiling's GEMM
  std::size_t copy_bytes = 0;  // size of the ceiling's copy
  std::vector<RooflinePhase> phases;
  std::string what = "env";   // "env": env-step phases; "train": the phases of a PPO iteration
  IterationTiming iteration;  // "train" only
};

// Fills each phase's placement from its work, time and the report's ceilings.
void place_phases(RooflineReport& report);

std::string roofline_json(const RooflineReport& report, const std::string& surge_version);
std::string roofline_svg(const RooflineReport& report);
std::string roofline_table(const RooflineReport& report);

}  // namespace surge::throughput
