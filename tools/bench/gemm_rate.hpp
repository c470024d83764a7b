#pragma once
// The compute ceiling of the roofline: the rate of a large single-precision GEMM through the learner's
// own launcher (rl::gemm: OpenBLAS on the CPU, cuBLASLt on CUDA, TF32 as the learner has it).
#include <cstdint>
#include <string>

#include "sim/device.hpp"

namespace surge::cli {

struct GemmRate {
  double flops_per_s = 0;  // median over the repeats, 2 m n k FLOP per GEMM
  std::int64_t size = 0;   // m = n = k
  std::string source;      // "OpenBLAS 0.3.21 SGEMM", "cuBLASLt SGEMM"
};

GemmRate measure_sgemm_rate(Device device, std::int64_t size, int repeats);

}  // namespace surge::cli
