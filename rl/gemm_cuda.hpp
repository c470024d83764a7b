#pragma once
// The cuBLASLt half of the GEMM launcher (gemm_cublaslt.cu), compiled only when CUDA is on. Same
// row-major contract as rl::gemm.
#include <cstdint>

#include "rl/gemm.hpp"

namespace surge::rl::detail {

// The agents of rl::gemm_strided_batched: agent i's operands start i * stride elements after agent 0's.
// One agent (strides ignored) is rl::gemm.
struct GemmBatch {
  std::int64_t count = 1, a = 0, b = 0, c = 0, bias = 0;
};

// rl::gemm, and rl::gemm_strided_batched as one cuBLASLt matmul for every agent (a strided batch).
template <class Scalar>
void gemm_cublaslt(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                   std::int64_t k, Scalar alpha, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb,
                   Scalar beta, Scalar* c, std::int64_t ldc, const Scalar* bias, const GemmBatch& batch = {});

// cuBLASLt matmuls enqueued so far (rl::cuda_gemm_calls).
std::uint64_t cublaslt_matmul_calls();

// C (fp32) = op(A) op(B) (+ bias) with bf16 operands (their raw bits), the products summed in fp32.
void gemm_cublaslt_bf16(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                        std::int64_t k, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
                        std::int64_t ldb, float* c, std::int64_t ldc, const float* bias, const GemmBatch& batch = {});

// Creates the cuBLASLt handle and workspace of a device, once (rl::prepare_gemm).
void prepare_cublaslt(int device);

void set_cublaslt_tf32(bool allowed);

int cublaslt_compute_capability(int device);

}  // namespace surge::rl::detail
