// The CNN encoder: its layer table, memory plan and initialisation, and its passes on the CPU backend.
#include "rl/cnn_encoder.hpp"

#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

// OpenMP only pays past a few tens of thousands of elements.
constexpr std::int64_t kParallelElements = 1 << 15;

template <class Scalar>
void relu_in_place(Scalar* values, std::int64_t size) {
#pragma omp parallel for schedule(static) if (size > kParallelElements)
  for (std::int64_t i = 0; i < size; ++i) values[i] = values[i] > Scalar(0) ? values[i] : Scalar(0);
}

// gradient *= (activation > 0): the ReLU's backward, given its output.
template <class Scalar>
void relu_mask(const Scalar* activation, std::int64_t size, Scalar* gradient) {
#pragma omp parallel for schedule(static) if (size > kParallelElements)
  for (std::int64_t i = 0; i < size; ++i)
    if (!(activation[i] > Scalar(0))) gradient[i] = Scalar(0);
}

template <class Scalar>
void column_sums(const Scalar* matrix, std::int64_t rows, std::int64_t cols, Scalar* sums) {
  std::vector<double> total(static_cast<std::size_t>(cols), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) total[static_cast<std::size_t>(c)] += matrix[r * cols + c];
  for (std::int64_t c = 0; c < cols; ++c) sums[c] = static_cast<Scalar>(total[static_cast<std::size_t>(c)]);
}

// Whether this pass convolves through oneDNN: float, and primitives made for this many rows.
template <class Scalar>
bool through_onednn(const CnnCpuConvs* convs, [[maybe_unused]] std::int64_t rows) {
  if (!convs || !std::is_same_v<Scalar, float>) return false;
#if defined(SURGE_WITH_ONEDNN)
  SURGE_CHECK(convs->rows() == rows, "oneDNN convolutions made for " + std::to_string(convs->rows()) +
                                         " rows, called with " + std::to_string(rows));
#endif
  return true;
}

// The frames as oneDNN's first layer reads them: floats, scaled as im2col scales them.
template <class Scalar>
const Scalar* scaled_frames(const CnnEncoder& encoder, const std::uint8_t* frames, std::int64_t rows, Scalar* out) {
  const std::int64_t size = rows * encoder.frame_size();
  const auto scale = static_cast<Scalar>(CnnEncoder::kPixelScale);
#pragma omp parallel for schedule(static) if (size > kParallelElements)
  for (std::int64_t i = 0; i < size; ++i) out[i] = static_cast<Scalar>(frames[i]) * scale;
  return out;
}

// One conv layer's forward pass, through oneDNN when `onednn` is given (float only), else im2col. Layer 0
// reads the frames: im2col scales them as it builds its columns; for oneDNN they are scaled into `columns`.
template <class Scalar>
void layer_forward(const Stream& stream, const CnnEncoder& encoder, int l, std::int64_t rows,
                   const std::uint8_t* frames, const Scalar* input, const Scalar* params, Scalar* columns,
                   [[maybe_unused]] const CnnCpuConvs* onednn, Scalar* output) {
  const Scalar* weight = params + encoder.conv_weight_offset(l);
  const Scalar* bias = params + encoder.conv_bias_offset(l);
#if defined(SURGE_WITH_ONEDNN)
  if constexpr (std::is_same_v<Scalar, float>)
    if (onednn) {
      onednn->layer(l).forward(l == 0 ? scaled_frames(encoder, frames, rows, columns) : input, weight, bias, output);
      return;
    }
#endif
  const ConvShape& s = encoder.conv(l);
  const std::int64_t capacity = encoder.column_capacity(rows);
  if (l == 0)
    conv_forward(stream, s, rows, frames, Scalar(CnnEncoder::kPixelScale), weight, bias, columns, capacity, output);
  else
    conv_forward(stream, s, rows, input, Scalar(1), weight, bias, columns, capacity, output);
}

// One conv layer's backward pass: its weight and bias gradients into `grads`, and unless it is layer 0 (the
// frames need no gradient) d_input from d_output.
template <class Scalar>
void layer_backward(const Stream& stream, const CnnEncoder& encoder, int l, std::int64_t rows,
                    const std::uint8_t* frames, const Scalar* input, const Scalar* params, const Scalar* d_output,
                    Scalar* columns, [[maybe_unused]] const CnnCpuConvs* onednn, Scalar* grads, Scalar* d_input) {
  const Scalar* weight = params + encoder.conv_weight_offset(l);
  Scalar* d_weight = grads + encoder.conv_weight_offset(l);
  Scalar* d_bias = grads + encoder.conv_bias_offset(l);
#if defined(SURGE_WITH_ONEDNN)
  if constexpr (std::is_same_v<Scalar, float>)
    if (onednn) {
      const OnednnConv& conv = onednn->layer(l);
      conv.backward_filter(l == 0 ? scaled_frames(encoder, frames, rows, columns) : input, d_output, d_weight, d_bias);
      if (l > 0) conv.backward_data(d_output, weight, d_input);
      return;
    }
#endif
  const ConvShape& s = encoder.conv(l);
  const std::int64_t capacity = encoder.column_capacity(rows);
  if (l == 0) {
    conv_backward_filter(stream, s, rows, frames, Scalar(CnnEncoder::kPixelScale), d_output, columns, capacity,
                         d_weight, d_bias);
    return;
  }
  conv_backward_filter(stream, s, rows, input, Scalar(1), d_output, columns, capacity, d_weight, d_bias);
  conv_backward_data(stream, s, rows, d_output, weight, columns, capacity, d_input);
}

}  // namespace

#if defined(SURGE_WITH_ONEDNN)
CnnCpuConvs::CnnCpuConvs(const CnnEncoder& encoder, std::int64_t rows) : rows_(rows) {
  for (int l = 0; l < encoder.num_convs(); ++l) layers_.emplace_back(encoder.conv(l), rows);
}
#endif

EncoderConfig encoder_config(const std::string& name) {
  if (name == "nature") return {"nature", {{32, 8, 4}, {64, 4, 2}, {64, 3, 1}}, 512};
  if (name == "small") return {"small", {{16, 8, 4}, {32, 4, 2}, {32, 3, 1}}, 256};
  throw InputError("encoder '" + name + "' is not known; use \"nature\" or \"small\"");
}

CnnEncoder::CnnEncoder(ParamTable& table, const std::string& prefix, FrameShape frame, const EncoderConfig& config,
                       std::int64_t column_rows)
    : config_(config), frame_(frame), column_rows_(column_rows) {
  if (config.convs.empty())
    throw InputError("encoder '" + config.name + "' has no convolution layers; give at least one");
  if (config.dense <= 0)
    throw InputError("encoder dense width " + std::to_string(config.dense) + " must be positive (512 in nature)");
  SURGE_CHECK(column_rows >= 1, "the column workspace needs at least one row");
  int height = frame.height, width = frame.width, channels = frame.channels;
  for (std::size_t l = 0; l < config.convs.size(); ++l) {
    const ConvLayerConfig& layer = config.convs[l];
    const ConvShape shape{height, width, channels, layer.channels, layer.kernel, layer.kernel, layer.stride, 0};
    check_conv_shape(shape, "encoder '" + config.name + "' layer " + std::to_string(l + 1));
    convs_.push_back(shape);
    const std::string name = prefix + ".conv" + std::to_string(l);
    weight_offsets_.push_back(table[table.add(name + ".weight", shape.out_channels, shape.patch_size())].offset);
    bias_offsets_.push_back(table[table.add(name + ".bias", shape.out_channels, 1)].offset);
    height = shape.out_height(), width = shape.out_width(), channels = shape.out_channels;
  }
  weight_offsets_.push_back(table[table.add(prefix + ".dense.weight", config.dense, flat_dim())].offset);
  bias_offsets_.push_back(table[table.add(prefix + ".dense.bias", config.dense, 1)].offset);
}

double CnnEncoder::forward_flops_per_row() const {
  double flops = static_cast<double>(flat_dim()) * config_.dense;
  for (const ConvShape& s : convs_) flops += static_cast<double>(s.output_size()) * s.patch_size();
  return flops;
}

std::int64_t CnnEncoder::activation_size(std::int64_t rows) const { return activation_offset(num_convs(), rows); }

std::int64_t CnnEncoder::activation_offset(int layer, std::int64_t rows) const {
  std::int64_t offset = 0;
  for (int l = 0; l < layer; ++l) offset += rows * conv(l).output_size();
  return offset;
}

std::int64_t CnnEncoder::column_capacity(std::int64_t rows) const {
#if defined(SURGE_WITH_ONEDNN)
  std::int64_t capacity = rows * frame_size();
#else
  std::int64_t capacity = 0;
#endif
  for (const ConvShape& s : convs_) capacity = std::max(capacity, s.column_size(std::min(rows, column_rows_)));
  return capacity;
}

std::int64_t CnnEncoder::scratch_size(std::int64_t rows) const {
  std::int64_t widest = config_.dense;
  for (const ConvShape& s : convs_) widest = std::max(widest, s.output_size());
  return column_capacity(rows) + 2 * rows * widest;
}

void CnnEncoder::initialize(std::vector<double>& params, Rng& rng) const {
  SURGE_CHECK(static_cast<std::int64_t>(params.size()) >= dense_bias_offset() + config_.dense,
              "parameter vector smaller than the table");
  for (int l = 0; l <= num_convs(); ++l) {
    const bool dense = l == num_convs();
    const std::int64_t rows = dense ? config_.dense : conv(l).out_channels;
    const std::int64_t cols = dense ? flat_dim() : conv(l).patch_size();
    orthogonal_matrix(rows, cols, kGain, rng, params.data() + weight_offsets_[static_cast<std::size_t>(l)]);
    std::fill_n(params.begin() + bias_offsets_[static_cast<std::size_t>(l)], rows, 0.0);
  }
}

template <class Scalar>
void cnn_forward(const Stream& stream, const CnnEncoder& encoder, const Scalar* params, const std::uint8_t* frames,
                 std::int64_t rows, Scalar* activations, Scalar* scratch, Scalar* features, const CnnCpuConvs* convs) {
  const CnnCpuConvs* onednn = through_onednn<Scalar>(convs, rows) ? convs : nullptr;
  const Scalar* input = nullptr;
  for (int l = 0; l < encoder.num_convs(); ++l) {
    Scalar* output = activations + encoder.activation_offset(l, rows);
    layer_forward(stream, encoder, l, rows, frames, input, params, scratch, onednn, output);
    relu_in_place(output, rows * encoder.conv(l).output_size());
    input = output;
  }
  const std::int64_t flat = encoder.flat_dim(), dense = encoder.feature_dim();
  gemm<Scalar>(stream, Transpose::No, Transpose::Yes, rows, dense, flat, Scalar(1), input, flat,
               params + encoder.dense_weight_offset(), flat, Scalar(0), features, dense,
               params + encoder.dense_bias_offset());
  relu_in_place(features, rows * dense);
}

template <class Scalar>
void cnn_backward(const Stream& stream, const CnnEncoder& encoder, const Scalar* params, const std::uint8_t* frames,
                  std::int64_t rows, const Scalar* activations, const Scalar* features, const Scalar* d_features,
                  Scalar* grads, Scalar* scratch, const CnnCpuConvs* convs) {
  const CnnCpuConvs* onednn = through_onednn<Scalar>(convs, rows) ? convs : nullptr;
  const std::int64_t capacity = encoder.column_capacity(rows);
  Scalar* columns = scratch;
  Scalar* current = scratch + capacity;  // the gradient at the layer being worked on
  Scalar* next = current + (encoder.scratch_size(rows) - capacity) / 2;
  const std::int64_t flat = encoder.flat_dim(), dense = encoder.feature_dim();
  const int last = encoder.num_convs() - 1;
  const Scalar* flat_input = activations + encoder.activation_offset(last, rows);

  std::copy_n(d_features, rows * dense, next);
  relu_mask(features, rows * dense, next);
  gemm<Scalar>(stream, Transpose::Yes, Transpose::No, dense, flat, rows, Scalar(1), next, dense, flat_input, flat,
               Scalar(0), grads + encoder.dense_weight_offset(), flat);
  column_sums(next, rows, dense, grads + encoder.dense_bias_offset());
  gemm<Scalar>(stream, Transpose::No, Transpose::No, rows, flat, dense, Scalar(1), next, dense,
               params + encoder.dense_weight_offset(), flat, Scalar(0), current, flat);

  for (int l = last; l >= 0; --l) {
    relu_mask(activations + encoder.activation_offset(l, rows), rows * encoder.conv(l).output_size(), current);
    const Scalar* input = l > 0 ? activations + encoder.activation_offset(l - 1, rows) : nullptr;
    layer_backward(stream, encoder, l, rows, frames, input, params, current, columns, onednn, grads, next);
    std::swap(current, next);
  }
}

template void cnn_forward<float>(const Stream&, const CnnEncoder&, const float*, const std::uint8_t*, std::int64_t,
                                 float*, float*, float*, const CnnCpuConvs*);
template void cnn_forward<double>(const Stream&, const CnnEncoder&, const double*, const std::uint8_t*, std::int64_t,
                                  double*, double*, double*, const CnnCpuConvs*);
template void cnn_backward<float>(const Stream&, const CnnEncoder&, const float*, const std::uint8_t*, std::int64_t,
                                  const float*, const float*, const float*, float*, float*, const CnnCpuConvs*);
template void cnn_backward<double>(const Stream&, const CnnEncoder&, const double*, const std::uint8_t*, std::int64_t,
                                   const double*, const double*, const double*, double*, double*, const CnnCpuConvs*);

}  // namespace surge::rl
