// CUDA's fully fused small-MLP passes (rl/fused_mlp_cuda.hpp). CUDA only: the CPU has its own fused path
// (rl/fused_mlp.hpp), and the plan these kernels follow (rl/fused_mlp_cuda_plan.hpp) is tested there.
//
// A block loads every layer's weights into shared memory once, then takes row tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... through the whole stack. Products: fp32 on FMAs, each thread a column and
// kCudaFusedMlpRowsPerThread rows, summing in index order; tf32 and bf16 on tensor cores through WMMA, one
// warp per 16 x 16 output tile, fp32 accumulators. The backward pass sums each block's weight and bias
// gradients into the block's own slice of the scratch (no atomics), and add_block_sums adds the slices in
// block order.
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <array>

#include "rl/fused_mlp_cuda.hpp"
#include "rl/fused_mlp_cuda_plan.hpp"
#include "rl/mlp.hpp"
#include "rl/scalar_math.hpp"
#include "sim/cuda_check.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

using namespace nvcuda;

enum class Math : std::uint8_t { Fma, Tf32, Bf16 };

constexpr int kRows = kCudaFusedMlpTileRows;
constexpr int kThreads = kCudaFusedMlpThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerThread = kCudaFusedMlpRowsPerThread;

// ============================== kernels ==============================

template <Math M>
struct TensorCore;
template <>
struct TensorCore<Math::Tf32> {
  using Element = wmma::precision::tf32;
  using Memory = float;
  static constexpr int k = 8;
};
template <>
struct TensorCore<Math::Bf16> {
  using Element = __nv_bfloat16;
  using Memory = __nv_bfloat16;
  static constexpr int k = 16;
};

template <Math M>
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, TensorCore<M>::k, float>;

// acc += A B over `depth` (a multiple of k): A 16 x depth, B depth x 16, each stepping `*_step` elements per
// k along the summed index (k for a row-major A or a column-major B, k times the leading dimension otherwise).
template <Math M, class LayoutA, class LayoutB>
__device__ void mma_sum(Accumulator<M>& acc, const typename TensorCore<M>::Memory* a, unsigned lda, std::int64_t a_step,
                        const typename TensorCore<M>::Memory* b, unsigned ldb, std::int64_t b_step, int depth) {
  using T = TensorCore<M>;
  wmma::fragment<wmma::matrix_a, 16, 16, T::k, typename T::Element, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, T::k, typename T::Element, LayoutB> fb;
  for (int p = 0; p < depth / T::k; ++p) {
    wmma::load_matrix_sync(fa, a + p * a_step, lda);
    wmma::load_matrix_sync(fb, b + p * b_step, ldb);
    if constexpr (M == Math::Tf32) {
      for (int t = 0; t < fa.num_elements; ++t) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
      for (int t = 0; t < fb.num_elements; ++t) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
    }
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

__device__ __forceinline__ float activated(Activation activation, float x) {
  return activation == Activation::Tanh ? fast_tanh(x) : fmaxf(x, 0.0f);
}
// The activation's derivative, expressed in its output.
__device__ __forceinline__ float slope(Activation activation, float y) {
  return activation == Activation::Tanh ? 1.0f - y * y : (y > 0.0f ? 1.0f : 0.0f);
}

// Every layer's weights (fp32 or bf16; W^T when `transposed`) and biases into shared memory, zero-padded.
template <Math M>
__device__ void load_weights(const FusedMlpCudaPlan& plan, const float* params, unsigned char* shared,
                             bool transposed) {
  for (int l = 0; l < plan.layers; ++l) {
    const int in = plan.in[l], out = plan.out[l], in_p = plan.in_p[l], out_p = plan.out_p[l];
    const float* w = params + plan.weight_offset[l];
    for (int j = threadIdx.x; j < out_p * in_p; j += kThreads) {
      const int o = j / in_p, i = j % in_p;
      const float value = o < out && i < in ? w[o * in + i] : 0.0f;
      const int at = transposed ? i * out_p + o : j;
      if constexpr (M == Math::Bf16)
        reinterpret_cast<__nv_bfloat16*>(shared + plan.weight_at[l])[at] = __float2bfloat16_rn(value);
      else
        reinterpret_cast<float*>(shared + plan.weight_at[l])[at] = value;
    }
    float* bias = reinterpret_cast<float*>(shared + plan.bias_at[l]);
    for (int o = threadIdx.x; o < out_p; o += kThreads) bias[o] = o < out ? params[plan.bias_offset[l] + o] : 0.0f;
  }
}

// A tile of `rows` rows of src [..][width] into tile [kRows][widest] (and its bf16 copy when `operand`),
// zeros past the rows and up to width_p.
__device__ void load_rows(const float* src, int rows, int width, int width_p, int ld, float* tile,
                          __nv_bfloat16* operand) {
  for (int j = threadIdx.x; j < kRows * width_p; j += kThreads) {
    const int r = j / width_p, c = j % width_p;
    const float value = r < rows && c < width ? src[r * width + c] : 0.0f;
    tile[r * ld + c] = value;
    if (operand) operand[r * ld + c] = __float2bfloat16_rn(value);
  }
}

// y [kRows][n_p] = a [kRows][depth] b [depth][n_p], b row-major in shared memory (fp32, or bf16 bits in
// bf16) with zero rows from depth to depth_p; a is fp32, or its bf16 copy a_bf16 in bf16.
template <Math M>
__device__ void tile_product(const float* a, const __nv_bfloat16* a_bf16, int ld, const unsigned char* b, int depth,
                             int depth_p, int n_p, float* y) {
  if constexpr (M == Math::Fma) {
    const float* matrix = reinterpret_cast<const float*>(b);
    for (int g = threadIdx.x; g < kRows / kRowsPerThread * n_p; g += kThreads) {
      const int c = g % n_p, r0 = g / n_p * kRowsPerThread;
      float acc[kRowsPerThread] = {};
      for (int p = 0; p < depth; ++p) {
        const float value = matrix[p * n_p + c];
        for (int r = 0; r < kRowsPerThread; ++r) acc[r] = fmaf(a[(r0 + r) * ld + p], value, acc[r]);
      }
      for (int r = 0; r < kRowsPerThread; ++r) y[(r0 + r) * ld + c] = acc[r];
    }
  } else {
    using Memory = typename TensorCore<M>::Memory;
    constexpr int k = TensorCore<M>::k;
    const Memory* left = nullptr;
    if constexpr (M == Math::Bf16)
      left = a_bf16;
    else
      left = a;
    const Memory* matrix = reinterpret_cast<const Memory*>(b);
    const int tiles_n = n_p / 16;
    for (int t = threadIdx.x / 32; t < kRows / 16 * tiles_n; t += kWarps) {
      const int m0 = t / tiles_n * 16, n0 = t % tiles_n * 16;
      Accumulator<M> acc;
      wmma::fill_fragment(acc, 0.0f);
      mma_sum<M, wmma::row_major, wmma::row_major>(acc, left + m0 * ld, ld, k, matrix + n0, n_p, std::int64_t{k} * n_p,
                                                   depth_p);
      wmma::store_matrix_sync(y + m0 * ld + n0, acc, ld, wmma::mem_row_major);
    }
  }
}

template <Math M>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(FusedMlpCudaPlan plan, const float* params, const float* input, std::int64_t batch,
                   float* activations, float* output) {
  extern __shared__ __align__(128) unsigned char shared[];
  load_weights<M>(plan, params, shared, true);
  const int ld = plan.widest, last = plan.layers - 1;
  __nv_bfloat16* operand =
      M == Math::Bf16 ? reinterpret_cast<__nv_bfloat16*>(shared + plan.forward_operand_at) : nullptr;
  for (std::int64_t tile = blockIdx.x; tile * kRows < batch; tile += gridDim.x) {
    const std::int64_t row0 = tile * kRows;
    const int rows = batch - row0 < kRows ? static_cast<int>(batch - row0) : kRows;
    float* x = reinterpret_cast<float*>(shared + plan.tile_at[0]);
    float* y = reinterpret_cast<float*>(shared + plan.tile_at[1]);
    __syncthreads();  // the previous tile's last reads of the tiles are done (and the weights are loaded)
    load_rows(input + row0 * plan.in[0], rows, plan.in[0], plan.in_p[0], ld, x, operand);
    for (int l = 0; l <= last; ++l) {
      __syncthreads();
      // y = x W^T: W^T [in_p][out_p] is row-major in shared memory.
      tile_product<M>(x, operand, ld, shared + plan.weight_at[l], plan.in[l], plan.in_p[l], plan.out_p[l], y);
      __syncthreads();
      const int out = plan.out[l], out_p = plan.out_p[l];
      const float* bias = reinterpret_cast<const float*>(shared + plan.bias_at[l]);
      float* target = (l == last ? output : activations + plan.activation_offset[l]) + row0 * out;
      for (int j = threadIdx.x; j < kRows * out_p; j += kThreads) {
        const int r = j / out_p, c = j % out_p;
        float value = y[r * ld + c] + bias[c];
        if (l != last) value = activated(plan.activation, value);
        y[r * ld + c] = value;
        if (operand && l != last) operand[r * ld + c] = __float2bfloat16_rn(value);
        if (r < rows && c < out) target[r * out + c] = value;
      }
      float* const done = x;  // y becomes the next layer's input
      x = y;
      y = done;
    }
  }
}

// The block's gradient sums of layer l: dW [out_p][in_p] += dy^T x and db += the columns of dy.
template <Math M>
__device__ void weight_sums(const FusedMlpCudaPlan& plan, int l, const float* dy, const __nv_bfloat16* dy_bf16,
                            const float* x, const __nv_bfloat16* x_bf16, float* sums) {
  const int ld = plan.widest, in_p = plan.in_p[l], out_p = plan.out_p[l];
  float* dw = sums + plan.partial_weight[l];
  if constexpr (M == Math::Fma) {
    for (int g = threadIdx.x; g < out_p / kRowsPerThread * in_p; g += kThreads) {
      const int i = g % in_p, o0 = g / in_p * kRowsPerThread;
      float acc[kRowsPerThread] = {};
      for (int r = 0; r < kRows; ++r) {
        const float xv = x[r * ld + i];
        for (int o = 0; o < kRowsPerThread; ++o) acc[o] = fmaf(dy[r * ld + o0 + o], xv, acc[o]);
      }
      for (int o = 0; o < kRowsPerThread; ++o) dw[(o0 + o) * in_p + i] += acc[o];
    }
  } else {
    using Memory = typename TensorCore<M>::Memory;
    constexpr int k = TensorCore<M>::k;
    const Memory *a = nullptr, *b = nullptr;
    if constexpr (M == Math::Bf16) {
      a = dy_bf16;
      b = x_bf16;
    } else {
      a = dy;
      b = x;
    }
    const int tiles_n = in_p / 16;
    for (int t = threadIdx.x / 32; t < out_p / 16 * tiles_n; t += kWarps) {
      const int m0 = t / tiles_n * 16, n0 = t % tiles_n * 16;
      Accumulator<M> acc;
      wmma::load_matrix_sync(acc, dw + m0 * in_p + n0, in_p, wmma::mem_row_major);
      // A = dy^T: dy [rows][ld] read column-major; B = x [rows][ld] row-major; summed over the tile's rows.
      mma_sum<M, wmma::col_major, wmma::row_major>(acc, a + m0, ld, std::int64_t{k} * ld, b + n0, ld,
                                                   std::int64_t{k} * ld, kRows);
      wmma::store_matrix_sync(dw + m0 * in_p + n0, acc, in_p, wmma::mem_row_major);
    }
  }
  for (int o = threadIdx.x; o < out_p; o += kThreads) {
    float sum = 0.0f;
    for (int r = 0; r < kRows; ++r) sum += dy[r * ld + o];
    sums[plan.partial_bias[l] + o] += sum;
  }
}

template <Math M>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(FusedMlpCudaPlan plan, const float* params, const float* input, std::int64_t batch,
                    const float* activations, const float* d_output, float* partials) {
  extern __shared__ __align__(128) unsigned char shared[];
  load_weights<M>(plan, params, shared, false);
  float* sums = partials + blockIdx.x * plan.partial_floats;
  for (std::int64_t j = threadIdx.x; j < plan.partial_floats; j += kThreads) sums[j] = 0.0f;
  const int ld = plan.widest, last = plan.layers - 1;
  __nv_bfloat16 *x_bf16 = nullptr, *dy_bf16 = nullptr;
  if constexpr (M == Math::Bf16) {
    x_bf16 = reinterpret_cast<__nv_bfloat16*>(shared + plan.backward_operand_at[0]);
    dy_bf16 = reinterpret_cast<__nv_bfloat16*>(shared + plan.backward_operand_at[1]);
  }
  float* x = reinterpret_cast<float*>(shared + plan.tile_at[0]);
  for (std::int64_t tile = blockIdx.x; tile * kRows < batch; tile += gridDim.x) {
    const std::int64_t row0 = tile * kRows;
    const int rows = batch - row0 < kRows ? static_cast<int>(batch - row0) : kRows;
    float* dy = reinterpret_cast<float*>(shared + plan.tile_at[1]);
    float* dx = reinterpret_cast<float*>(shared + plan.tile_at[2]);
    __syncthreads();  // the previous tile's last reads are done, the sums zeroed and the weights loaded
    load_rows(d_output + row0 * plan.out[last], rows, plan.out[last], plan.out_p[last], ld, dy, dy_bf16);
    for (int l = last; l >= 0; --l) {
      const float* source = l == 0 ? input : activations + plan.activation_offset[l - 1];
      load_rows(source + row0 * plan.in[l], rows, plan.in[l], plan.in_p[l], ld, x, x_bf16);
      __syncthreads();
      weight_sums<M>(plan, l, dy, dy_bf16, x, x_bf16, sums);
      if (l > 0)  // dx = dy W, W [out_p][in_p]
        tile_product<M>(dy, dy_bf16, ld, shared + plan.weight_at[l], plan.out[l], plan.out_p[l], plan.in_p[l], dx);
      __syncthreads();
      if (l == 0) break;
      // Through the previous layer's activation, whose output is this layer's input x.
      for (int j = threadIdx.x; j < kRows * plan.in_p[l]; j += kThreads) {
        const int r = j / plan.in_p[l], c = j % plan.in_p[l];
        const float value = dx[r * ld + c] * slope(plan.activation, x[r * ld + c]);
        dx[r * ld + c] = value;
        if (dy_bf16) dy_bf16[r * ld + c] = __float2bfloat16_rn(value);
      }
      __syncthreads();
      float* const used = dy;  // dx becomes the next layer's output gradient
      dy = dx;
      dx = used;
    }
  }
}

// grads at the table's offsets = the blocks' sums, added in block order.
__global__ void add_block_sums(FusedMlpCudaPlan plan, const float* partials, int blocks, float* grads) {
  const std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  const std::int64_t target = j < plan.partial_floats ? fused_mlp_cuda_sum_target(plan, j) : -1;
  if (target < 0) return;
  float sum = partials[j];
  for (int b = 1; b < blocks; ++b) sum += partials[b * plan.partial_floats + j];
  grads[target] = sum;
}

// ============================== launchers ==============================

struct DeviceLimits {
  int multiprocessors = 0;
  int shared_optin = 0;  // bytes of shared memory one block may have
};

constexpr int kDevices = 64;

const DeviceLimits& limits_of(Device device) {
  SURGE_CHECK(device.is_cuda() && device.index >= 0 && device.index < kDevices, "the fused MLP needs a CUDA device");
  static std::array<DeviceLimits, kDevices> known{};
  DeviceLimits& limits = known[static_cast<std::size_t>(device.index)];
  if (limits.multiprocessors == 0) {
    SURGE_CUDA_CHECK(
        cudaDeviceGetAttribute(&limits.shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.index));
    SURGE_CUDA_CHECK(cudaDeviceGetAttribute(&limits.multiprocessors, cudaDevAttrMultiProcessorCount, device.index));
  }
  return limits;
}

Math math_of(Precision precision) {
  return precision == Precision::Bf16 ? Math::Bf16 : precision == Precision::Tf32 ? Math::Tf32 : Math::Fma;
}

// Blocks of `Kernel` with `bytes` of shared memory resident on the whole device at once. The first call per
// kernel and device lets the kernel have the device's largest block of shared memory; a pass runs eagerly
// before a CUDA graph captures it, so that call never happens inside a capture.
template <auto Kernel>
std::int64_t resident_blocks(std::int64_t bytes, Device device) {
  const DeviceLimits& limits = limits_of(device);
  static std::array<bool, kDevices> opened{};
  if (!opened[static_cast<std::size_t>(device.index)]) {
    SURGE_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limits.shared_optin));
    opened[static_cast<std::size_t>(device.index)] = true;
  }
  int per_multiprocessor = 0;
  SURGE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, Kernel, kThreads,
                                                                 static_cast<std::size_t>(bytes)));
  return std::int64_t{std::max(1, per_multiprocessor)} * limits.multiprocessors;
}

template <Math M>
void launch_forward(const Stream& stream, const FusedMlpCudaPlan& plan, const float* params, const float* input,
                    std::int64_t batch, float* activations, float* output) {
  const std::int64_t blocks =
      fused_mlp_cuda_forward_blocks(batch, resident_blocks<forward_kernel<M>>(plan.forward_bytes, stream.device()));
  forward_kernel<M>
      <<<static_cast<unsigned>(blocks), kThreads, static_cast<std::size_t>(plan.forward_bytes),
         static_cast<cudaStream_t>(stream.native_handle())>>>(plan, params, input, batch, activations, output);
  SURGE_CUDA_CHECK_LAUNCH();
}

template <Math M>
void launch_backward(const Stream& stream, const FusedMlpCudaPlan& plan, const float* params, const float* input,
                     std::int64_t batch, const float* activations, const float* d_output, float* grads, float* scratch,
                     std::int64_t scratch_floats) {
  const std::int64_t resident = resident_blocks<backward_kernel<M>>(plan.backward_bytes, stream.device());
  const std::int64_t blocks = fused_mlp_cuda_backward_blocks(plan, batch, resident, scratch_floats);
  SURGE_CHECK(blocks >= 1, "the fused MLP's backward pass without room for its sums");
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  backward_kernel<M>
      <<<static_cast<unsigned>(blocks), kThreads, static_cast<std::size_t>(plan.backward_bytes), cuda_stream>>>(
          plan, params, input, batch, activations, d_output, scratch);
  SURGE_CUDA_CHECK_LAUNCH();
  constexpr int kAddThreads = 256;
  add_block_sums<<<static_cast<unsigned>((plan.partial_floats + kAddThreads - 1) / kAddThreads), kAddThreads, 0,
                   cuda_stream>>>(plan, scratch, static_cast<int>(blocks), grads);
  SURGE_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool fused_mlp_cuda_forward_fits(const Mlp& mlp, Device device) {
  if (!device.is_cuda() || !fused_mlp_cuda_shape_fits(mlp)) return false;
  return fused_mlp_cuda_fits(fused_mlp_cuda_plan(mlp, 0), limits_of(device).shared_optin);
}

bool fused_mlp_cuda_backward_fits(const Mlp& mlp, Device device, std::int64_t batch, std::int64_t scratch_floats) {
  if (!fused_mlp_cuda_forward_fits(mlp, device)) return false;
  return batch >= 1 && scratch_floats >= fused_mlp_cuda_plan(mlp, batch).partial_floats;
}

void fused_mlp_cuda_forward(const Stream& stream, const Mlp& mlp, const float* params, const float* input,
                            std::int64_t batch, float* activations, float* output) {
  if (batch <= 0) return;
  const FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, batch);
  switch (math_of(plan.precision)) {
    case Math::Fma: return launch_forward<Math::Fma>(stream, plan, params, input, batch, activations, output);
    case Math::Tf32: return launch_forward<Math::Tf32>(stream, plan, params, input, batch, activations, output);
    case Math::Bf16: return launch_forward<Math::Bf16>(stream, plan, params, input, batch, activations, output);
  }
}

void fused_mlp_cuda_backward(const Stream& stream, const Mlp& mlp, const float* params, const float* input,
                             std::int64_t batch, const float* activations, const float* d_output, float* grads,
                             float* scratch, std::int64_t scratch_floats) {
  SURGE_CHECK(batch >= 1, "the fused MLP's backward pass over no rows");
  const FusedMlpCudaPlan plan = fused_mlp_cuda_plan(mlp, batch);
  switch (math_of(plan.precision)) {
    case Math::Fma:
      return launch_backward<Math::Fma>(stream, plan, params, input, batch, activations, d_output, grads, scratch,
                                        scratch_floats);
    case Math::Tf32:
      return launch_backward<Math::Tf32>(stream, plan, params, input, batch, activations, d_output, grads, scratch,
                                         scratch_floats);
    case Math::Bf16:
      return launch_backward<Math::Bf16>(stream, plan, params, input, batch, activations, d_output, grads, scratch,
                                         scratch_floats);
  }
}

}  // namespace surge::rl
