#pragma once
// The CUDA error checks. Include only from translation units compiled by nvcc.
#include <cuda_runtime.h>

#include <cstdio>

#include "sim/error.hpp"

// Throws surge::Error with file, line, the expression and CUDA's own words.
#define SURGE_CUDA_CHECK(expr) \
  SURGE_DETAIL_CHECK_STATUS(expr, #expr, cudaError_t, cudaSuccess, cudaGetErrorName, cudaGetErrorString)

// For destructors: reports and carries on.
#define SURGE_CUDA_CHECK_NOTHROW(expr)                                                 \
  do {                                                                                 \
    cudaError_t surge_status_ = (expr);                                                \
    if (surge_status_ != cudaSuccess)                                                  \
      std::fprintf(stderr, "surge: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(surge_status_));                                 \
  } while (0)

namespace surge::detail {
// True while this thread records a CUDA graph (rl::IterationGraph::capture): launches are only
// recorded then, and a device synchronisation would invalidate the capture.
inline thread_local bool capturing_graph = false;
}  // namespace surge::detail

// Every kernel launch is followed by this. With SURGE_SYNC_LAUNCHES defined (the CMake option
// SURGE_DEBUG_SYNC) it also waits for the kernel, so a fault is reported at the launch that caused it;
// not while a graph is being captured, where nothing runs (the graph's replays then fault at the replay).
#if defined(SURGE_SYNC_LAUNCHES)
#define SURGE_CUDA_CHECK_LAUNCH()                                                     \
  do {                                                                                \
    SURGE_CUDA_CHECK(cudaGetLastError());                                             \
    if (!::surge::detail::capturing_graph) SURGE_CUDA_CHECK(cudaDeviceSynchronize()); \
  } while (0)
#else
#define SURGE_CUDA_CHECK_LAUNCH() SURGE_CUDA_CHECK(cudaGetLastError())
#endif
