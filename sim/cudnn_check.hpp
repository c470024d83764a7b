#pragma once
// The cuDNN error check, beside SURGE_CUDA_CHECK and in the same style. Include only from translation
// units compiled by nvcc that link cuDNN.
#include <cudnn.h>

#include "sim/error.hpp"

namespace surge::detail {
inline const char* cudnn_status_name(cudnnStatus_t) { return "cuDNN error"; }
}  // namespace surge::detail

// Throws surge::Error with file, line, the expression and cuDNN's own words.
#define SURGE_CUDNN_CHECK(expr)                                                                                   \
  SURGE_DETAIL_CHECK_STATUS(expr, #expr, cudnnStatus_t, CUDNN_STATUS_SUCCESS, ::surge::detail::cudnn_status_name, \
                            cudnnGetErrorString)
