// The cuDNN convolution (rl/conv_cudnn.hpp) against its CPU twin (rl/conv.hpp, im2col + BLAS) on the same
// inputs, for the three passes, on CleanRL's Atari shapes and on odd ones; and its calls captured in a
// CUDA graph. Runs only where a usable GPU exists (the GPU test main reports a skip otherwise).
// Tolerance: both sides round each sum of n products in float, in different orders, so they may differ by
// twice the bound of tests/test_conv.cpp; here the looser atol + rtol |cpu| form with the reduction length
// in it: 4 n u (|cpu| + mean |term|) is replaced by 1e-5 (1 + |cpu|) * sqrt(n), which holds for the
// random sums drawn here (their rounding grows as sqrt(n), not n) while catching any indexing error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/conv.hpp"
#include "rl/conv_cudnn.hpp"
#include "rl/device_graph.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"

using namespace surge;
using surge::rl::ConvShape;

namespace {

const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

// Random values in [-1, 1) on the host, and the same values on the GPU.
struct Operand {
  std::vector<float> host;
  DeviceBuffer<float> device;
  Operand(std::int64_t count, std::uint64_t stream_id, const Stream& gpu)
      : host(static_cast<std::size_t>(count)), device(kCuda, count) {
    Rng rng(3, stream_id, 0);
    for (float& x : host) x = rng.uniform(-1.0f, 1.0f);
    from_host(device.span(), host, gpu);
  }
};

void check_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double n, const char* what) {
  REQUIRE(gpu.size() == cpu.size());
  const double tolerance = 1e-5 * std::sqrt(n);
  for (std::size_t i = 0; i < gpu.size(); ++i)
    if (std::abs(gpu[i] - cpu[i]) > tolerance * (1 + std::abs(cpu[i]))) {
      INFO(what << " element " << i << ": cuDNN " << gpu[i] << ", CPU " << cpu[i]);
      CHECK(false);
      return;
    }
}

void check_shape(const ConvShape& s, std::int64_t rows) {
  INFO(s.str() << ", rows " << rows);
  Stream cpu(kCpu), gpu(kCuda);
  const Operand x(rows * s.input_size(), 1, gpu), w(s.out_channels * s.patch_size(), 2, gpu), b(s.out_channels, 3, gpu),
      dy(rows * s.output_size(), 4, gpu);
  std::vector<float> columns(static_cast<std::size_t>(s.column_size(rows)));
  std::vector<float> y(dy.host.size()), dx(x.host.size()), dw(w.host.size()), db(b.host.size());
  rl::conv_forward(cpu, s, rows, x.host.data(), 1.0f, w.host.data(), b.host.data(), columns.data(), s.column_size(rows),
                   y.data());
  rl::conv_backward_data(cpu, s, rows, dy.host.data(), w.host.data(), columns.data(), s.column_size(rows), dx.data());
  rl::conv_backward_filter(cpu, s, rows, x.host.data(), 1.0f, dy.host.data(), columns.data(), s.column_size(rows),
                           dw.data(), db.data());

  const rl::CudnnConv conv(kCuda, s, rows);
  INFO("algorithms " << conv.algorithms() << ", workspace " << conv.workspace_bytes() << " bytes");
  DeviceBuffer<std::uint8_t> workspace(kCuda,
                                       static_cast<std::int64_t>(std::max<std::size_t>(conv.workspace_bytes(), 1)));
  DeviceBuffer<float> y_gpu(kCuda, static_cast<std::int64_t>(y.size())),
      dx_gpu(kCuda, static_cast<std::int64_t>(dx.size())), dw_gpu(kCuda, static_cast<std::int64_t>(dw.size())),
      db_gpu(kCuda, static_cast<std::int64_t>(db.size()));
  rl::IterationGraph graph(gpu);
  graph.capture([&] {
    conv.forward(gpu, x.device.data(), w.device.data(), b.device.data(), workspace.data(), y_gpu.data());
    conv.backward_data(gpu, dy.device.data(), w.device.data(), workspace.data(), dx_gpu.data());
    conv.backward_filter(gpu, x.device.data(), dy.device.data(), workspace.data(), dw_gpu.data(), db_gpu.data());
  });
  for (int replay = 0; replay < 2; ++replay) {
    graph.launch();
    check_close(to_host(y_gpu.cspan(), gpu), y, double(s.patch_size()), "forward");
    check_close(to_host(dx_gpu.cspan(), gpu), dx, double(s.out_channels) * s.kernel_height * s.kernel_width,
                "backward data");
    check_close(to_host(dw_gpu.cspan(), gpu), dw, double(rows) * s.positions(), "backward filter");
    check_close(to_host(db_gpu.cspan(), gpu), db, double(rows) * s.positions(), "bias gradient");
  }
}

}  // namespace

TEST_CASE("cuDNN convolutions match the CPU im2col path, captured in a graph", "[conv][gpu]") {
  check_shape(ConvShape{84, 84, 4, 32, 8, 8, 4, 0}, 16);  // CleanRL's Atari encoder
  check_shape(ConvShape{20, 20, 32, 64, 4, 4, 2, 0}, 16);
  check_shape(ConvShape{9, 9, 64, 64, 3, 3, 1, 0}, 16);
  check_shape(ConvShape{13, 11, 3, 5, 3, 5, 2, 1}, 5);  // padded, non-square
  check_shape(ConvShape{7, 9, 2, 3, 2, 2, 3, 2}, 3);    // stride past the kernel
}
