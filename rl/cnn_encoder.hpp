#pragma once
// The convolutional trunk of a pixel policy: uint8 frames [rows][height][width][channels] (NHWC, the
// stacked frames as channels) -> conv + ReLU layers -> dense + ReLU -> features [rows][feature_dim()], which
// the actor and critic heads (rl/mlp.hpp) take as their input. Parameters live in slices of a ParamTable,
// as the MLPs' do, so one flat buffer holds the whole policy and Adam runs over it unchanged. The CPU
// backend convolves by im2col + OpenBLAS (rl/conv.hpp); the frames are scaled by 1/255 as the first layer
// reads them.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/conv.hpp"
#include "rl/conv_onednn.hpp"
#include "rl/param_table.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

struct ConvLayerConfig {
  int channels = 0;
  int kernel = 0;  // square
  int stride = 1;
};

struct EncoderConfig {
  std::string name;                    // "nature", "small", or "custom"
  std::vector<ConvLayerConfig> convs;  // in order from the frames
  int dense = 512;                     // width of the features
};

// "nature": CleanRL's Atari encoder (Mnih et al. 2015): 8x8/4 32, 4x4/2 64, 3x3/1 64, dense 512.
// "small": the same kernels and strides with half the channels (16, 32, 32) and dense 256, for frames of
// 64x64 or smaller (down to 36x36): 40% of nature's multiply-adds at 84x84, a fifth of them at 64x64.
// Throws InputError for any other name.
EncoderConfig encoder_config(const std::string& name);

struct FrameShape {
  int height = 0, width = 0;
  int channels = 0;  // frame_stack x (1 grayscale or 3 RGB)
};

class CnnEncoder {
 public:
  static constexpr double kGain = 1.4142135623730951;  // sqrt(2): CleanRL's layer_init for every trunk layer
  static constexpr double kPixelScale = 1.0 / 255.0;
  // Column workspace rows by default: bounds im2col's buffer (13 MB of float for nature at 84x84x4) while
  // keeping each GEMM thousands of rows tall.
  static constexpr std::int64_t kColumnRows = 32;

  // Registers "<prefix>.conv<l>.weight" [channels][kernel*kernel*in_channels] (laid out [kh][kw][c]),
  // "<prefix>.conv<l>.bias" [channels][1], "<prefix>.dense.weight" [dense][flat] (flat in the last conv's
  // NHWC order) and "<prefix>.dense.bias" [dense][1]. Throws InputError if a layer does not fit its input.
  CnnEncoder(ParamTable& table, const std::string& prefix, FrameShape frame, const EncoderConfig& config,
             std::int64_t column_rows = kColumnRows);

  const EncoderConfig& config() const { return config_; }
  FrameShape frame() const { return frame_; }
  std::int64_t frame_size() const { return std::int64_t{frame_.height} * frame_.width * frame_.channels; }
  int feature_dim() const { return config_.dense; }
  int num_convs() const { return static_cast<int>(convs_.size()); }
  const ConvShape& conv(int layer) const { return convs_[static_cast<std::size_t>(layer)]; }
  std::int64_t flat_dim() const { return convs_.back().output_size(); }  // the dense layer's inputs
  std::int64_t conv_weight_offset(int layer) const { return weight_offsets_[static_cast<std::size_t>(layer)]; }
  std::int64_t conv_bias_offset(int layer) const { return bias_offsets_[static_cast<std::size_t>(layer)]; }
  std::int64_t dense_weight_offset() const { return weight_offsets_.back(); }
  std::int64_t dense_bias_offset() const { return bias_offsets_.back(); }
  // Multiply-adds of one forward pass per row (the backward pass costs twice that).
  double forward_flops_per_row() const;

  // The memory plan, in elements of the Scalar the passes run in. Activations: every conv layer's
  // post-ReLU output [rows][out_h][out_w][channels], kept by forward for backward. Scratch: the im2col
  // columns for up to column_rows rows (with oneDNN in the build, at least the frames scaled to float:
  // oneDNN's first layer reads them), then two gradient buffers [rows][widest layer].
  std::int64_t activation_size(std::int64_t rows) const;
  std::int64_t activation_offset(int layer, std::int64_t rows) const;
  std::int64_t column_capacity(std::int64_t rows) const;
  std::int64_t scratch_size(std::int64_t rows) const;
  // Bytes of activations and scratch together for `rows` rows of Scalar of `scalar_bytes`.
  std::int64_t workspace_bytes(std::int64_t rows, std::int64_t scalar_bytes) const {
    return (activation_size(rows) + scratch_size(rows)) * scalar_bytes;
  }

  // Writes the initial weights into `params` ([table.total()], host): orthogonal with gain sqrt(2), as
  // torch.nn.init.orthogonal_ on the [out][in*kh*kw] view of a conv weight (our column order is a
  // permutation of torch's, which keeps a matrix orthogonal), drawn layer by layer from `rng`; biases zero.
  void initialize(std::vector<double>& params, Rng& rng) const;

 private:
  EncoderConfig config_;
  FrameShape frame_;
  std::int64_t column_rows_;
  std::vector<ConvShape> convs_;
  std::vector<std::int64_t> weight_offsets_, bias_offsets_;  // the convs', then the dense layer's
};

// The oneDNN primitives of every conv layer for exactly rows() rows; defined in builds that found oneDNN
// (SURGE_WITH_ONEDNN), where the float passes below convolve through it when given one (4 to 10 times
// faster than im2col here: docs/pixels.md).
class CnnCpuConvs;

// features[rows][feature_dim] of frames[rows][frame_size] (uint8); conv activations go to `activations`
// [activation_size(rows)], and `scratch` [scratch_size(rows)] is used. Host pointers, CPU stream.
template <class Scalar>
void cnn_forward(const Stream& stream, const CnnEncoder& encoder, const Scalar* params, const std::uint8_t* frames,
                 std::int64_t rows, Scalar* activations, Scalar* scratch, Scalar* features,
                 const CnnCpuConvs* convs = nullptr);

// Given d_features = dLoss/d(features), writes dLoss/d(parameter) into every slice of this encoder in
// `grads` (table layout; other slices untouched). Needs what cnn_forward left in activations and features.
template <class Scalar>
void cnn_backward(const Stream& stream, const CnnEncoder& encoder, const Scalar* params, const std::uint8_t* frames,
                  std::int64_t rows, const Scalar* activations, const Scalar* features, const Scalar* d_features,
                  Scalar* grads, Scalar* scratch, const CnnCpuConvs* convs = nullptr);

#if defined(SURGE_WITH_ONEDNN)
class CnnCpuConvs {
 public:
  CnnCpuConvs(const CnnEncoder& encoder, std::int64_t rows);
  std::int64_t rows() const { return rows_; }
  const OnednnConv& layer(int index) const { return layers_[static_cast<std::size_t>(index)]; }

 private:
  std::int64_t rows_;
  std::vector<OnednnConv> layers_;
};
#endif

}  // namespace surge::rl
