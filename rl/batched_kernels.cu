// The batched learner's shared pieces; its launchers live next to their per-agent twins.
#include "rl/batched_kernels.hpp"

#include "sim/parallel_segments.cuh"

namespace surge::rl {

std::int64_t batched_reduce_scratch_doubles(Device device, std::int64_t agents, int width) {
  return reduce_segments_scratch_size(device, agents, width);
}

}  // namespace surge::rl
