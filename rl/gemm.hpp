#pragma once
// The one GEMM launcher of the learner, the same on every backend: CBLAS (OpenBLAS) on the CPU,
// cuBLASLt on CUDA with the bias add fused into the epilogue and the algorithm chosen by cuBLASLt's
// heuristic once per shape. Matrices are row-major, as every buffer in rl/ is.
#include <cstdint>
#include <string>

#include "sim/stream.hpp"

namespace surge::rl {

enum class Transpose : std::uint8_t { No, Yes };

// C[m][n] = alpha * op(A)[m][k] * op(B)[k][n] + beta * C (+ bias[n] added to every row when bias is not
// null). With k == 0 that is beta * C (+ bias) on both backends; beta == 0 ignores what C held. op(A) is A ([m][k],
// leading dimension lda) or A^T (A stored [k][m]); likewise op(B). Enqueued on `stream`; the pointers live on the
// stream's device. Scalar is float or double.
template <class Scalar>
void gemm(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          Scalar alpha, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c,
          std::int64_t ldc, const Scalar* bias = nullptr);

// K independent GEMMs of one shape in one call: agent i's A, B, C (and bias) start stride_a, stride_b,
// stride_c (stride_bias) elements after agent i-1's, each agent's product as `gemm` defines it. A stride
// of 0 shares an operand between the agents; agents' Cs must not overlap. On CUDA one cuBLASLt matmul
// (its strided batch) for all K: within float rounding of the K gemm calls, since cuBLASLt's heuristic
// sees the batch count and may choose another kernel. On the CPU exactly the K gemm calls (the same
// bits), spread over the cores when not already in a parallel region, with one CBLAS thread each.
template <class Scalar>
void gemm_strided_batched(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                          std::int64_t k, Scalar alpha, const Scalar* a, std::int64_t lda, std::int64_t stride_a,
                          const Scalar* b, std::int64_t ldb, std::int64_t stride_b, Scalar beta, Scalar* c,
                          std::int64_t ldc, std::int64_t stride_c, std::int64_t batch_count,
                          const Scalar* bias = nullptr, std::int64_t stride_bias = 0);

// cuBLASLt matmuls this process has enqueued on any GPU (0 in a build without CUDA), for tests that count
// how many a pass makes.
std::uint64_t cuda_gemm_calls();

// C[m][n] = op(A) op(B) (+ bias[n] on every row) with bf16 operands (their raw 16 bits, rl/bf16.hpp), the
// products summed in fp32, C fp32 (what it held is ignored). CUDA only (cuBLASLt); the CPU's bf16 runs in
// rl/fused_mlp_bf16.hpp, and asking it here is a bug (Error).
void gemm_bf16(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb,
               float* c, std::int64_t ldc, const float* bias = nullptr);

// gemm_bf16 for K agents at the strides gemm_strided_batched takes: one cuBLASLt matmul. CUDA only.
void gemm_bf16_strided_batched(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
                               std::int64_t n, std::int64_t k, const std::uint16_t* a, std::int64_t lda,
                               std::int64_t stride_a, const std::uint16_t* b, std::int64_t ldb, std::int64_t stride_b,
                               float* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch_count,
                               const float* bias = nullptr, std::int64_t stride_bias = 0);

// Sets up what GEMMs on `device` need: on CUDA the cuBLASLt handle and its workspace, which cannot be
// created inside a CUDA graph capture; nothing on the CPU. Every owner of a GEMM workspace (PpoGradient,
// the trainer, the evaluation) calls it when it is built; a GEMM captured on a device not prepared
// throws Error.
void prepare_gemm(Device device);

// Which library serves the CPU backend's GEMMs, in words ("OpenBLAS 0.3.21"), for reports.
std::string cpu_gemm_library();

// Threads the CPU backend uses from now on, for OpenMP loops and CBLAS alike (the calling thread's
// OpenMP setting, which is where Surge runs its work).
void set_cpu_threads(int threads);

// While alive, CBLAS runs each call on the calling thread alone, so that a loop over agents can fork over
// the cores itself. OpenBLAS's setting is the process's, so the previous count comes back afterwards
// (OpenBLAS built on OpenMP sets OpenMP's thread count with its own, which is put back at once). Being
// process-wide, it must not be made while another host thread may be inside OpenBLAS. Nothing without
// OpenBLAS.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int blas_threads_ = 0, omp_threads_ = 0;
};

// Whether GEMMs on CUDA may round their inputs to TF32 (faster on tensor cores, about 10 bits of
// mantissa). Off by default; applies to shapes first seen after the call.
void set_cuda_gemm_tf32(bool allowed);

// A CUDA device's compute capability as 10 * major + minor (86 for 8.6); 0 in a build without CUDA.
int cuda_compute_capability(Device device);

}  // namespace surge::rl
