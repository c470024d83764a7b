// MLP forward and backward: GEMMs through rl::gemm, the activations and their derivatives as
// single-source kernels.
#include "rl/device_util.hpp"
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

// The derivative expressed through the activation's output, which is what forward() keeps.
template <class Scalar>
SURGE_HD_INLINE Scalar activation_slope(Activation activation, Scalar out) {
  if (activation == Activation::Tanh) return Scalar(1) - out * out;
  return out > Scalar(0) ? Scalar(1) : Scalar(0);
}

}  // namespace

// ============================== launchers ==============================

template <class Scalar>
void fill(const Stream& stream, Scalar* values, std::int64_t count, Scalar value) {
  parallel_for(stream, count, [=] SURGE_HD(std::int64_t i) { values[i] = value; });
}

std::int64_t reduce_scratch_doubles(Device device, int width) { return reduce_scratch_size(device, width); }

template <class Scalar>
void mlp_forward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                 Scalar* activations, Scalar* output) {
  const Activation activation = mlp.activation();
  const Scalar* x = input;
  for (int layer = 0; layer < mlp.num_layers(); ++layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const bool head = layer + 1 == mlp.num_layers();
    Scalar* y = head ? output : activations + mlp.activation_offset(layer, batch);
    gemm<Scalar>(stream, Transpose::No, Transpose::Yes, batch, out, in, Scalar(1), x, in, params + mlp.weight_offset(layer),
                 in, Scalar(0), y, out, params + mlp.bias_offset(layer));
    if (!head) {
      // One loop per activation, so the CPU compiler sees a straight-line body it can vectorise.
      if (activation == Activation::Tanh)
        parallel_for(stream, batch * out, [=] SURGE_HD(std::int64_t i) { y[i] = tanh_of(y[i]); }, 8);
      else
        parallel_for(stream, batch * out, [=] SURGE_HD(std::int64_t i) { y[i] = y[i] > Scalar(0) ? y[i] : Scalar(0); });
    }
    x = y;
  }
}

template <class Scalar>
void mlp_backward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                  const Scalar* activations, const Scalar* d_output, const Scalar* ones, Scalar* grads, Scalar* scratch) {
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
    gemm<Scalar>(stream, Transpose::No, Transpose::No, batch, in, out, Scalar(1), d_y, out, params + mlp.weight_offset(layer),
                 in, Scalar(0), d_x, in);
    const Scalar* h = x;
    parallel_for(stream, batch * in, [=] SURGE_HD(std::int64_t i) { d_x[i] *= activation_slope(activation, h[i]); });
    d_y = d_x;
  }
}

#define SURGE_MLP_INSTANTIATE(Scalar)                                                                                    \
  template void fill<Scalar>(const Stream&, Scalar*, std::int64_t, Scalar);                                            \
  template void mlp_forward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t, Scalar*,      \
                                    Scalar*);                                                                           \
  template void mlp_backward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t,              \
                                     const Scalar*, const Scalar*, const Scalar*, Scalar*, Scalar*);
SURGE_MLP_INSTANTIATE(float)
SURGE_MLP_INSTANTIATE(double)
#undef SURGE_MLP_INSTANTIATE

template void fill<std::int32_t>(const Stream&, std::int32_t*, std::int64_t, std::int32_t);
template void fill<std::uint8_t>(const Stream&, std::uint8_t*, std::int64_t, std::uint8_t);

}  // namespace surge::rl
