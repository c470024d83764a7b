#pragma once
// One convolution layer on CUDA through cuDNN 9 (its legacy cudnnConvolution* API), in the layout the CPU
// path uses (rl/conv.hpp): NHWC images and KRSC = [out][kh][kw][in] filters, fp32 in and out. The three
// algorithms (forward, backward data, backward filter) are chosen once, at construction, by cuDNN's
// heuristics (cudnnGet*Algorithm_v7: no trial runs, no allocation), preferring deterministic ones so that
// a replayed run matches bit for bit; each call then only enqueues work, so it can be captured in a CUDA
// graph. The object is the cache entry for its (shape, rows): build one per layer and minibatch size.
// cuDNN convolves float images, so on CUDA the first layer's uint8 frames are scaled into float rows as the
// minibatch gather copies them (the rollout itself stays uint8). No cuDNN type appears in this header.
#include <cstdint>
#include <memory>
#include <string>

#include "rl/conv.hpp"
#include "sim/device.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

// Whether this build has the cuDNN path (CUDA on and cuDNN found).
bool cudnn_available();

class CudnnConv {
 public:
  // The most workspace an algorithm may ask for unless the caller plans less: beyond it the next
  // candidate is taken.
  static constexpr std::size_t kWorkspaceLimit = std::size_t{256} << 20;

  // For `rows` images of `shape` on `device` (CUDA). allow_tf32: let cuDNN round inputs to TF32 on tensor
  // cores (off: FMA math, the same fp32 rounding class as the CPU path). Every chosen algorithm needs at
  // most workspace_limit bytes. Throws Error in a build without cuDNN, or when no algorithm fits.
  CudnnConv(Device device, const ConvShape& shape, std::int64_t rows, bool allow_tf32 = false,
            std::size_t workspace_limit = kWorkspaceLimit);
  ~CudnnConv();
  CudnnConv(CudnnConv&&) noexcept;
  CudnnConv& operator=(CudnnConv&&) noexcept;

  const ConvShape& shape() const;
  std::int64_t rows() const;
  // Bytes of workspace the chosen algorithms need, the largest of the three: for the memory plan.
  std::size_t workspace_bytes() const;
  // The chosen algorithms in words ("fwd IMPLICIT_PRECOMP_GEMM, data ALGO_1, filter ALGO_1"), for reports.
  std::string algorithms() const;

  // The passes of rl/conv.hpp on device pointers, enqueued on `stream`; `workspace` holds workspace_bytes().
  // output[rows][out_h][out_w][out_c] = conv(input) + bias (bias may be null).
  void forward(const Stream& stream, const float* input, const float* weight, const float* bias, void* workspace,
               float* output) const;
  // d_input = dLoss/d(input), overwritten.
  void backward_data(const Stream& stream, const float* d_output, const float* weight, void* workspace,
                     float* d_input) const;
  // d_weight and d_bias (may be null), overwritten.
  void backward_filter(const Stream& stream, const float* input, const float* d_output, void* workspace,
                       float* d_weight, float* d_bias) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace surge::rl
