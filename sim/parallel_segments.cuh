#pragma once
// parallel_reduce_segments: K independent reductions of n elements each in one pass, each segment summed in
// exactly the order parallel_reduce (sim/parallel.cuh) uses for n elements on the same backend, so a
// batched reduction gives every segment the bits of its own parallel_reduce. Include only from .cu files.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/parallel.cuh"

namespace surge {

// ============================== kernels ==============================
#if defined(__CUDACC__)
namespace detail {

// Block (x, segment = y) folds segment's grid-stride slice as reduce_partials_kernel folds its slice (the
// same stride, blockDim.x * gridDim.x, the same tree in shared memory) into partials[segment][x][kWidth].
template <int kWidth, class F>
__global__ void reduce_segment_partials_kernel(std::int64_t n, F f, double* partials) {
  __shared__ double tree[kWidth][kReduceThreads];
  const std::int64_t segment = blockIdx.y;
  const unsigned lane = threadIdx.x;
  double sums[kWidth] = {};
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + lane;
  for (std::int64_t i = first; i < n; i += static_cast<std::int64_t>(blockDim.x) * gridDim.x) f(segment, i, sums);
  for (int w = 0; w < kWidth; ++w) tree[w][lane] = sums[w];
  // The halving tree of reduce_partials_kernel: lane t adds lane t + half, half = 128, 64, ..., 1.
  for (unsigned half = kReduceThreads / 2; half > 0; half /= 2) {
    __syncthreads();
    if (lane < half)
      for (int w = 0; w < kWidth; ++w) tree[w][lane] += tree[w][lane + half];
  }
  if (lane == 0)  // lane 0 wrote the last level itself
    for (int w = 0; w < kWidth; ++w) partials[(segment * gridDim.x + blockIdx.x) * kWidth + w] = tree[w][0];
}

// One thread per segment folds its blocks' partials in block order, as reduce_final_kernel does.
template <int kWidth>
__global__ void reduce_segment_final_kernel(std::int64_t segments, int blocks, const double* partials, double* out,
                                            std::int64_t out_stride) {
  const std::int64_t segment = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (segment >= segments) return;
  const double* const own = partials + segment * blocks * kWidth;
  for (int w = 0; w < kWidth; ++w) {
    double total = 0.0;
    for (int b = 0; b < blocks; ++b) total += own[b * kWidth + w];
    out[segment * out_stride + w] = total;
  }
}

}  // namespace detail
#endif

// ============================== launchers ==============================

// The CUDA grid's y dimension holds the segment: at most this many segments per launch.
inline constexpr std::int64_t kMaxReduceSegments = 65535;

// The scratch a parallel_reduce_segments of `segments` segments of width `width` needs on `device`, in doubles.
inline std::int64_t reduce_segments_scratch_size(Device device, std::int64_t segments, int width) {
  return segments * reduce_scratch_size(device, width);
}

// For each segment s in [0, segments): f(s, i, double acc[kWidth]) adds element i of segment s (i in [0, n))
// into acc, and the kWidth totals go to out[s * out_stride + w] (on the stream's device; not waited for).
// Segment s gets the bits parallel_reduce<kWidth>(stream, n, f(s, .)) gives: on the CPU the same
// kCpuReduceChunks chunks summed in index order and folded in chunk order, on CUDA the same blocks, stride
// and tree. CUDA: two launches for all segments. `scratch` holds reduce_segments_scratch_size doubles.
template <int kWidth, class F>
void parallel_reduce_segments(const Stream& stream, std::int64_t segments, std::int64_t n, F f, double* scratch,
                              double* out, std::int64_t out_stride = kWidth) {
  if (segments <= 0) return;
  SURGE_CHECK(segments <= kMaxReduceSegments, "parallel_reduce_segments: more segments than one launch holds");
  if (stream.device().is_cpu()) {
    constexpr std::int64_t kChunks = kCpuReduceChunks;
    std::vector<double> partial(static_cast<std::size_t>(segments * kChunks * kWidth), 0.0);  // [segment][chunk][w]
    double* const partials = partial.data();
    const auto fold_chunk = [&](std::int64_t item) {
      const std::int64_t segment = item / kChunks, chunk = item % kChunks;
      const std::int64_t begin = n * chunk / kChunks, end = n * (chunk + 1) / kChunks;
      double* const acc = partials + item * kWidth;
      for (std::int64_t i = begin; i < end; ++i) f(segment, i, acc);
    };
    const std::int64_t items = segments * kChunks;
    if (cpu_order() != CpuOrder::kSequential) {
      const std::vector<std::int64_t> order = cpu_visit_order(items);
#pragma omp parallel for schedule(dynamic, 1)
      for (std::int64_t k = 0; k < items; ++k) fold_chunk(order[k]);
    } else if (!cpu_loop_forks(segments * n >= 4096)) {
      for (std::int64_t item = 0; item < items; ++item) fold_chunk(item);
    } else {
#pragma omp parallel for schedule(static)
      for (std::int64_t item = 0; item < items; ++item) fold_chunk(item);
    }
    for (std::int64_t segment = 0; segment < segments; ++segment)
      for (int w = 0; w < kWidth; ++w) {
        double sum = 0.0;
        for (std::int64_t chunk = 0; chunk < kChunks; ++chunk)
          sum += partials[(segment * kChunks + chunk) * kWidth + w];
        out[segment * out_stride + w] = sum;
      }
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(stream.device());
  const int blocks = cuda_multiprocessor_count(stream.device().index) * 4;  // parallel_reduce's grid
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(segments));
  detail::reduce_segment_partials_kernel<kWidth><<<grid, detail::kReduceThreads, 0, cuda_stream>>>(n, f, scratch);
  SURGE_CUDA_CHECK_LAUNCH();
  constexpr int kFinalThreads = 128;
  const auto final_blocks = static_cast<unsigned>((segments + kFinalThreads - 1) / kFinalThreads);
  detail::reduce_segment_final_kernel<kWidth>
      <<<final_blocks, kFinalThreads, 0, cuda_stream>>>(segments, blocks, scratch, out, out_stride);
  SURGE_CUDA_CHECK_LAUNCH();
#else
  (void)n;
  (void)f;
  (void)scratch;
  (void)out;
  (void)out_stride;
  throw Error("parallel_reduce_segments on " + stream.device().str() + ": this build has no CUDA support");
#endif
}

}  // namespace surge
