#pragma once
// parallel_for and parallel_reduce: the one way per-element logic runs. Include only from .cu files
// (compiled by nvcc when CUDA is on, or as plain C++ otherwise), so that each template is instantiated
// in exactly one kind of translation unit.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/device_guard.hpp"
#include "sim/error.hpp"
#include "sim/hd.hpp"
#include "sim/reduce_order.hpp"
#include "sim/runtime_internal.hpp"
#include "sim/stream.hpp"

#if defined(__CUDACC__)
#include "sim/cuda_check.hpp"
#endif

namespace surge {

// ============================== kernels ==============================
#if defined(__CUDACC__)
namespace detail {
template <class F>
__global__ void grid_stride_kernel(std::int64_t n, F f) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

constexpr int kReduceThreads = 256;

// Each block folds a grid-stride slice into kWidth doubles; partials land in a [grid][kWidth] table
// that a second, single-block pass folds in a fixed order, so results do not depend on timing.
template <int kWidth, class F>
__global__ void reduce_partials_kernel(std::int64_t n, F f, double* partials) {
  __shared__ double shared[kWidth][kReduceThreads];
  double local[kWidth];
  for (int k = 0; k < kWidth; ++k) local[k] = 0.0;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    f(i, local);
  for (int k = 0; k < kWidth; ++k) shared[k][threadIdx.x] = local[k];
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half)
      for (int k = 0; k < kWidth; ++k) shared[k][threadIdx.x] += shared[k][threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int k = 0; k < kWidth; ++k) partials[blockIdx.x * kWidth + k] = shared[k][0];
}

template <int kWidth>
__global__ void reduce_final_kernel(int num_partials, const double* partials, double* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    for (int k = 0; k < kWidth; ++k) {
      double sum = 0.0;
      for (int p = 0; p < num_partials; ++p) sum += partials[p * kWidth + k];
      out[k] = sum;
    }
}
}  // namespace detail
#endif

// ============================== launchers ==============================

// Runs f(i) for every i in [0, n) on the stream's device: an OpenMP loop on the CPU, a grid-stride
// kernel on CUDA. f must be a SURGE_HD callable that captures only views and plain values.
// `work_per_item` tells the CPU backend roughly how many elementary operations one f(i) does, so that
// small loops stay on the calling thread (an OpenMP fork costs microseconds) and few heavy items still
// spread over the cores.
template <class F>
void parallel_for(const Stream& stream, std::int64_t n, F f, std::int64_t work_per_item = 1) {
  if (n <= 0) return;
  if (stream.device().is_cpu()) {
    if (cpu_order() != CpuOrder::kSequential) {  // the order-free test mode: every loop on all threads
      const std::vector<std::int64_t> order = cpu_visit_order(n);
      const std::int64_t* const index = order.data();
#pragma omp parallel for schedule(dynamic, 16)
      for (std::int64_t k = 0; k < n; ++k) f(index[k]);
      return;
    }
    if (!cpu_loop_forks(n > 1 && n * work_per_item >= 4096)) {
      for (std::int64_t i = 0; i < n; ++i) f(i);
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(stream.device());
  constexpr int kThreads = 256;
  const std::int64_t max_blocks = static_cast<std::int64_t>(cuda_multiprocessor_count(stream.device().index)) * 16;
  const std::int64_t blocks = std::min<std::int64_t>((n + kThreads - 1) / kThreads, max_blocks);
  detail::grid_stride_kernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                               static_cast<cudaStream_t>(stream.native_handle())>>>(n, f);
  SURGE_CUDA_CHECK_LAUNCH();
#else
  throw Error("parallel_for on " + stream.device().str() + ": this build has no CUDA support");
#endif
}

// The scratch a parallel_reduce of width kWidth needs on `device`, in doubles.
inline std::int64_t reduce_scratch_size(Device device, int width) {
  if (device.is_cpu()) return 0;
  return static_cast<std::int64_t>(cuda_multiprocessor_count(device.index)) * 4 * width;
}

// Sums kWidth values per element: f(i, double acc[kWidth]) adds element i's contributions into acc.
// Writes the kWidth totals to `out` (on the stream's device) without waiting for them. The order of
// additions is fixed for a given device and n, so the same input always gives the same bits. The CPU's
// order-free test mode runs the fixed chunks in reversed or shuffled order on all threads, but keeps the
// additions within a chunk and the final fold in their order: the same bits, as on the GPU for any timing.
template <int kWidth, class F>
void parallel_reduce(const Stream& stream, std::int64_t n, F f, double* scratch, double* out) {
  if (stream.device().is_cpu()) {
    constexpr std::int64_t kChunks = kCpuReduceChunks;
    double partial[kChunks][kWidth] = {};
    const auto fold_chunk = [&](std::int64_t chunk) {
      const std::int64_t begin = n * chunk / kChunks, end = n * (chunk + 1) / kChunks;
      for (std::int64_t i = begin; i < end; ++i) f(i, partial[chunk]);
    };
    if (cpu_order() != CpuOrder::kSequential) {
      const std::vector<std::int64_t> order = cpu_visit_order(kChunks);
#pragma omp parallel for schedule(dynamic, 1)
      for (std::int64_t k = 0; k < kChunks; ++k) fold_chunk(order[k]);
    } else if (!cpu_loop_forks(n >= 4096)) {
      for (std::int64_t chunk = 0; chunk < kChunks; ++chunk) fold_chunk(chunk);
    } else {
#pragma omp parallel for schedule(static)
      for (std::int64_t chunk = 0; chunk < kChunks; ++chunk) fold_chunk(chunk);
    }
    for (int k = 0; k < kWidth; ++k) {
      double sum = 0.0;
      for (std::int64_t chunk = 0; chunk < kChunks; ++chunk) sum += partial[chunk][k];
      out[k] = sum;
    }
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(stream.device());
  const int blocks = cuda_multiprocessor_count(stream.device().index) * 4;
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  detail::reduce_partials_kernel<kWidth><<<blocks, detail::kReduceThreads, 0, cuda_stream>>>(n, f, scratch);
  SURGE_CUDA_CHECK_LAUNCH();
  detail::reduce_final_kernel<kWidth><<<1, 32, 0, cuda_stream>>>(blocks, scratch, out);
  SURGE_CUDA_CHECK_LAUNCH();
#else
  (void)scratch;
  (void)out;
  throw Error("parallel_reduce on " + stream.device().str() + ": this build has no CUDA support");
#endif
}

}  // namespace surge
