#pragma once
// Small device helpers that plain C++ in rl/ may call (their kernels live in mlp.cu).
#include <cstdint>

#include "sim/device.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// Fills values[count] with `value` on the stream's device. Instantiated for float, double, int32, uint8.
template <class Scalar>
void fill(const Stream& stream, Scalar* values, std::int64_t count, Scalar value);

// Doubles of scratch a parallel_reduce of `width` needs on `device` (sim/parallel.cuh's
// reduce_scratch_size, for code that may not include that header).
std::int64_t reduce_scratch_doubles(Device device, int width);

}  // namespace surge::rl
