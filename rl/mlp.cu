// MLP forward and backward: GEMMs through rl::gemm, the activations and their derivatives as
// single-source kernels.
#include <type_traits>

#include "rl/device_util.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/gemm.hpp"
#include "rl/mlp.hpp"
#include "rl/scalar_math.hpp"
#include "sim/parallel.cuh"

namespace surge::rl {
namespace {

// ============================== per-element logic ==============================

// float takes the fast tanh (the trainer's path); double keeps libm's, for the gradient checks.
SURGE_HD_INLINE float tanh_of(float x) { return fast_tanh(x); }
SURGE_HD_INLINE double tanh_of(double x) { return scalar_tanh(x); }

}  // namespace

// The element-wise kernels are functors rather than lambdas: nvcc wraps an extended __host__ __device__
// lambda for the host in a type that calls it through a pointer, which keeps the CPU backend's loops
// from inlining and vectorising it (a 3x slower learner in CUDA builds).
namespace detail {

template <class Scalar>
struct TanhInPlace {
  Scalar* values;
  SURGE_HD_INLINE void operator()(std::int64_t i) const { values[i] = tanh_of(values[i]); }
};

template <class Scalar>
struct ReluInPlace {
  Scalar* values;
  SURGE_HD_INLINE void operator()(std::int64_t i) const { values[i] = values[i] > Scalar(0) ? values[i] : Scalar(0); }
};

// Through the activation, by its derivative expressed in the activation's output (what forward() keeps).
template <class Scalar>
struct TanhBackward {
  Scalar* gradient;
  const Scalar* output;
  SURGE_HD_INLINE void operator()(std::int64_t i) const { gradient[i] *= Scalar(1) - output[i] * output[i]; }
};

template <class Scalar>
struct ReluBackward {
  Scalar* gradient;
  const Scalar* output;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    gradient[i] = output[i] > Scalar(0) ? gradient[i] : Scalar(0);
  }
};

}  // namespace detail

// ============================== launchers ==============================

template <class Scalar>
void fill(const Stream& stream, Scalar* values, std::int64_t count, Scalar value) {
  parallel_for(stream, count, [=] SURGE_HD(std::int64_t i) { values[i] = value; });
}

std::int64_t reduce_scratch_doubles(Device device, int width) { return reduce_scratch_size(device, width); }

template <class Scalar>
void mlp_forward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                 Scalar* activations, Scalar* output) {
  if (stream.device().is_cpu() && mlp.fused_on_cpu() && fused_mlp_fits(mlp)) {
    if constexpr (std::is_same_v<Scalar, float>)
      if (mlp.precision() == Precision::Bf16)
        return fused_mlp_bf16_forward(mlp, params, input, batch, activations, output);
    fused_mlp_forward(mlp, params, input, batch, activations, output);
    return;
  }
  const Activation activation = mlp.activation();
  const Scalar* x = input;
  for (int layer = 0; layer < mlp.num_layers(); ++layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const bool head = layer + 1 == mlp.num_layers();
    Scalar* y = head ? output : activations + mlp.activation_offset(layer, batch);
    gemm<Scalar>(stream, Transpose::No, Transpose::Yes, batch, out, in, Scalar(1), x, in,
                 params + mlp.weight_offset(layer), in, Scalar(0), y, out, params + mlp.bias_offset(layer));
    if (!head) {
      if (activation == Activation::Tanh)
        parallel_for(stream, batch * out, detail::TanhInPlace<Scalar>{y}, 8);
      else
        parallel_for(stream, batch * out, detail::ReluInPlace<Scalar>{y});
    }
    x = y;
  }
}

template <class Scalar>
void mlp_backward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                  const Scalar* activations, const Scalar* d_output, const Scalar* ones, Scalar* grads,
                  Scalar* scratch) {
  if (stream.device().is_cpu() && mlp.fused_on_cpu() && fused_mlp_fits(mlp)) {
    if constexpr (std::is_same_v<Scalar, float>)
      if (mlp.precision() == Precision::Bf16)
        return fused_mlp_bf16_backward(mlp, params, input, batch, activations, d_output, grads);
    fused_mlp_backward(mlp, params, input, batch, activations, d_output, grads);
    return;
  }
  const Activation activation = mlp.activation();
  const std::int64_t half = mlp.scratch_size(batch) / 2;
  const Scalar* d_y = d_output;  // dLoss/d(this layer's output, before the next layer)
  for (int layer = mlp.num_layers() - 1; layer >= 0; --layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const Scalar* x = layer == 0 ? input : activations + mlp.activation_offset(layer - 1, batch);
    // dW[out][in] = d_y^T x;  db[out] = ones^T d_y
    gemm<Scalar>(stream, Transpose::Yes, Transpose::No, out, in, batch, Scalar(1), d_y, out, x, in, Scalar(0),
                 grads + mlp.weight_offset(layer), in);
    gemm<Scalar>(stream, Transpose::No, Transpose::No, 1, out, batch, Scalar(1), ones, batch, d_y, out, Scalar(0),
                 grads + mlp.bias_offset(layer), out);
    if (layer == 0) break;
    // d_x[batch][in] = d_y W, then through the previous layer's activation.
    Scalar* d_x = scratch + (layer % 2) * half;
    gemm<Scalar>(stream, Transpose::No, Transpose::No, batch, in, out, Scalar(1), d_y, out,
                 params + mlp.weight_offset(layer), in, Scalar(0), d_x, in);
    if (activation == Activation::Tanh)
      parallel_for(stream, batch * in, detail::TanhBackward<Scalar>{d_x, x});
    else
      parallel_for(stream, batch * in, detail::ReluBackward<Scalar>{d_x, x});
    d_y = d_x;
  }
}

#define SURGE_MLP_INSTANTIATE(Scalar)                                                                               \
  template void fill<Scalar>(const Stream&, Scalar*, std::int64_t, Scalar);                                         \
  template void mlp_forward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t, Scalar*, \
                                    Scalar*);                                                                       \
  template void mlp_backward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t,         \
                                     const Scalar*, const Scalar*, const Scalar*, Scalar*, Scalar*);
SURGE_MLP_INSTANTIATE(float)
SURGE_MLP_INSTANTIATE(double)
#undef SURGE_MLP_INSTANTIATE

template void fill<std::int32_t>(const Stream&, std::int32_t*, std::int64_t, std::int32_t);
template void fill<std::uint8_t>(const Stream&, std::uint8_t*, std::int64_t, std::uint8_t);

}  // namespace surge::rl
