// bench_cnn: the CNN encoder's forward and backward passes on the CPU backend (im2col + CBLAS, and oneDNN in
// builds that have it), timed over repeats at one minibatch shape, with the medians, the GFLOP/s they reach
// and the load average.
//   bench_cnn [ROWS [FRAME [CHANNELS [ENCODER [REPEATS]]]]]      defaults: 256 84 4 nature 7
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/bench/standalone_bench.hpp"

namespace {

long parse_count(const char* text, const char* what, long low, long high) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < low || value > high)
    throw surge::InputError(std::string(what) + " '" + text + "' must be a whole number in [" + std::to_string(low) +
                            ", " + std::to_string(high) + "]");
  return value;
}

int run(int argc, char** argv) {
  using namespace surge::rl;
  const std::int64_t rows = argc > 1 ? parse_count(argv[1], "ROWS", 1, 1 << 16) : 256;
  const int frame = argc > 2 ? static_cast<int>(parse_count(argv[2], "FRAME", 8, 1024)) : 84;
  const int channels = argc > 3 ? static_cast<int>(parse_count(argv[3], "CHANNELS", 1, 64)) : 4;
  const std::string name = argc > 4 ? argv[4] : "nature";
  const int repeats = argc > 5 ? static_cast<int>(parse_count(argv[5], "REPEATS", 1, 1000)) : 7;

  ParamTable table;
  const CnnEncoder encoder(table, "encoder", FrameShape{frame, frame, channels}, encoder_config(name));
  std::vector<double> initial(static_cast<std::size_t>(table.total()), 0.0);
  surge::Rng rng(1, 0, 0);
  encoder.initialize(initial, rng);
  const std::vector<float> params(initial.begin(), initial.end());
  std::vector<float> grads(params.size(), 0.0f);
  std::vector<std::uint8_t> frames(static_cast<std::size_t>(rows * encoder.frame_size()));
  for (auto& p : frames) p = static_cast<std::uint8_t>(rng.next_u32() & 255u);
  std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
  std::vector<float> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
  std::vector<float> features(static_cast<std::size_t>(rows * encoder.feature_dim()));
  std::vector<float> d_features(features.size());
  for (auto& d : d_features) d = rng.uniform(-1.0f, 1.0f) / static_cast<float>(rows);

  std::cout << "encoder " << name << " on " << rows << " rows of " << frame << "x" << frame << "x" << channels
            << " uint8, " << surge::plural(repeats, "repeat") << "; workspace "
            << surge::format_significant(encoder.workspace_bytes(rows, 4) / 1048576.0) << " MiB\n";
  const double flops = 2.0 * encoder.forward_flops_per_row() * static_cast<double>(rows);
  // Medians of forward and backward through the im2col path (convs null) or oneDNN's.
  auto measure = [&](const char* variant, const CnnCpuConvs* convs) {
    surge::Stream stream(surge::Device::cpu());
    using Clock = std::chrono::steady_clock;
    std::vector<double> forward_s, backward_s;
    for (int r = 0; r <= repeats; ++r) {  // the first round warms caches and threads and is not counted
      const auto t0 = Clock::now();
      cnn_forward(stream, encoder, params.data(), frames.data(), rows, activations.data(), scratch.data(),
                  features.data(), convs);
      const auto t1 = Clock::now();
      cnn_backward(stream, encoder, params.data(), frames.data(), rows, activations.data(), features.data(),
                   d_features.data(), grads.data(), scratch.data(), convs);
      const auto t2 = Clock::now();
      if (r == 0) continue;
      forward_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      backward_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    const double forward = surge::bench::median(forward_s), backward = surge::bench::median(backward_s);
    std::cout << "  " << variant << ": forward median " << surge::format_significant(forward * 1e3) << " ms ("
              << surge::format_significant(flops / forward * 1e-9) << " GFLOP/s), backward median "
              << surge::format_significant(backward * 1e3) << " ms ("
              << surge::format_significant(2 * flops / backward * 1e-9) << " GFLOP/s nominal)\n";
  };
  measure(("im2col + " + surge::rl::cpu_gemm_library()).c_str(), nullptr);
#if defined(SURGE_WITH_ONEDNN)
  const CnnCpuConvs convs(encoder, rows);
  measure("oneDNN", &convs);
#endif
  std::cout << "  load average " << surge::bench::load_average() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return surge::bench::standalone_main("bench_cnn", [&] { return run(argc, argv); });
}
