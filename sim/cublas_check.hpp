#pragma once
// The cuBLASLt error check, beside SURGE_CUDA_CHECK and in the same style. Include only from translation
// units compiled by nvcc that link cuBLASLt.
#include <cublasLt.h>

#include <string>

#include "sim/error.hpp"

namespace surge::detail {
[[noreturn]] inline void throw_cublas(const char* file, int line, const char* expression, cublasStatus_t status) {
  throw_error(file, line, expression, std::string(cublasLtGetStatusName(status)) + ": " + cublasLtGetStatusString(status));
}
}  // namespace surge::detail

// Throws surge::Error with file, line, the expression and cuBLAS's own words.
#define SURGE_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                      \
    cublasStatus_t surge_status_ = (expr);                                                  \
    if (surge_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::surge::detail::throw_cublas(__FILE__, __LINE__, #expr, surge_status_);              \
  } while (0)
