// The im2col convolution (rl/conv.hpp) against a naive reference in double, for its three passes, on
// CleanRL's Atari shapes and on odd ones (padding, strides that skip pixels, non-square kernels, a kernel
// as large as the image, 1x1), with workspaces that force the batch through in chunks.
//
// Tolerance: every value compared is a sum of n products, so the float result differs from the exact one
// by at most gamma(n) * sum |terms|, gamma(n) = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability
// of Numerical Algorithms, 3.1; any summation order or blocking, FMA or not). The reference computes the
// exact value and sum |terms| in double (its own error is below 1e-9 of the bound). n counts every rounding
// on a term's way: the reduction length, +2 for a uint8 input (the float 1/255 and the scaling product), +1
// for the bias, + the number of chunks whose partial sums add up.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "rl/conv.hpp"
#if defined(SURGE_WITH_ONEDNN)
#include "rl/conv_onednn.hpp"
#endif
#include "sim/error.hpp"
#include "sim/philox.hpp"

using surge::rl::ConvShape;

namespace {

double gamma(double n, double unit_roundoff) { return n * unit_roundoff / (1.0 - n * unit_roundoff); }

struct Reference {
  std::vector<double> value, magnitude;  // the exact result and the sum of |terms| behind each element
};

// Calls term(out_index, input_index, weight_index) for every product of the convolution, in
// the plain loop order: output element (n, oh, ow, o), then kernel position and input channel.
template <class Term>
void for_each_term(const ConvShape& s, int batch, const Term& term) {
  std::size_t at = 0;
  for (int n = 0; n < batch; ++n)
    for (int oh = 0; oh < s.out_height(); ++oh)
      for (int ow = 0; ow < s.out_width(); ++ow)
        for (int o = 0; o < s.out_channels; ++o, ++at)
          for (int kh = 0; kh < s.kernel_height; ++kh)
            for (int kw = 0; kw < s.kernel_width; ++kw) {
              const int ih = oh * s.stride - s.padding + kh, iw = ow * s.stride - s.padding + kw;
              if (ih < 0 || ih >= s.in_height || iw < 0 || iw >= s.in_width) continue;
              for (int c = 0; c < s.in_channels; ++c)
                term(at, static_cast<std::size_t>(((n * s.in_height + ih) * s.in_width + iw) * s.in_channels + c),
                     static_cast<std::size_t>(((o * s.kernel_height + kh) * s.kernel_width + kw) * s.in_channels + c));
            }
}

Reference zeros(std::int64_t size) {
  return Reference{std::vector<double>(static_cast<std::size_t>(size)),
                   std::vector<double>(static_cast<std::size_t>(size))};
}

void accumulate(Reference& r, std::size_t at, double term) {
  r.value[at] += term;
  r.magnitude[at] += std::abs(term);
}

Reference reference_forward(const ConvShape& s, int batch, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& b) {
  Reference r = zeros(batch * s.output_size());
  for (std::size_t at = 0; at < r.value.size(); ++at)
    accumulate(r, at, b[at % static_cast<std::size_t>(s.out_channels)]);
  for_each_term(s, batch, [&](std::size_t at, std::size_t xi, std::size_t wi) { accumulate(r, at, w[wi] * x[xi]); });
  return r;
}

// dL/dx and dL/dw, dL/db for L = sum(d_out * out), over the same terms as the forward pass.
struct ReferenceGrads {
  Reference d_input, d_weight, d_bias;
};
ReferenceGrads reference_backward(const ConvShape& s, int batch, const std::vector<double>& x,
                                  const std::vector<double>& w, const std::vector<double>& d_out) {
  ReferenceGrads g{zeros(batch * s.input_size()), zeros(s.out_channels * s.patch_size()), zeros(s.out_channels)};
  for (std::size_t at = 0; at < d_out.size(); ++at)
    accumulate(g.d_bias, at % static_cast<std::size_t>(s.out_channels), d_out[at]);
  for_each_term(s, batch, [&](std::size_t at, std::size_t xi, std::size_t wi) {
    accumulate(g.d_input, xi, d_out[at] * w[wi]);
    accumulate(g.d_weight, wi, d_out[at] * x[xi]);
  });
  return g;
}

template <class Scalar>
void require_within(const std::vector<Scalar>& got, const Reference& ref, double n, double unit_roundoff,
                    const char* what) {
  REQUIRE(got.size() == ref.value.size());
  const double g = gamma(n, unit_roundoff);
  std::size_t worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - ref.value[i]);
    const double bound = g * ref.magnitude[i];
    if (error > bound) {
      INFO(what << " element " << i << ": got " << got[i] << ", reference " << ref.value[i] << ", bound " << bound);
      CHECK(error <= bound);
      return;
    }
    const double ratio = bound > 0 ? error / bound : 0;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
  }
  INFO(what << ": worst error is " << worst_ratio << " of its bound at element " << worst);
  SUCCEED();
}

struct Case {
  ConvShape shape;
  int batch;
  bool uint8_input;
};

template <class Scalar>
void check_case(const Case& c, std::int64_t chunk, double unit_roundoff, bool onednn = false) {
  const ConvShape& s = c.shape;
  const int batch = c.batch;
  INFO(s.str() << ", stride " << s.stride << ", batch " << batch << ", chunk " << chunk << ", uint8 " << c.uint8_input);
  surge::Stream stream(surge::Device::cpu());
  surge::Rng rng(17, static_cast<std::uint64_t>(s.output_size() + chunk), 0);

  const double scale = c.uint8_input ? 1.0 / 255.0 : 1.0;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(batch * s.input_size()));
  std::vector<Scalar> x(pixels.size()), w(static_cast<std::size_t>(s.out_channels * s.patch_size())),
      b(static_cast<std::size_t>(s.out_channels)), d_out(static_cast<std::size_t>(batch * s.output_size()));
  std::vector<double> x_exact(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    pixels[i] = static_cast<std::uint8_t>(rng.next_u32() & 255u);
    x[i] = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
    x_exact[i] = c.uint8_input ? pixels[i] * scale : static_cast<double>(x[i]);
  }
  for (auto& v : w) v = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
  for (auto& v : b) v = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
  for (auto& v : d_out) v = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
  const std::vector<double> w_exact(w.begin(), w.end()), b_exact(b.begin(), b.end()),
      d_out_exact(d_out.begin(), d_out.end());

  const std::int64_t capacity = s.column_size(chunk) + 3;  // not a whole number of rows
  const std::int64_t chunks = (batch + chunk - 1) / chunk;
  std::vector<Scalar> columns(static_cast<std::size_t>(capacity));
  std::vector<Scalar> out(d_out.size()), d_x(x.size()), d_w(w.size()), d_b(b.size());
  const Scalar input_scale = static_cast<Scalar>(scale);
  if (onednn) {
#if defined(SURGE_WITH_ONEDNN)
    if constexpr (std::is_same_v<Scalar, float>) {
      // oneDNN convolves float images: the frames scaled as the im2col path scales them.
      std::vector<float> input = x;
      if (c.uint8_input)
        for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(pixels[i]) * input_scale;
      const surge::rl::OnednnConv conv(s, batch);
      INFO("oneDNN kernels " << conv.kernels());
      conv.forward(input.data(), w.data(), b.data(), out.data());
      conv.backward_data(d_out.data(), w.data(), d_x.data());
      conv.backward_filter(input.data(), d_out.data(), d_w.data(), d_b.data());
    }
#endif
  } else if (c.uint8_input) {
    surge::rl::conv_forward(stream, s, batch, pixels.data(), input_scale, w.data(), b.data(), columns.data(), capacity,
                            out.data());
    surge::rl::conv_backward_filter(stream, s, batch, pixels.data(), input_scale, d_out.data(), columns.data(),
                                    capacity, d_w.data(), d_b.data());
  } else {
    surge::rl::conv_forward(stream, s, batch, x.data(), Scalar(1), w.data(), b.data(), columns.data(), capacity,
                            out.data());
    surge::rl::conv_backward_filter(stream, s, batch, x.data(), Scalar(1), d_out.data(), columns.data(), capacity,
                                    d_w.data(), d_b.data());
  }
  if (!onednn)
    surge::rl::conv_backward_data(stream, s, batch, d_out.data(), w.data(), columns.data(), capacity, d_x.data());

  const double scaling = c.uint8_input ? 2 : 0;
  require_within(out, reference_forward(s, batch, x_exact, w_exact, b_exact), double(s.patch_size()) + 1 + scaling,
                 unit_roundoff, "forward");
  const ReferenceGrads g = reference_backward(s, batch, x_exact, w_exact, d_out_exact);
  require_within(d_x, g.d_input, double(s.out_channels) * s.kernel_height * s.kernel_width, unit_roundoff,
                 "backward data");
  require_within(d_w, g.d_weight, double(batch) * s.positions() + double(chunks) + scaling, unit_roundoff,
                 "backward filter");
  require_within(d_b, g.d_bias, double(batch) * s.positions() + 1, unit_roundoff, "bias gradient");
}

ConvShape shape(int h, int w, int c, int out_c, int kh, int kw, int stride, int padding) {
  return ConvShape{h, w, c, out_c, kh, kw, stride, padding};
}

const std::vector<Case> kCases = {
    {shape(84, 84, 4, 32, 8, 8, 4, 0), 2, true},    // CleanRL's Atari encoder, layer 1, on uint8 frames
    {shape(20, 20, 32, 64, 4, 4, 2, 0), 3, false},  // layer 2
    {shape(9, 9, 64, 64, 3, 3, 1, 0), 3, false},    // layer 3
    {shape(13, 11, 3, 5, 3, 5, 2, 1), 4, true},     // padded, non-square kernel, uint8
    {shape(7, 9, 2, 3, 2, 2, 3, 2), 5, false},      // stride longer than the kernel: pixels skipped
    {shape(5, 6, 3, 7, 5, 6, 1, 0), 3, false},      // kernel as large as the image: one position
    {shape(6, 5, 8, 4, 1, 1, 1, 0), 2, false},      // 1x1
    {shape(10, 10, 1, 2, 4, 4, 3, 0), 3, true},     // strides that leave the last column unread
};

}  // namespace

TEST_CASE("float convolution passes agree with the double reference within the rounding bound", "[conv]") {
  const double float_roundoff = std::ldexp(1.0, -24);
  for (const Case& c : kCases) {
    check_case<float>(c, c.batch, float_roundoff);             // the whole batch in one GEMM
    check_case<float>(c, 1, float_roundoff);                   // one row per chunk
    if (c.batch > 2) check_case<float>(c, 2, float_roundoff);  // a short last chunk
  }
}

TEST_CASE("double convolution passes agree with the reference within the double rounding bound", "[conv]") {
  const double double_roundoff = std::ldexp(1.0, -53);
  for (const Case& c : kCases) check_case<double>(c, 2, double_roundoff);
}

#if defined(SURGE_WITH_ONEDNN)
TEST_CASE("oneDNN convolution passes agree with the double reference within the rounding bound", "[conv]") {
  for (const Case& c : kCases) check_case<float>(c, c.batch, std::ldexp(1.0, -24), true);
}
#endif

TEST_CASE("convolution shapes are checked", "[conv]") {
  CHECK_THROWS_AS(surge::rl::check_conv_shape(shape(6, 6, 1, 4, 8, 8, 4, 0), "encoder layer 1"), surge::InputError);
  CHECK_THROWS_AS(surge::rl::check_conv_shape(shape(84, 84, 4, 0, 8, 8, 4, 0), "encoder layer 1"), surge::InputError);
  CHECK_THROWS_AS(surge::rl::check_conv_shape(shape(84, 84, 4, 32, 8, 8, 0, 0), "encoder layer 1"), surge::InputError);
  CHECK_NOTHROW(surge::rl::check_conv_shape(shape(6, 6, 1, 4, 8, 8, 4, 1), "encoder layer 1"));
  const ConvShape s = shape(84, 84, 4, 32, 8, 8, 4, 0);
  CHECK(s.out_height() == 20);
  CHECK(s.output_size() == 20 * 20 * 32);
  surge::Stream stream(surge::Device::cpu());
  std::vector<float> x(static_cast<std::size_t>(s.input_size())), w(32 * 256),
      out(static_cast<std::size_t>(s.output_size())), columns(static_cast<std::size_t>(s.column_size(1) - 1));
  CHECK_THROWS_AS(surge::rl::conv_forward(stream, s, 1, x.data(), 1.0f, w.data(), static_cast<const float*>(nullptr),
                                          columns.data(), s.column_size(1) - 1, out.data()),
                  surge::Error);
}
