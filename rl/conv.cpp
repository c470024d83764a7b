// The CPU convolution: im2col / col2im around rl::gemm (OpenBLAS), chunked to a bounded workspace.
#include "rl/conv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rl/gemm.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

void check_cpu(const Stream& stream, const ConvShape& shape, std::int64_t batch) {
  SURGE_CHECK(!stream.device().is_cuda(), "the im2col convolution runs on the CPU; CUDA takes rl/conv_cudnn");
  SURGE_CHECK(batch >= 0, "negative batch");
  SURGE_CHECK(shape.out_height() > 0 && shape.out_width() > 0 && shape.stride > 0, "bad shape " + shape.str());
}

// Calls pass(first, rows) for consecutive chunks of the batch, each as many rows as the column workspace
// holds (the last one may be shorter).
template <class Pass>
void for_each_chunk(const Stream& stream, const ConvShape& shape, std::int64_t batch, std::int64_t column_capacity,
                    const Pass& pass) {
  check_cpu(stream, shape, batch);
  const std::int64_t per_row = shape.column_size(1);
  SURGE_CHECK(column_capacity >= per_row, "convolution workspace of " + std::to_string(column_capacity) +
                                              " elements holds less than one row of " + shape.str());
  const std::int64_t chunk = column_capacity / per_row;
  for (std::int64_t first = 0; first < batch; first += chunk) pass(first, std::min(chunk, batch - first));
}

// One row of the output grid: the patches of output row `oh` of image `image`, into
// columns[out_w][patch_size] laid out [kernel_h][kernel_w][in_channels].
template <class Scalar, class Input>
void im2col_row(const ConvShape& s, const Input* image, Scalar scale, int oh, Scalar* columns) {
  const std::int64_t run = std::int64_t{s.kernel_width} * s.in_channels;
  for (int ow = 0; ow < s.out_width(); ++ow) {
    Scalar* patch = columns + ow * s.patch_size();
    const int w0 = ow * s.stride - s.padding;
    for (int kh = 0; kh < s.kernel_height; ++kh) {
      Scalar* dst = patch + kh * run;
      const int ih = oh * s.stride - s.padding + kh;
      if (ih < 0 || ih >= s.in_height) {
        std::fill(dst, dst + run, Scalar(0));
        continue;
      }
      const Input* src_row = image + std::int64_t{ih} * s.in_width * s.in_channels;
      if (w0 >= 0 && w0 + s.kernel_width <= s.in_width) {
        const Input* src = src_row + std::int64_t{w0} * s.in_channels;
        if constexpr (std::is_same_v<Input, Scalar>) {
          std::memcpy(dst, src, static_cast<std::size_t>(run) * sizeof(Scalar));
        } else {
          for (std::int64_t i = 0; i < run; ++i) dst[i] = static_cast<Scalar>(src[i]) * scale;
        }
        continue;
      }
      for (int kw = 0; kw < s.kernel_width; ++kw) {  // the padded border
        const int iw = w0 + kw;
        Scalar* d = dst + std::int64_t{kw} * s.in_channels;
        if (iw < 0 || iw >= s.in_width) {
          std::fill(d, d + s.in_channels, Scalar(0));
        } else {
          const Input* src = src_row + std::int64_t{iw} * s.in_channels;
          for (int c = 0; c < s.in_channels; ++c) d[c] = static_cast<Scalar>(src[c]) * scale;
        }
      }
    }
  }
}

// columns[rows][out_h][out_w][patch_size] for the images input[rows][in_h][in_w][in_c].
template <class Scalar, class Input>
void im2col(const ConvShape& s, std::int64_t rows, const Input* input, Scalar scale, Scalar* columns) {
  const std::int64_t lines = rows * s.out_height();
  const std::int64_t line_size = std::int64_t{s.out_width()} * s.patch_size();
#pragma omp parallel for schedule(static) if (lines * line_size > (1 << 16))
  for (std::int64_t line = 0; line < lines; ++line) {
    const std::int64_t row = line / s.out_height();
    const int oh = static_cast<int>(line % s.out_height());
    im2col_row(s, input + row * s.input_size(), scale, oh, columns + line * line_size);
  }
}

// d_input[rows][in_h][in_w][in_c] = the sum over patches of their column gradients, each added back where
// im2col read it. One image per thread, so no two threads add into the same place.
template <class Scalar>
void col2im(const ConvShape& s, std::int64_t rows, const Scalar* columns, Scalar* d_input) {
#pragma omp parallel for schedule(static) if (rows > 1 && rows * s.column_size(1) > (1 << 16))
  for (std::int64_t row = 0; row < rows; ++row) {
    Scalar* image = d_input + row * s.input_size();
    std::fill(image, image + s.input_size(), Scalar(0));
    const Scalar* patch = columns + row * s.column_size(1);
    for (int oh = 0; oh < s.out_height(); ++oh)
      for (int ow = 0; ow < s.out_width(); ++ow, patch += s.patch_size())
        for (int kh = 0; kh < s.kernel_height; ++kh) {
          const int ih = oh * s.stride - s.padding + kh;
          if (ih < 0 || ih >= s.in_height) continue;
          for (int kw = 0; kw < s.kernel_width; ++kw) {
            const int iw = ow * s.stride - s.padding + kw;
            if (iw < 0 || iw >= s.in_width) continue;
            Scalar* dst = image + (std::int64_t{ih} * s.in_width + iw) * s.in_channels;
            const Scalar* src = patch + (std::int64_t{kh} * s.kernel_width + kw) * s.in_channels;
            for (int c = 0; c < s.in_channels; ++c) dst[c] += src[c];
          }
        }
  }
}

}  // namespace

std::string ConvShape::str() const {
  std::string text = std::to_string(in_height) + "x" + std::to_string(in_width) + "x" + std::to_string(in_channels) +
                     " -> " + std::to_string(kernel_height) + "x" + std::to_string(kernel_width) + "/" +
                     std::to_string(stride) + " " + std::to_string(out_channels);
  if (padding) text += " pad " + std::to_string(padding);
  return text;
}

void check_conv_shape(const ConvShape& s, const std::string& what) {
  if (s.in_height <= 0 || s.in_width <= 0 || s.in_channels <= 0 || s.out_channels <= 0 || s.kernel_height <= 0 ||
      s.kernel_width <= 0 || s.stride <= 0 || s.padding < 0)
    throw InputError(what + ": every size must be positive (got " + s.str() + ", stride " + std::to_string(s.stride) +
                     ", padding " + std::to_string(s.padding) + ")");
  if (s.in_height + 2 * s.padding < s.kernel_height || s.in_width + 2 * s.padding < s.kernel_width)
    throw InputError(what + ": kernel " + std::to_string(s.kernel_height) + "x" + std::to_string(s.kernel_width) +
                     " is larger than its " + std::to_string(s.in_height) + "x" + std::to_string(s.in_width) +
                     " input; use a smaller kernel or stride earlier, or a larger frame_size");
}

template <class Scalar, class Input>
void conv_forward(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Input* input,
                  Scalar input_scale, const Scalar* weight, const Scalar* bias, Scalar* columns,
                  std::int64_t column_capacity, Scalar* output) {
  const std::int64_t k = shape.patch_size();
  for_each_chunk(stream, shape, batch, column_capacity, [&](std::int64_t first, std::int64_t rows) {
    im2col(shape, rows, input + first * shape.input_size(), input_scale, columns);
    // out[positions][out_c] = columns[positions][k] W^T + bias
    gemm<Scalar>(stream, Transpose::No, Transpose::Yes, rows * shape.positions(), shape.out_channels, k, Scalar(1),
                 columns, k, weight, k, Scalar(0), output + first * shape.output_size(), shape.out_channels, bias);
  });
}

template <class Scalar>
void conv_backward_data(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Scalar* d_output,
                        const Scalar* weight, Scalar* columns, std::int64_t column_capacity, Scalar* d_input) {
  const std::int64_t k = shape.patch_size();
  for_each_chunk(stream, shape, batch, column_capacity, [&](std::int64_t first, std::int64_t rows) {
    // d_columns[positions][k] = d_out[positions][out_c] W[out_c][k]
    gemm<Scalar>(stream, Transpose::No, Transpose::No, rows * shape.positions(), k, shape.out_channels, Scalar(1),
                 d_output + first * shape.output_size(), shape.out_channels, weight, k, Scalar(0), columns, k);
    col2im(shape, rows, columns, d_input + first * shape.input_size());
  });
}

template <class Scalar, class Input>
void conv_backward_filter(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Input* input,
                          Scalar input_scale, const Scalar* d_output, Scalar* columns, std::int64_t column_capacity,
                          Scalar* d_weight, Scalar* d_bias) {
  const std::int64_t k = shape.patch_size();
  const int out_c = shape.out_channels;
  std::fill(d_weight, d_weight + out_c * k, Scalar(0));  // what an empty batch leaves; chunks add to it
  for_each_chunk(stream, shape, batch, column_capacity, [&](std::int64_t first, std::int64_t rows) {
    im2col(shape, rows, input + first * shape.input_size(), input_scale, columns);
    // d_W[out_c][k] += d_out^T[out_c][positions] columns[positions][k]
    gemm<Scalar>(stream, Transpose::Yes, Transpose::No, out_c, k, rows * shape.positions(), Scalar(1),
                 d_output + first * shape.output_size(), out_c, columns, k, Scalar(1), d_weight, k);
  });
  if (!d_bias) return;
  // Column sums of d_out[batch * positions][out_c], accumulated in double: the reduction is long.
  const std::int64_t positions = batch * shape.positions();
  std::vector<double> sums(static_cast<std::size_t>(out_c), 0.0);
  for (std::int64_t p = 0; p < positions; ++p) {
    const Scalar* row = d_output + p * out_c;
    for (int c = 0; c < out_c; ++c) sums[static_cast<std::size_t>(c)] += static_cast<double>(row[c]);
  }
  for (int c = 0; c < out_c; ++c) d_bias[c] = static_cast<Scalar>(sums[static_cast<std::size_t>(c)]);
}

#define SURGE_CONV_INSTANTIATE(Scalar, Input)                                                                    \
  template void conv_forward<Scalar, Input>(const Stream&, const ConvShape&, std::int64_t, const Input*, Scalar, \
                                            const Scalar*, const Scalar*, Scalar*, std::int64_t, Scalar*);       \
  template void conv_backward_filter<Scalar, Input>(const Stream&, const ConvShape&, std::int64_t, const Input*, \
                                                    Scalar, const Scalar*, Scalar*, std::int64_t, Scalar*, Scalar*);
SURGE_CONV_INSTANTIATE(float, float)
SURGE_CONV_INSTANTIATE(float, std::uint8_t)
SURGE_CONV_INSTANTIATE(double, double)
SURGE_CONV_INSTANTIATE(double, std::uint8_t)
#undef SURGE_CONV_INSTANTIATE
template void conv_backward_data<float>(const Stream&, const ConvShape&, std::int64_t, const float*, const float*,
                                        float*, std::int64_t, float*);
template void conv_backward_data<double>(const Stream&, const ConvShape&, std::int64_t, const double*, const double*,
                                         double*, std::int64_t, double*);

}  // namespace surge::rl
