#pragma once
// The cuBLASLt error check, beside SURGE_CUDA_CHECK and in the same style. Include only from translation
// units compiled by nvcc that link cuBLASLt.
#include <cublasLt.h>

#include "sim/error.hpp"

// Throws surge::Error with file, line, the expression and cuBLAS's own words.
#define SURGE_CUBLAS_CHECK(expr)                                                                       \
  SURGE_DETAIL_CHECK_STATUS(expr, #expr, cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublasLtGetStatusName, \
                            cublasLtGetStatusString)
