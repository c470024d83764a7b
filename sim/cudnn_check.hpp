#pragma once
// The cuDNN error check, beside SURGE_CUDA_CHECK and in the same style. Include only from translation
// units compiled by nvcc that link cuDNN.
#include <cudnn.h>

#include <cstdio>

#include "sim/error.hpp"

namespace surge::detail {
inline const char* cudnn_status_name(cudnnStatus_t) { return "cuDNN error"; }
}  // namespace surge::detail

// Throws surge::Error with file, line, the expression and cuDNN's own words.
#define SURGE_CUDNN_CHECK(expr)                                                                                   \
  SURGE_DETAIL_CHECK_STATUS(expr, #expr, cudnnStatus_t, CUDNN_STATUS_SUCCESS, ::surge::detail::cudnn_status_name, \
                            cudnnGetErrorString)

// For destructors: reports and carries on.
#define SURGE_CUDNN_CHECK_NOTHROW(expr)                                                \
  do {                                                                                 \
    cudnnStatus_t surge_status_ = (expr);                                              \
    if (surge_status_ != CUDNN_STATUS_SUCCESS)                                         \
      std::fprintf(stderr, "surge: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, \
                   cudnnGetErrorString(surge_status_));                                \
  } while (0)
