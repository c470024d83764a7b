#pragma once
// 2-D convolution on the CPU backend: im2col into a bounded column workspace, then one GEMM per chunk of
// rows through rl::gemm (OpenBLAS). Images are NHWC, [rows][height][width][channels]: with no padding a
// patch's row of kernel_width pixels is one contiguous run of kernel_width * channels values, so im2col is
// a few memcpy-like runs per patch, and the GEMM's output [rows * out_h * out_w][out_channels] is already
// the next layer's NHWC input. Weights are [out_channels][kernel_h][kernel_w][in_channels], that is a
// ParamTable slice [out][patch_size] with y = patch W^T + b, as in rl/mlp.hpp.
// The first layer reads uint8 frames and scales them (by 1/255) while it builds its columns, so the
// observations are never copied to a float image.
#include <cstdint>
#include <string>

#include "sim/stream.hpp"

namespace surge::rl {

struct ConvShape {
  int in_height = 0, in_width = 0, in_channels = 0;
  int out_channels = 0, kernel_height = 0, kernel_width = 0;
  int stride = 1;
  int padding = 0;  // zeros on every side

  int out_height() const { return (in_height + 2 * padding - kernel_height) / stride + 1; }
  int out_width() const { return (in_width + 2 * padding - kernel_width) / stride + 1; }
  // Values in one patch: the weight matrix's columns.
  std::int64_t patch_size() const { return std::int64_t{kernel_height} * kernel_width * in_channels; }
  std::int64_t input_size() const { return std::int64_t{in_height} * in_width * in_channels; }  // per row
  std::int64_t output_size() const {                                                            // per row
    return std::int64_t{out_height()} * out_width() * out_channels;
  }
  std::int64_t positions() const { return std::int64_t{out_height()} * out_width(); }  // per row
  // Column workspace elements for `rows` rows at once: [rows][out_h][out_w][patch_size].
  std::int64_t column_size(std::int64_t rows) const { return rows * positions() * patch_size(); }
  std::string str() const;  // "84x84x4 -> 8x8/4 32" for messages
};

// Throws InputError naming `what` ("encoder layer 2") when the shape has no output or a non-positive size.
void check_conv_shape(const ConvShape& shape, const std::string& what);

// All three passes take a column workspace of `column_capacity` elements and work through the batch in
// chunks of column_capacity / shape.column_size(1) rows (at least one row must fit). Pointers are host
// memory; `stream` must be a CPU stream. Scalar is float or double; Input is Scalar or std::uint8_t, whose
// values are multiplied by input_scale as they are read (pass 1 for Scalar inputs).

// output[batch][out_h][out_w][out_channels] = conv(input) + bias (bias may be null).
template <class Scalar, class Input>
void conv_forward(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Input* input,
                  Scalar input_scale, const Scalar* weight, const Scalar* bias, Scalar* columns,
                  std::int64_t column_capacity, Scalar* output);

// d_input[batch][in_h][in_w][in_channels] = dLoss/d(input), given d_output = dLoss/d(output). Overwrites d_input.
template <class Scalar>
void conv_backward_data(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Scalar* d_output,
                        const Scalar* weight, Scalar* columns, std::int64_t column_capacity, Scalar* d_input);

// d_weight[out][patch_size] and d_bias[out] (may be null) = dLoss/d(weight, bias), overwritten, given
// d_output and the input of the forward pass (scaled as it was then).
template <class Scalar, class Input>
void conv_backward_filter(const Stream& stream, const ConvShape& shape, std::int64_t batch, const Input* input,
                          Scalar input_scale, const Scalar* d_output, Scalar* columns, std::int64_t column_capacity,
                          Scalar* d_weight, Scalar* d_bias);

}  // namespace surge::rl
