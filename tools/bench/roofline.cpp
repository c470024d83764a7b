#include "tools/bench/roofline.hpp"

#include <algorithm>
#include <cmath>

#include "sim/error.hpp"

namespace surge::throughput {

const char* bound_name(Bound bound) { return bound == Bound::Compute ? "compute" : "memory"; }

RooflinePlacement place_on_roofline(const PhaseWork& work, double seconds, const Ceilings& ceilings) {
  SURGE_CHECK(work.flops > 0 && work.bytes > 0, "phase '" + work.name + "' needs positive FLOP and byte counts");
  SURGE_CHECK(seconds > 0 && std::isfinite(seconds), "phase '" + work.name + "' needs a positive time");
  SURGE_CHECK(ceilings.flops_per_s > 0 && ceilings.bytes_per_s > 0, "roofline ceilings must be positive");
  RooflinePlacement p;
  p.intensity = work.flops / work.bytes;
  p.achieved_flops_per_s = work.flops / seconds;
  p.achieved_bytes_per_s = work.bytes / seconds;
  p.fraction_of_compute = p.achieved_flops_per_s / ceilings.flops_per_s;
  p.fraction_of_bandwidth = p.achieved_bytes_per_s / ceilings.bytes_per_s;
  const double memory_roof = ceilings.bytes_per_s * p.intensity;
  p.attainable_flops_per_s = std::min(ceilings.flops_per_s, memory_roof);
  p.fraction_of_roof = p.achieved_flops_per_s / p.attainable_flops_per_s;
  p.bound = memory_roof < ceilings.flops_per_s ? Bound::Memory : Bound::Compute;
  return p;
}

}  // namespace surge::throughput
