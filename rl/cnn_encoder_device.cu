// The CNN encoder's device passes (rl/cnn_encoder_device.hpp). Compiled by nvcc when CUDA is on, else as
// plain C++: the kernels below and the sequence of calls run on both backends.
#include "rl/cnn_encoder_device.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "rl/gemm.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/parallel.cuh"

#if defined(SURGE_WITH_CUDNN)
#include "rl/conv_cudnn.hpp"
#endif

namespace surge::rl {
namespace {

// ============================== device code ==============================

// out[i] = frames[i] / 255, as the CPU's first layer scales its frames while it reads them.
struct ScaleFrames {
  const std::uint8_t* frames;
  float scale;
  float* out;
  SURGE_HD void operator()(std::int64_t i) const { out[i] = static_cast<float>(frames[i]) * scale; }
};

struct Relu {
  float* values;
  SURGE_HD void operator()(std::int64_t i) const { values[i] = values[i] > 0.0f ? values[i] : 0.0f; }
};

// gradient *= (activation > 0): the ReLU's backward, given its output.
struct ReluMask {
  const float* activation;
  float* gradient;
  SURGE_HD void operator()(std::int64_t i) const {
    if (!(activation[i] > 0.0f)) gradient[i] = 0.0f;
  }
};

// sums[c] = the sum of column c of matrix [rows][cols], in double and in row order (the CPU's order).
struct ColumnSums {
  const float* matrix;
  std::int64_t rows, cols;
  float* sums;
  SURGE_HD void operator()(std::int64_t c) const {
    double total = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) total += matrix[r * cols + c];
    sums[c] = static_cast<float>(total);
  }
};

// ============================== launchers ==============================

void scale_frames(const Stream& stream, const std::uint8_t* frames, std::int64_t size, float* out) {
  parallel_for(stream, size, ScaleFrames{frames, static_cast<float>(CnnEncoder::kPixelScale), out});
}

void relu_in_place(const Stream& stream, float* values, std::int64_t size) { parallel_for(stream, size, Relu{values}); }

void relu_mask(const Stream& stream, const float* activation, std::int64_t size, float* gradient) {
  parallel_for(stream, size, ReluMask{activation, gradient});
}

void column_sums(const Stream& stream, const float* matrix, std::int64_t rows, std::int64_t cols, float* sums) {
  parallel_for(stream, cols, ColumnSums{matrix, rows, cols, sums}, rows);
}

std::int64_t widest_layer(const CnnEncoder& encoder) {
  std::int64_t widest = encoder.feature_dim();
  for (int l = 0; l < encoder.num_convs(); ++l) widest = std::max(widest, encoder.conv(l).output_size());
  return widest;
}

// The CPU twin of a cuDNN layer: rl/conv.hpp's im2col passes, with the column capacity the CPU encoder
// uses for the same rows, so that both chunk their rows alike.
class Im2colLayer final : public ConvLayerPasses {
 public:
  Im2colLayer(const ConvShape& shape, std::int64_t rows, std::int64_t column_capacity)
      : shape_(shape), rows_(rows), capacity_(column_capacity) {}
  std::size_t workspace_bytes() const override { return static_cast<std::size_t>(capacity_) * sizeof(float); }
  std::string describe() const override { return "im2col"; }
  void forward(const Stream& stream, const float* input, const float* weight, const float* bias, void* workspace,
               float* output) const override {
    conv_forward(stream, shape_, rows_, input, 1.0f, weight, bias, static_cast<float*>(workspace), capacity_, output);
  }
  void backward_data(const Stream& stream, const float* d_output, const float* weight, void* workspace,
                     float* d_input) const override {
    conv_backward_data(stream, shape_, rows_, d_output, weight, static_cast<float*>(workspace), capacity_, d_input);
  }
  void backward_filter(const Stream& stream, const float* input, const float* d_output, void* workspace,
                       float* d_weight, float* d_bias) const override {
    conv_backward_filter(stream, shape_, rows_, input, 1.0f, d_output, static_cast<float*>(workspace), capacity_,
                         d_weight, d_bias);
  }

 private:
  ConvShape shape_;
  std::int64_t rows_, capacity_;
};

#if defined(SURGE_WITH_CUDNN)
class CudnnLayer final : public ConvLayerPasses {
 public:
  CudnnLayer(Device device, const ConvShape& shape, std::int64_t rows, bool allow_tf32, std::size_t limit)
      : conv_(device, shape, rows, allow_tf32, limit) {}
  std::size_t workspace_bytes() const override { return conv_.workspace_bytes(); }
  std::string describe() const override { return conv_.algorithms(); }
  void forward(const Stream& stream, const float* input, const float* weight, const float* bias, void* workspace,
               float* output) const override {
    conv_.forward(stream, input, weight, bias, workspace, output);
  }
  void backward_data(const Stream& stream, const float* d_output, const float* weight, void* workspace,
                     float* d_input) const override {
    conv_.backward_data(stream, d_output, weight, workspace, d_input);
  }
  void backward_filter(const Stream& stream, const float* input, const float* d_output, void* workspace,
                       float* d_weight, float* d_bias) const override {
    conv_.backward_filter(stream, input, d_output, workspace, d_weight, d_bias);
  }

 private:
  CudnnConv conv_;
};
#endif

std::unique_ptr<ConvLayerPasses> make_layer(Device device, const CnnEncoder& encoder, int l, std::int64_t rows,
                                            [[maybe_unused]] bool allow_tf32,
                                            [[maybe_unused]] std::size_t workspace_limit) {
  if (device.is_cpu()) return std::make_unique<Im2colLayer>(encoder.conv(l), rows, encoder.column_capacity(rows));
  check_cudnn_rows(encoder, rows);
  require_cudnn(device);
#if defined(SURGE_WITH_CUDNN)
  return std::make_unique<CudnnLayer>(device, encoder.conv(l), rows, allow_tf32, workspace_limit);
#else
  return nullptr;  // not reached: require_cudnn threw
#endif
}

}  // namespace

std::size_t conv_workspace_bytes(const CnnEncoder& encoder, std::int64_t rows) {
  std::int64_t columns = 0;
  for (int l = 0; l < encoder.num_convs(); ++l)
    columns = std::max(columns, encoder.conv(l).column_size(std::min(rows, CnnEncoder::kColumnRows)));
  return std::max(kMinConvWorkspaceBytes, static_cast<std::size_t>(columns) * sizeof(float));
}

std::int64_t cudnn_max_rows(const CnnEncoder& encoder) {
  std::int64_t widest = encoder.frame_size();
  for (int l = 0; l < encoder.num_convs(); ++l) widest = std::max(widest, encoder.conv(l).output_size());
  return std::numeric_limits<std::int32_t>::max() / widest;
}

void require_cudnn([[maybe_unused]] Device device) {
#if !defined(SURGE_WITH_CUDNN)
  throw InputError("observation = \"pixels\" on " + device.str() +
                   " convolves through cuDNN, which this build did not find; install cuDNN 9 for this CUDA and "
                   "rebuild, or use --device cpu");
#endif
}

void check_cudnn_rows(const CnnEncoder& encoder, std::int64_t rows) {
  const std::int64_t most = cudnn_max_rows(encoder);
  if (rows > most)
    throw InputError("the CNN encoder would convolve " + std::to_string(rows) +
                     " rows at once on CUDA, over cuDNN's 32-bit tensor limit of " + std::to_string(most) +
                     " rows for these frames; raise num_minibatches or lower num_envs");
}

std::int64_t device_scratch_size(const CnnEncoder& encoder, std::int64_t rows) {
  return rows * encoder.frame_size() + 2 * rows * widest_layer(encoder);
}

CnnDeviceConvs::CnnDeviceConvs(Device device, const CnnEncoder& encoder, std::int64_t rows, bool allow_tf32,
                               std::size_t workspace_limit)
    : device_(device), rows_(rows) {
  SURGE_CHECK(rows >= 1, "encoder convolutions for no rows");
  for (int l = 0; l < encoder.num_convs(); ++l)
    layers_.push_back(make_layer(device, encoder, l, rows, allow_tf32, workspace_limit));
  SURGE_CHECK(device.is_cpu() || workspace_bytes() <= workspace_limit,
              "the encoder's convolutions need " + std::to_string(workspace_bytes()) + " bytes of workspace, " +
                  std::to_string(workspace_limit) + " planned");
}

std::size_t CnnDeviceConvs::workspace_bytes() const {
  std::size_t bytes = 0;
  for (const auto& layer : layers_) bytes = std::max(bytes, layer->workspace_bytes());
  return bytes;
}

std::string CnnDeviceConvs::describe() const {
  std::string text;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    text += (l ? "; conv" : "conv") + std::to_string(l) + ": " + layers_[l]->describe();
  return text;
}

void cnn_forward_device(const Stream& stream, const CnnEncoder& encoder, const CnnDeviceConvs& convs,
                        const float* params, const std::uint8_t* frames, std::int64_t rows, float* activations,
                        float* scratch, void* workspace, float* features) {
  SURGE_CHECK(convs.rows() == rows && convs.device() == stream.device(),
              "encoder convolutions made for " + std::to_string(convs.rows()) + " rows on " + convs.device().str() +
                  ", called with " + std::to_string(rows) + " on " + stream.device().str());
  float* scaled = scratch;  // [rows][frame_size]
  scale_frames(stream, frames, rows * encoder.frame_size(), scaled);
  const float* input = scaled;
  for (int l = 0; l < encoder.num_convs(); ++l) {
    float* output = activations + encoder.activation_offset(l, rows);
    convs.layer(l).forward(stream, input, params + encoder.conv_weight_offset(l), params + encoder.conv_bias_offset(l),
                           workspace, output);
    relu_in_place(stream, output, rows * encoder.conv(l).output_size());
    input = output;
  }
  const std::int64_t flat = encoder.flat_dim(), dense = encoder.feature_dim();
  gemm<float>(stream, Transpose::No, Transpose::Yes, rows, dense, flat, 1.0f, input, flat,
              params + encoder.dense_weight_offset(), flat, 0.0f, features, dense,
              params + encoder.dense_bias_offset());
  relu_in_place(stream, features, rows * dense);
}

void cnn_backward_device(const Stream& stream, const CnnEncoder& encoder, const CnnDeviceConvs& convs,
                         const float* params, const std::uint8_t* frames, std::int64_t rows, const float* activations,
                         const float* features, const float* d_features, float* grads, float* scratch,
                         void* workspace) {
  SURGE_CHECK(convs.rows() == rows && convs.device() == stream.device(),
              "encoder convolutions made for another row count or device");
  const Device device = stream.device();
  const std::int64_t flat = encoder.flat_dim(), dense = encoder.feature_dim();
  float* scaled = scratch;                                // [rows][frame_size]: the first layer's input
  float* current = scaled + rows * encoder.frame_size();  // the gradient at the layer being worked on
  float* next = current + rows * widest_layer(encoder);   // the gradient one layer further down
  const int last = encoder.num_convs() - 1;
  const float* flat_input = activations + encoder.activation_offset(last, rows);

  copy_bytes(next, device, d_features, device, static_cast<std::size_t>(rows * dense) * sizeof(float), stream);
  relu_mask(stream, features, rows * dense, next);
  gemm<float>(stream, Transpose::Yes, Transpose::No, dense, flat, rows, 1.0f, next, dense, flat_input, flat, 0.0f,
              grads + encoder.dense_weight_offset(), flat);
  column_sums(stream, next, rows, dense, grads + encoder.dense_bias_offset());
  gemm<float>(stream, Transpose::No, Transpose::No, rows, flat, dense, 1.0f, next, dense,
              params + encoder.dense_weight_offset(), flat, 0.0f, current, flat);

  scale_frames(stream, frames, rows * encoder.frame_size(), scaled);
  for (int l = last; l >= 0; --l) {
    relu_mask(stream, activations + encoder.activation_offset(l, rows), rows * encoder.conv(l).output_size(), current);
    const float* input = l > 0 ? activations + encoder.activation_offset(l - 1, rows) : scaled;
    const ConvLayerPasses& layer = convs.layer(l);
    layer.backward_filter(stream, input, current, workspace, grads + encoder.conv_weight_offset(l),
                          grads + encoder.conv_bias_offset(l));
    if (l == 0) break;  // the frames need no gradient
    layer.backward_data(stream, current, params + encoder.conv_weight_offset(l), workspace, next);
    std::swap(current, next);
  }
}

}  // namespace surge::rl
