// MLP forward and backward: GEMMs through rl::gemm, the activations and their derivatives as
// single-source kernels.
#include <algorithm>
#include <type_traits>

#include "rl/batched_kernels.hpp"
#include "rl/bf16.hpp"
#include "rl/device_util.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/fused_mlp_bf16.hpp"
#include "rl/fused_mlp_cuda.hpp"
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

// The element operations take two indices, the element's in the first array and in the second (the
// same array for the in-place activations), so that one op serves one agent's packed arrays and K
// agents' blocks at their own strides.
template <class Scalar>
struct TanhInPlace {
  Scalar* values;
  SURGE_HD_INLINE void operator()(std::int64_t i, std::int64_t) const { values[i] = tanh_of(values[i]); }
};

template <class Scalar>
struct ReluInPlace {
  Scalar* values;
  SURGE_HD_INLINE void operator()(std::int64_t i, std::int64_t) const {
    values[i] = values[i] > Scalar(0) ? values[i] : Scalar(0);
  }
};

// Through the activation, by its derivative expressed in the activation's output (what forward() keeps).
template <class Scalar>
struct TanhBackward {
  Scalar* gradient;
  const Scalar* output;
  SURGE_HD_INLINE void operator()(std::int64_t i, std::int64_t j) const {
    gradient[i] *= Scalar(1) - output[j] * output[j];
  }
};

template <class Scalar>
struct ReluBackward {
  Scalar* gradient;
  const Scalar* output;
  SURGE_HD_INLINE void operator()(std::int64_t i, std::int64_t j) const {
    gradient[i] = output[j] > Scalar(0) ? gradient[i] : Scalar(0);
  }
};

// Item i of the pass is element i of both arrays.
template <class Op>
struct Packed {
  Op op;
  SURGE_HD_INLINE void operator()(std::int64_t i) const { op(i, i); }
};

// K agents' [rows][width] blocks, agent a's block `stride` elements after agent a-1's in each array:
// item r of the pass is row r % rows of agent r / rows (the agent from the row), its elements in turn.
// A row per item keeps the CPU's inner loop contiguous, so it vectorises as the packed pass does; an
// index division per element made the batched tanh three times slower there.
template <class Op>
struct AgentRows {
  Op op;
  std::int64_t rows, width, first_stride, second_stride;
  SURGE_HD_INLINE void operator()(std::int64_t r) const {
    const std::int64_t agent = r / rows, row = r % rows;
    const std::int64_t first = agent * first_stride + row * width, second = agent * second_stride + row * width;
    for (std::int64_t e = 0; e < width; ++e) op(first + e, second + e);
  }
};

struct ToBf16 {
  const float* values;
  std::uint16_t* rounded;
  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    rounded[i] = static_cast<std::uint16_t>(rounded_bf16(values[i]));
  }
};

}  // namespace detail

// ============================== launchers ==============================

template <class Scalar>
void fill(const Stream& stream, Scalar* values, std::int64_t count, Scalar value) {
  parallel_for(stream, count, [=] SURGE_HD(std::int64_t i) { values[i] = value; });
}

void fill_batched(const Stream& stream, int agents, PerAgent<double> values, std::int64_t count, double value) {
  if (count <= 0) return;
  parallel_for(stream, agents * count, [=] SURGE_HD(std::int64_t i) { values[i / count][i % count] = value; });
}

std::int64_t reduce_scratch_doubles(Device device, int width) { return reduce_scratch_size(device, width); }

int widest_layer(const Mlp& mlp) {
  int widest = mlp.input_dim();
  for (int l = 0; l < mlp.num_layers(); ++l) widest = std::max(widest, mlp.layer_out(l));
  return widest;
}

namespace {

void round_to_bf16(const Stream& stream, const float* values, std::int64_t count, std::uint16_t* rounded) {
  parallel_for(stream, count, detail::ToBf16{values, rounded});
}

// op over `agents` blocks of [rows][width] elements, at `first_stride` and `second_stride` per agent in
// its two arrays: one launch, packed where the blocks are back to back.
template <class Op>
void for_agent_rows(const Stream& stream, Op op, std::int64_t agents, std::int64_t rows, std::int64_t width,
                    std::int64_t first_stride, std::int64_t second_stride, std::int64_t work_per_element) {
  const std::int64_t block = rows * width;
  if (agents == 1 || (first_stride == block && second_stride == block))
    parallel_for(stream, agents * block, detail::Packed<Op>{op}, work_per_element);
  else
    parallel_for(stream, agents * rows, detail::AgentRows<Op>{op, rows, width, first_stride, second_stride},
                 width * work_per_element);
}

// y = activation(y) in `agents` blocks of [rows][width], `stride` apart.
template <class Scalar>
void activate(const Stream& stream, Activation activation, Scalar* y, std::int64_t agents, std::int64_t rows,
              std::int64_t width, std::int64_t stride) {
  if (activation == Activation::Tanh)
    for_agent_rows(stream, detail::TanhInPlace<Scalar>{y}, agents, rows, width, stride, stride, 8);
  else
    for_agent_rows(stream, detail::ReluInPlace<Scalar>{y}, agents, rows, width, stride, stride, 1);
}

// gradient *= the activation's derivative at `output`, in `agents` blocks of [rows][width] whose
// strides may differ between the two.
template <class Scalar>
void through_activation(const Stream& stream, Activation activation, Scalar* gradient, const Scalar* output,
                        std::int64_t agents, std::int64_t rows, std::int64_t width, std::int64_t gradient_stride,
                        std::int64_t output_stride) {
  if (activation == Activation::Tanh)
    for_agent_rows(stream, detail::TanhBackward<Scalar>{gradient, output}, agents, rows, width, gradient_stride,
                   output_stride, 1);
  else
    for_agent_rows(stream, detail::ReluBackward<Scalar>{gradient, output}, agents, rows, width, gradient_stride,
                   output_stride, 1);
}

// mlp_forward in bf16 on CUDA: cuBLASLt GEMMs of bf16 operands summed in fp32, fp32 biases and outputs.
// The weights are rounded here, once per forward pass (a pass over the network's parameters, small beside
// the GEMMs); backward() reuses them.
void bf16_forward(const Stream& stream, const Mlp& mlp, const float* params, const float* input, std::int64_t batch,
                  float* activations, float* output, const Bf16Operands& bf16) {
  const int last = mlp.num_layers() - 1;
  const std::int64_t begin = mlp.weight_offset(0), end = mlp.bias_offset(last) + mlp.layer_out(last);
  round_to_bf16(stream, params + begin, end - begin, bf16.weights + begin);
  round_to_bf16(stream, input, batch * mlp.input_dim(), bf16.x);
  for (int layer = 0; layer <= last; ++layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    float* y = layer == last ? output : activations + mlp.activation_offset(layer, batch);
    gemm_bf16(stream, Transpose::No, Transpose::Yes, batch, out, in, bf16.x, in,
              bf16.weights + mlp.weight_offset(layer), in, y, out, params + mlp.bias_offset(layer));
    if (layer == last) break;
    activate(stream, mlp.activation(), y, 1, batch, out, 0);
    round_to_bf16(stream, y, batch * out, bf16.x);
  }
}

void bf16_backward(const Stream& stream, const Mlp& mlp, const float* input, std::int64_t batch,
                   const float* activations, const float* d_output, const float* ones, float* grads, float* scratch,
                   const Bf16Operands& bf16) {
  const std::int64_t half = mlp.scratch_size(batch) / 2;
  const float* d_y = d_output;
  for (int layer = mlp.num_layers() - 1; layer >= 0; --layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const float* x = layer == 0 ? input : activations + mlp.activation_offset(layer - 1, batch);
    round_to_bf16(stream, x, batch * in, bf16.x);
    round_to_bf16(stream, d_y, batch * out, bf16.dy);
    // dW[out][in] = d_y^T x in bf16; db[out] = ones^T d_y in fp32.
    gemm_bf16(stream, Transpose::Yes, Transpose::No, out, in, batch, bf16.dy, out, bf16.x, in,
              grads + mlp.weight_offset(layer), in);
    gemm<float>(stream, Transpose::No, Transpose::No, 1, out, batch, 1.0f, ones, batch, d_y, out, 0.0f,
                grads + mlp.bias_offset(layer), out);
    if (layer == 0) break;
    float* d_x = scratch + (layer % 2) * half;
    gemm_bf16(stream, Transpose::No, Transpose::No, batch, in, out, bf16.dy, out,
              bf16.weights + mlp.weight_offset(layer), in, d_x, in);
    through_activation(stream, mlp.activation(), d_x, x, 1, batch, in, 0, 0);
    d_y = d_x;
  }
}

}  // namespace

template <class Scalar>
void mlp_forward_batched(const Stream& stream, const Mlp& mlp, std::int64_t agents, const MlpAgentStrides& strides,
                         const Scalar* params, const Scalar* input, std::int64_t batch, Scalar* activations,
                         Scalar* output) {
  const Scalar* x = input;
  std::int64_t x_stride = strides.input;
  for (int layer = 0; layer < mlp.num_layers(); ++layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const bool head = layer + 1 == mlp.num_layers();
    Scalar* y = head ? output : activations + mlp.activation_offset(layer, batch);
    const std::int64_t y_stride = head ? strides.output : strides.activations;
    gemm_strided_batched<Scalar>(stream, Transpose::No, Transpose::Yes, batch, out, in, Scalar(1), x, in, x_stride,
                                 params + mlp.weight_offset(layer), in, strides.params, Scalar(0), y, out, y_stride,
                                 agents, params + mlp.bias_offset(layer), strides.params);
    if (!head) activate(stream, mlp.activation(), y, agents, batch, out, y_stride);
    x = y;
    x_stride = y_stride;
  }
}

template <class Scalar>
void mlp_backward_batched(const Stream& stream, const Mlp& mlp, std::int64_t agents, const MlpAgentStrides& strides,
                          const Scalar* params, const Scalar* input, std::int64_t batch, const Scalar* activations,
                          const Scalar* d_output, const Scalar* ones, Scalar* grads, Scalar* scratch) {
  const std::int64_t half = mlp.scratch_size(batch) / 2;
  const Scalar* d_y = d_output;  // dLoss/d(this layer's output, before the next layer)
  std::int64_t d_y_stride = strides.d_output;
  for (int layer = mlp.num_layers() - 1; layer >= 0; --layer) {
    const std::int64_t in = mlp.layer_in(layer), out = mlp.layer_out(layer);
    const Scalar* x = layer == 0 ? input : activations + mlp.activation_offset(layer - 1, batch);
    const std::int64_t x_stride = layer == 0 ? strides.input : strides.activations;
    // dW[out][in] = d_y^T x;  db[out] = ones^T d_y (one `ones` for every agent)
    gemm_strided_batched<Scalar>(stream, Transpose::Yes, Transpose::No, out, in, batch, Scalar(1), d_y, out, d_y_stride,
                                 x, in, x_stride, Scalar(0), grads + mlp.weight_offset(layer), in, strides.grads,
                                 agents);
    gemm_strided_batched<Scalar>(stream, Transpose::No, Transpose::No, 1, out, batch, Scalar(1), ones, batch, 0, d_y,
                                 out, d_y_stride, Scalar(0), grads + mlp.bias_offset(layer), out, strides.grads,
                                 agents);
    if (layer == 0) break;
    // d_x[batch][in] = d_y W, then through the previous layer's activation.
    Scalar* d_x = scratch + (layer % 2) * half;
    gemm_strided_batched<Scalar>(stream, Transpose::No, Transpose::No, batch, in, out, Scalar(1), d_y, out, d_y_stride,
                                 params + mlp.weight_offset(layer), in, strides.params, Scalar(0), d_x, in,
                                 strides.scratch, agents);
    through_activation(stream, mlp.activation(), d_x, x, agents, batch, in, strides.scratch, strides.activations);
    d_y = d_x;
    d_y_stride = strides.scratch;
  }
}

template <class Scalar>
void mlp_forward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                 Scalar* activations, Scalar* output, const Bf16Operands* bf16, std::uint64_t params_version) {
  if (stream.device().is_cpu() && mlp.fused_on_cpu() && fused_mlp_fits(mlp)) {
    if constexpr (std::is_same_v<Scalar, float>)
      if (mlp.precision() == Precision::Bf16)
        return fused_mlp_bf16_forward(mlp, params, input, batch, activations, output, Bf16Kernel::Native,
                                      params_version);
    fused_mlp_forward(mlp, params, input, batch, activations, output, params_version);
    return;
  }
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda() && mlp.fused_on_cuda() && fused_mlp_cuda_forward_fits(mlp, stream.device()))
      return fused_mlp_cuda_forward(stream, mlp, params, input, batch, activations, output);
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda() && mlp.precision() == Precision::Bf16) {
      SURGE_CHECK(bf16 && bf16->weights, "a bf16 network on CUDA without its bf16 workspace");
      return bf16_forward(stream, mlp, params, input, batch, activations, output, *bf16);
    }
  mlp_forward_batched(stream, mlp, 1, MlpAgentStrides{}, params, input, batch, activations, output);
}

template <class Scalar>
void mlp_backward(const Stream& stream, const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                  const Scalar* activations, const Scalar* d_output, const Scalar* ones, Scalar* grads, Scalar* scratch,
                  const Bf16Operands* bf16, std::uint64_t params_version) {
  if (stream.device().is_cpu() && mlp.fused_on_cpu() && fused_mlp_fits(mlp)) {
    if constexpr (std::is_same_v<Scalar, float>)
      if (mlp.precision() == Precision::Bf16)
        return fused_mlp_bf16_backward(mlp, params, input, batch, activations, d_output, grads, Bf16Kernel::Native,
                                       params_version);
    fused_mlp_backward(mlp, params, input, batch, activations, d_output, grads, params_version);
    return;
  }
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda() && mlp.fused_on_cuda() &&
        fused_mlp_cuda_backward_fits(mlp, stream.device(), batch, mlp.scratch_size(batch)))
      return fused_mlp_cuda_backward(stream, mlp, params, input, batch, activations, d_output, grads, scratch,
                                     mlp.scratch_size(batch));
  if constexpr (std::is_same_v<Scalar, float>)
    if (stream.device().is_cuda() && mlp.precision() == Precision::Bf16) {
      SURGE_CHECK(bf16 && bf16->weights, "a bf16 network on CUDA without its bf16 workspace");
      return bf16_backward(stream, mlp, input, batch, activations, d_output, ones, grads, scratch, *bf16);
    }
  mlp_backward_batched(stream, mlp, 1, MlpAgentStrides{}, params, input, batch, activations, d_output, ones, grads,
                       scratch);
}

#define SURGE_MLP_INSTANTIATE(Scalar)                                                                                  \
  template void fill<Scalar>(const Stream&, Scalar*, std::int64_t, Scalar);                                            \
  template void mlp_forward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t, Scalar*,    \
                                    Scalar*, const Bf16Operands*, std::uint64_t);                                      \
  template void mlp_backward<Scalar>(const Stream&, const Mlp&, const Scalar*, const Scalar*, std::int64_t,            \
                                     const Scalar*, const Scalar*, const Scalar*, Scalar*, Scalar*,                    \
                                     const Bf16Operands*, std::uint64_t);                                              \
  template void mlp_forward_batched<Scalar>(const Stream&, const Mlp&, std::int64_t, const MlpAgentStrides&,           \
                                            const Scalar*, const Scalar*, std::int64_t, Scalar*, Scalar*);             \
  template void mlp_backward_batched<Scalar>(const Stream&, const Mlp&, std::int64_t, const MlpAgentStrides&,          \
                                             const Scalar*, const Scalar*, std::int64_t, const Scalar*, const Scalar*, \
                                             const Scalar*, Scalar*, Scalar*);
SURGE_MLP_INSTANTIATE(float)
SURGE_MLP_INSTANTIATE(double)
#undef SURGE_MLP_INSTANTIATE

template void fill<std::int32_t>(const Stream&, std::int32_t*, std::int64_t, std::int32_t);
template void fill<std::uint8_t>(const Stream&, std::uint8_t*, std::int64_t, std::uint8_t);

}  // namespace surge::rl
