#pragma once
// A doubling sweep's results and their three renderings: the JSON report (schema in
// docs/throughput.md), the SVG figure (throughput against N on log-log axes, knee and recommendation
// marked) and the table printed to the terminal.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench/knee.hpp"

namespace surge::throughput {

struct SweepPoint {
  std::int64_t num_envs = 0;
  std::int64_t steps = 0;               // T of each rollout
  std::int64_t batches_per_repeat = 0;  // rollouts (env) or iterations (train) run back to back per repeat
  std::vector<double> rates;            // env-steps/s of each timed repeat
  double rate = 0;                      // their median
  std::size_t device_bytes = 0;         // device memory this N allocates (its memory plan's total)
};

struct SweepResult {
  std::string what;  // "env"
  std::string scenario;
  std::string device;  // "cpu", "cuda:0"
  std::string mode;    // "fused" or "step"
  std::int64_t from = 0, to = 0;
  std::int64_t min_env_steps = 0;  // per timed repeat
  int repeats = 0;
  KneeRule rule;
  std::string command;  // the command line that produced it
  std::vector<SweepPoint> points;
  SweepStop stop = SweepStop::Continue;
  std::string stop_detail;  // one sentence: which doubling, which limit, how much memory
  bool memory_known = false;
  std::size_t free_bytes = 0;  // free device memory when the sweep began
  std::string memory_source;
  ScalingAnalysis analysis;  // of the points
};

std::vector<ScalingPoint> scaling_points(const std::vector<SweepPoint>& points);

std::string sweep_json(const SweepResult& result, const std::string& surge_version);
std::string sweep_svg(const SweepResult& result);
std::string sweep_table(const SweepResult& result);

}  // namespace surge::throughput
