#pragma once
// One convolution layer on the CPU through oneDNN (Debian's libdnnl-dev), in the layout of rl/conv.hpp:
// NHWC float images, [out][kh][kw][in] weights. Primitives are made once per (shape, rows) at
// construction, with the weights in the layout oneDNN's fast kernels prefer (ours would send it to its
// reference kernel, a hundred times slower); each call reorders the weights in or their gradient out,
// which is small beside the convolution. Measured 4 to 10 times faster than im2col + OpenBLAS on the nature
// layers (docs/pixels.md). Only in builds that found oneDNN (SURGE_WITH_ONEDNN); no oneDNN type appears here.
#include <cstdint>
#include <memory>
#include <string>

#include "rl/conv.hpp"

namespace surge::rl {

class OnednnConv {
 public:
  OnednnConv(const ConvShape& shape, std::int64_t rows);
  ~OnednnConv();
  OnednnConv(OnednnConv&&) noexcept;
  OnednnConv& operator=(OnednnConv&&) noexcept;

  const ConvShape& shape() const;
  std::int64_t rows() const;
  // The kernels oneDNN chose for the three passes, for reports ("brgconv:avx512_core, ...").
  std::string kernels() const;

  // The passes of rl/conv.hpp for exactly rows() images, host pointers; they run before returning.
  // output = conv(input) + bias (bias may be null).
  void forward(const float* input, const float* weight, const float* bias, float* output) const;
  // d_input = dLoss/d(input), overwritten.
  void backward_data(const float* d_output, const float* weight, float* d_input) const;
  // d_weight and d_bias (may be null) overwritten.
  void backward_filter(const float* input, const float* d_output, float* d_weight, float* d_bias) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace surge::rl
