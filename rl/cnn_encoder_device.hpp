#pragma once
// The CNN encoder's passes as the CUDA backend runs them (rl/cnn_encoder.hpp has the CPU's): every
// convolution through a layer object made once per row count (cuDNN's on CUDA, rl/conv_cudnn.hpp, its
// algorithms chosen at construction within a workspace the memory plan holds), the uint8 frames scaled
// to float into the scratch as the first layer reads them, ReLU and the bias gradients by single-source
// kernels, the dense layer through rl::gemm (cuBLASLt). Every call only enqueues, so the trainer's CUDA
// graph holds the passes. The same passes run on the CPU backend with im2col layers (rl/conv.hpp): the
// CPU tests check this sequence of calls against cnn_forward/cnn_backward, the GPU test cuDNN's layers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/conv.hpp"
#include "sim/device.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// One conv layer's three float passes for a fixed row count, on one device (rl/conv.hpp's conventions:
// NHWC images, [out][kh][kw][in] weights; outputs and gradients overwritten).
class ConvLayerPasses {
 public:
  virtual ~ConvLayerPasses() = default;
  virtual std::size_t workspace_bytes() const = 0;  // what the passes use of `workspace`
  virtual std::string describe() const = 0;         // the algorithms, for reports
  virtual void forward(const Stream& stream, const float* input, const float* weight, const float* bias,
                       void* workspace, float* output) const = 0;
  virtual void backward_data(const Stream& stream, const float* d_output, const float* weight, void* workspace,
                             float* d_input) const = 0;
  virtual void backward_filter(const Stream& stream, const float* input, const float* d_output, void* workspace,
                               float* d_weight, float* d_bias) const = 0;
};

// The cuDNN workspace for up to `rows` rows, in bytes: the widest layer's im2col columns for
// min(rows, CnnEncoder::kColumnRows) rows (what a GEMM-based algorithm on chunks of rows would take), and
// at least kMinConvWorkspaceBytes. The algorithms are chosen to fit in it, so the memory plan knows it
// from the config alone, before any GPU is asked. (The CPU twin's layers use the CPU encoder's column
// capacity instead: CnnDeviceConvs::workspace_bytes says.)
inline constexpr std::size_t kMinConvWorkspaceBytes = std::size_t{32} << 20;
std::size_t conv_workspace_bytes(const CnnEncoder& encoder, std::int64_t rows);

// The device passes' scratch for `rows` rows, in floats: the frames scaled to float [rows][frame_size]
// (what the first convolution reads, forward and backward-filter), then two gradient buffers
// [rows][widest layer] that the backward pass alternates between.
std::int64_t device_scratch_size(const CnnEncoder& encoder, std::int64_t rows);

// cuDNN's legacy API indexes a tensor with 32-bit integers: every tensor of a call (the scaled frames,
// each layer's output) must hold fewer than 2^31 elements. The most rows one call may take, and a check
// that throws InputError, naming `rows` and the way out, when a batch of `rows` rows would not fit.
std::int64_t cudnn_max_rows(const CnnEncoder& encoder);
void check_cudnn_rows(const CnnEncoder& encoder, std::int64_t rows);
// Throws InputError (one line, the way out) when this build has no cuDNN to convolve with on `device`.
void require_cudnn(Device device);

// Every conv layer of `encoder` for exactly rows() rows on `device`: cuDNN on CUDA (throws Error in a
// build without cuDNN), im2col on the CPU. Made once per row count and reused: no per-call search.
class CnnDeviceConvs {
 public:
  // allow_tf32: cuDNN may round to TF32 on tensor cores (precision = "tf32"); workspace_limit: the bytes
  // the caller holds for the workspace (conv_workspace_bytes of at least `rows`).
  CnnDeviceConvs(Device device, const CnnEncoder& encoder, std::int64_t rows, bool allow_tf32,
                 std::size_t workspace_limit);

  Device device() const { return device_; }
  std::int64_t rows() const { return rows_; }
  const ConvLayerPasses& layer(int index) const { return *layers_[static_cast<std::size_t>(index)]; }
  std::size_t workspace_bytes() const;  // the largest any layer uses
  std::string describe() const;         // every layer's algorithms, "; " between layers

 private:
  Device device_;
  std::int64_t rows_;
  std::vector<std::unique_ptr<ConvLayerPasses>> layers_;
};

// features[rows][feature_dim] of frames[rows][frame_size] (uint8), all pointers on convs.device(), as
// cnn_forward computes them. activations [activation_size(rows)], scratch [device_scratch_size(rows)],
// workspace [convs.workspace_bytes()].
void cnn_forward_device(const Stream& stream, const CnnEncoder& encoder, const CnnDeviceConvs& convs,
                        const float* params, const std::uint8_t* frames, std::int64_t rows, float* activations,
                        float* scratch, void* workspace, float* features);

// Given d_features, every slice of this encoder in `grads` (others untouched), as cnn_backward computes
// them; reads what cnn_forward_device left in activations and features.
void cnn_backward_device(const Stream& stream, const CnnEncoder& encoder, const CnnDeviceConvs& convs,
                         const float* params, const std::uint8_t* frames, std::int64_t rows, const float* activations,
                         const float* features, const float* d_features, float* grads, float* scratch, void* workspace);

}  // namespace surge::rl
