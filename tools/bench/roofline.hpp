#pragma once
// The roofline model: a phase that does F floating-point operations and moves B bytes cannot run
// faster than min(peak FLOP/s, bandwidth * F / B). The two ceilings are measured in the same run (a
// large SGEMM, a large device copy); each phase's work is counted analytically from its shapes.
#include <string>

namespace surge::throughput {

// The work of one execution of a phase.
struct PhaseWork {
  std::string name;
  double flops = 0;  // floating-point operations (a fused multiply-add counts two)
  double bytes = 0;  // bytes that must be read or written in memory, each counted once
};

struct Ceilings {
  double flops_per_s = 0;  // rate of a large SGEMM
  double bytes_per_s = 0;  // device copy bandwidth, read + write
  // Arithmetic intensity (FLOP per byte) at which the two roofs meet.
  double ridge_intensity() const { return flops_per_s / bytes_per_s; }
};

enum class Bound { Memory, Compute };
const char* bound_name(Bound bound);  // "memory", "compute"

// Where a phase that took `seconds` per execution sits against the ceilings.
struct RooflinePlacement {
  double intensity = 0;  // flops / bytes
  double achieved_flops_per_s = 0;
  double achieved_bytes_per_s = 0;
  double fraction_of_compute = 0;     // achieved FLOP/s over the SGEMM rate
  double fraction_of_bandwidth = 0;   // achieved bytes/s over the copy bandwidth
  double attainable_flops_per_s = 0;  // the roof above this intensity: min(peak, bandwidth * intensity)
  double fraction_of_roof = 0;        // achieved over attainable: how close the phase is to its limit
  Bound bound = Bound::Memory;        // which roof is the lower one at this intensity
};

// Needs positive work counts, time and ceilings (surge::Error otherwise).
RooflinePlacement place_on_roofline(const PhaseWork& work, double seconds, const Ceilings& ceilings);

}  // namespace surge::throughput
