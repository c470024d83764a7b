#include "tools/bench/gemm_rate.hpp"

#include <vector>

#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "sim/timer.hpp"
#include "tools/bench/env_bench.hpp"

namespace surge::cli {

GemmRate measure_sgemm_rate(Device device, std::int64_t size, int repeats) {
  SURGE_CHECK(size > 0 && repeats > 0, "GEMM rate needs a positive size and repeat count");
  rl::prepare_gemm(device);
  Stream stream(device);
  const std::int64_t elements = size * size;
  DeviceBuffer<float> a(device, elements), b(device, elements), c(device, elements);  // [size][size] each
  const StreamDrain drain(stream);  // the buffers above outlive the work enqueued on them
  // Values of order one whose products stay far from overflow and from denormals.
  const std::vector<float> ones(static_cast<std::size_t>(elements), 1.0f / static_cast<float>(size));
  from_host(a.span(), ones, stream);
  from_host(b.span(), ones, stream);
  auto multiply = [&] {
    rl::gemm<float>(stream, rl::Transpose::No, rl::Transpose::No, size, size, size, 1.0f, a.data(), size, b.data(),
                    size, 0.0f, c.data(), size);
  };
  multiply();  // warm-up: library threads, algorithm choice, first touch
  stream.synchronize();
  std::vector<double> rates;
  StreamTimer timer(stream);
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  for (int r = 0; r < repeats; ++r) {
    timer.start();
    multiply();
    timer.stop();
    rates.push_back(flops / timer.seconds());
  }
  GemmRate rate;
  rate.flops_per_s = median(rates);
  rate.size = size;
  rate.source = (device.is_cuda() ? std::string("cuBLASLt") : rl::cpu_gemm_library()) + " SGEMM";
  return rate;
}

}  // namespace surge::cli
