// bench_conv_onednn: Surge's im2col + CBLAS convolution (rl/conv.hpp) beside oneDNN's on the same NHWC
// tensors and KRSC (ohwi) weights (rl/conv_onednn.hpp), for each layer of the nature encoder at one minibatch, each
// pass of each variant checked against the other before it is timed. Medians over repeats, and the load average.
//   bench_conv_onednn [ROWS [REPEATS]]      defaults: 256 5
// oneDNN convolves float images only, so its first layer is handed the frames already scaled to float
// (a copy the im2col path does not make; it is left out of oneDNN's time).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/conv.hpp"
#include "rl/conv_onednn.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/philox.hpp"
#include "tools/bench/standalone_bench.hpp"

namespace {

using surge::rl::ConvShape;

double median_seconds(int repeats, const std::function<void()>& pass) {
  std::vector<double> times;
  pass();  // warm-up
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return surge::bench::median(times);
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1.0 + std::abs(double(b[i]))));
  return worst;
}

struct Tensors {
  std::vector<float> x, w, b, y, dy, dx, dw, db;
};

void bench_layer(const ConvShape& s, std::int64_t rows, int repeats) {
  surge::Rng rng(2, static_cast<std::uint64_t>(s.output_size()), 0);
  auto drawn = [&](std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = rng.uniform(-1.0f, 1.0f);
    return v;
  };
  Tensors ours{
      drawn(rows * s.input_size()), drawn(s.out_channels * s.patch_size()), drawn(s.out_channels), {}, {}, {}, {}, {}};
  ours.dy = drawn(rows * s.output_size());
  ours.y.resize(ours.dy.size()), ours.dx.resize(ours.x.size()), ours.dw.resize(ours.w.size()),
      ours.db.resize(ours.b.size());
  Tensors theirs = ours;
  std::vector<float> columns(static_cast<std::size_t>(s.column_size(std::min<std::int64_t>(rows, 32))));
  const std::int64_t capacity = static_cast<std::int64_t>(columns.size());
  surge::Stream cpu(surge::Device::cpu());
  const surge::rl::OnednnConv onednn(s, rows);
  std::cout << "  " << s.str() << ": oneDNN kernels " << onednn.kernels() << "\n";

  const std::function<void()> im2col_passes[] = {
      [&] {
        surge::rl::conv_forward(cpu, s, rows, ours.x.data(), 1.0f, ours.w.data(), ours.b.data(), columns.data(),
                                capacity, ours.y.data());
      },
      [&] {
        surge::rl::conv_backward_data(cpu, s, rows, ours.dy.data(), ours.w.data(), columns.data(), capacity,
                                      ours.dx.data());
      },
      [&] {
        surge::rl::conv_backward_filter(cpu, s, rows, ours.x.data(), 1.0f, ours.dy.data(), columns.data(), capacity,
                                        ours.dw.data(), ours.db.data());
      }};
  const std::function<void()> onednn_passes[] = {
      [&] { onednn.forward(theirs.x.data(), theirs.w.data(), theirs.b.data(), theirs.y.data()); },
      [&] { onednn.backward_data(theirs.dy.data(), theirs.w.data(), theirs.dx.data()); },
      [&] { onednn.backward_filter(theirs.x.data(), theirs.dy.data(), theirs.dw.data(), theirs.db.data()); }};

  // Both variants must agree before either is timed.
  for (int p = 0; p < 3; ++p) im2col_passes[p](), onednn_passes[p]();
  // Each reduction of n terms is rounded in a different order by each side: the check is the GPU test's,
  // 1e-5 sqrt(n) (1 + |value|) (tests/test_conv_gpu.cpp), enough to catch any indexing error.
  const double positions = double(rows) * s.positions();
  const struct {
    const std::vector<float>&a, &b;
    double n;
  } pairs[] = {{theirs.y, ours.y, double(s.patch_size())},
               {theirs.dx, ours.dx, double(s.out_channels) * s.kernel_height * s.kernel_width},
               {theirs.dw, ours.dw, positions},
               {theirs.db, ours.db, positions}};
  for (const auto& pair : pairs) {
    const double d = max_relative_difference(pair.a, pair.b);
    if (!(d <= 1e-5 * std::sqrt(pair.n)))
      throw surge::Error("oneDNN and im2col disagree on " + s.str() + ": " + std::to_string(d));
  }
  const char* names[] = {"forward", "backward data", "backward filter"};
  for (int p = 0; p < 3; ++p) {
    const double ours_s = median_seconds(repeats, im2col_passes[p]);
    const double theirs_s = median_seconds(repeats, onednn_passes[p]);
    std::cout << "    " << names[p] << ": im2col " << surge::format_significant(ours_s * 1e3) << " ms, oneDNN "
              << surge::format_significant(theirs_s * 1e3) << " ms\n";
  }
}

int run(int argc, char** argv) {
  const std::int64_t rows = argc > 1 ? std::atol(argv[1]) : 256;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  if (rows < 1 || rows > 65536 || repeats < 1 || repeats > 1000)
    throw surge::InputError("ROWS must be in [1, 65536] and REPEATS in [1, 1000]");
  surge::rl::ParamTable table;
  const surge::rl::CnnEncoder encoder(table, "encoder", surge::rl::FrameShape{84, 84, 4},
                                      surge::rl::encoder_config("nature"));
  std::cout << "nature encoder layers, " << rows << " rows, medians of " << surge::plural(repeats, "repeat") << "\n";
  for (int l = 0; l < encoder.num_convs(); ++l) bench_layer(encoder.conv(l), rows, repeats);
  std::cout << "load average " << surge::bench::load_average() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return surge::bench::standalone_main("bench_conv_onednn", [&] { return run(argc, argv); });
}
