// bench_conv_onednn: Surge's im2col + CBLAS convolution (rl/conv.hpp) beside oneDNN's on the same NHWC
// tensors and KRSC (ohwi) weights, for each layer of the nature encoder at one minibatch, each pass of
// each variant checked against the other before it is timed. Medians over repeats, and the load average.
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

#include <oneapi/dnnl/dnnl.hpp>

#include "rl/cnn_encoder.hpp"
#include "rl/conv.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/philox.hpp"
#include "tools/bench/standalone_bench.hpp"

namespace {

using surge::rl::ConvShape;
using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

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

void bench_layer(const ConvShape& s, std::int64_t rows, int repeats, dnnl::engine& engine, dnnl::stream& stream) {
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

  const dnnl::memory::dims src{rows, s.in_channels, s.in_height, s.in_width},
      weights{s.out_channels, s.in_channels, s.kernel_height, s.kernel_width}, bias{s.out_channels},
      dst{rows, s.out_channels, s.out_height(), s.out_width()}, strides{s.stride, s.stride},
      padding{s.padding, s.padding};
  // Images stay NHWC (the rollout's layout); the weights take whatever layout oneDNN prefers (its fast
  // kernels want blocked weights: with ohwi it falls back to its reference kernel), reordered from and to
  // ours inside the timed passes.
  const dnnl::memory::desc src_md(src, DataType::f32, Tag::nhwc), w_md(weights, DataType::f32, Tag::ohwi),
      w_any(weights, DataType::f32, Tag::any), b_md(bias, DataType::f32, Tag::a), dst_md(dst, DataType::f32, Tag::nhwc);
  const dnnl::convolution_forward::primitive_desc forward_pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_md,
                                      w_any, b_md, dst_md, strides, padding, padding),
      engine);
  const dnnl::convolution_backward_data::primitive_desc data_pd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, w_any, dst_md, strides,
                                            padding, padding),
      engine, forward_pd);
  const dnnl::convolution_backward_weights::primitive_desc filter_pd(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_md, w_any, b_md, dst_md,
                                               strides, padding, padding),
      engine, forward_pd);
  auto wrap = [&](const dnnl::memory::desc& md, std::vector<float>& v) { return dnnl::memory(md, engine, v.data()); };
  const dnnl::convolution_forward forward(forward_pd);
  const dnnl::convolution_backward_data data(data_pd);
  const dnnl::convolution_backward_weights filter(filter_pd);
  dnnl::memory user_w = wrap(w_md, theirs.w), user_dw = wrap(w_md, theirs.dw);
  dnnl::memory forward_w(forward_pd.weights_desc(), engine), data_w(data_pd.weights_desc(), engine),
      filter_dw(filter_pd.diff_weights_desc(), engine);
  std::cout << "  " << s.str() << ": oneDNN kernels " << forward_pd.impl_info_str() << ", " << data_pd.impl_info_str()
            << ", " << filter_pd.impl_info_str() << "\n";

  const auto im2col_forward = [&] {
    surge::rl::conv_forward(cpu, s, rows, ours.x.data(), 1.0f, ours.w.data(), ours.b.data(), columns.data(), capacity,
                            ours.y.data());
  };
  const auto im2col_data = [&] {
    surge::rl::conv_backward_data(cpu, s, rows, ours.dy.data(), ours.w.data(), columns.data(), capacity,
                                  ours.dx.data());
  };
  const auto im2col_filter = [&] {
    surge::rl::conv_backward_filter(cpu, s, rows, ours.x.data(), 1.0f, ours.dy.data(), columns.data(), capacity,
                                    ours.dw.data(), ours.db.data());
  };
  const auto onednn_forward = [&] {
    dnnl::reorder(user_w, forward_w).execute(stream, user_w, forward_w);
    forward.execute(stream, {{DNNL_ARG_SRC, wrap(src_md, theirs.x)},
                             {DNNL_ARG_WEIGHTS, forward_w},
                             {DNNL_ARG_BIAS, wrap(b_md, theirs.b)},
                             {DNNL_ARG_DST, wrap(dst_md, theirs.y)}});
    stream.wait();
  };
  const auto onednn_data = [&] {
    dnnl::reorder(user_w, data_w).execute(stream, user_w, data_w);
    data.execute(stream, {{DNNL_ARG_DIFF_DST, wrap(dst_md, theirs.dy)},
                          {DNNL_ARG_WEIGHTS, data_w},
                          {DNNL_ARG_DIFF_SRC, wrap(src_md, theirs.dx)}});
    stream.wait();
  };
  const auto onednn_filter = [&] {
    filter.execute(stream, {{DNNL_ARG_SRC, wrap(src_md, theirs.x)},
                            {DNNL_ARG_DIFF_DST, wrap(dst_md, theirs.dy)},
                            {DNNL_ARG_DIFF_WEIGHTS, filter_dw},
                            {DNNL_ARG_DIFF_BIAS, wrap(b_md, theirs.db)}});
    dnnl::reorder(filter_dw, user_dw).execute(stream, filter_dw, user_dw);
    stream.wait();
  };

  // Both variants must agree before either is timed.
  const std::function<void()> im2col_passes[] = {im2col_forward, im2col_data, im2col_filter};
  const std::function<void()> onednn_passes[] = {onednn_forward, onednn_data, onednn_filter};
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
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl_version_t* version = dnnl_version();
  std::cout << "nature encoder layers, " << rows << " rows, medians of " << surge::plural(repeats, "repeat")
            << "; oneDNN " << version->major << "." << version->minor << "." << version->patch << "\n";
  for (int l = 0; l < encoder.num_convs(); ++l) bench_layer(encoder.conv(l), rows, repeats, engine, stream);
  std::cout << "load average " << surge::bench::load_average() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return surge::bench::standalone_main("bench_conv_onednn", [&] { return run(argc, argv); });
}
