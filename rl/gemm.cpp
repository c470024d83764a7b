// The backend-neutral GEMM launcher and its CPU half (CBLAS).
#include "rl/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "sim/error.hpp"
#include "sim/runtime_internal.hpp"

#if defined(SURGE_HAVE_CBLAS)
#include <cblas.h>
#endif
#if defined(SURGE_WITH_CUDA)
#include "rl/gemm_cuda.hpp"
#endif

namespace surge::rl {
namespace {

void check_batch(std::int64_t m, std::int64_t n, std::int64_t ldc, std::int64_t batch_count, std::int64_t stride_a,
                 std::int64_t stride_b, std::int64_t stride_c, std::int64_t stride_bias) {
  SURGE_CHECK(batch_count >= 0, "negative GEMM batch count");
  SURGE_CHECK(stride_a >= 0 && stride_b >= 0 && stride_bias >= 0, "negative GEMM batch stride");
  SURGE_CHECK(batch_count <= 1 || stride_c >= (m - 1) * ldc + n, "GEMM batch stride of C overlaps the next agent's C");
}

void check_shape(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                 std::int64_t ldb, std::int64_t ldc) {
  SURGE_CHECK(m >= 0 && n >= 0 && k >= 0, "negative GEMM dimension");
  SURGE_CHECK(lda >= std::max<std::int64_t>(1, trans_a == Transpose::No ? k : m), "GEMM lda too small");
  SURGE_CHECK(ldb >= std::max<std::int64_t>(1, trans_b == Transpose::No ? n : k), "GEMM ldb too small");
  SURGE_CHECK(ldc >= std::max<std::int64_t>(1, n), "GEMM ldc too small");
}

#if defined(SURGE_HAVE_CBLAS)
CBLAS_TRANSPOSE cblas_op(Transpose t) { return t == Transpose::No ? CblasNoTrans : CblasTrans; }

void cpu_gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
              std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, cblas_op(ta), cblas_op(tb), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
void cpu_gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
              std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, cblas_op(ta), cblas_op(tb), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
#else
// Without CBLAS (a CUDA machine lacking Debian's packages): the plain triple loop, i-k-j ordered so
// that the inner loop runs along rows of B and C.
template <class Scalar>
void cpu_gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, Scalar alpha, const Scalar* a,
              std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    Scalar* c_row = c + i * ldc;
    for (std::int64_t j = 0; j < n; ++j) c_row[j] = beta == Scalar(0) ? Scalar(0) : beta * c_row[j];
    for (std::int64_t p = 0; p < k; ++p) {
      const Scalar a_ip = alpha * (ta == Transpose::No ? a[i * lda + p] : a[p * lda + i]);
      if (tb == Transpose::No) {
        const Scalar* b_row = b + p * ldb;
        for (std::int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
      } else {
        for (std::int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b[j * ldb + p];
      }
    }
  }
}
#endif

// One agent's GEMM on the CPU, bias and k == 0 included (rl/gemm.hpp's contract).
template <class Scalar>
void cpu_gemm_with_bias(Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        Scalar alpha, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta,
                        Scalar* c, std::int64_t ldc, const Scalar* bias) {
  if (bias) {
    // The bias enters as the C operand: rows of C become beta*C + bias, and the product adds to them.
    for (std::int64_t i = 0; i < m; ++i) {
      Scalar* row = c + i * ldc;
      for (std::int64_t j = 0; j < n; ++j) row[j] = (beta == Scalar(0) ? Scalar(0) : beta * row[j]) + bias[j];
    }
    beta = Scalar(1);
  }
  if (k == 0) {
    if (!bias)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == Scalar(0) ? Scalar(0) : beta * c[i * ldc + j];
    return;
  }
  cpu_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Multiply-adds below which the agents' loop stays on the calling thread: an OpenMP fork costs
// microseconds, about what 64x64x16 multiply-adds take.
constexpr std::int64_t kAgentForkWork = std::int64_t(1) << 16;

}  // namespace

template <class Scalar>
void gemm(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
          Scalar alpha, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb, Scalar beta, Scalar* c,
          std::int64_t ldc, const Scalar* bias) {
  check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  if (stream.device().is_cuda()) {
#if defined(SURGE_WITH_CUDA)
    detail::gemm_cublaslt(stream, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
    return;
#else
    throw Error("GEMM on " + stream.device().str() + ": this build has no CUDA support");
#endif
  }
  cpu_gemm_with_bias(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}

template <class Scalar>
void gemm_strided_batched(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                          std::int64_t k, Scalar alpha, const Scalar* a, std::int64_t lda, std::int64_t stride_a,
                          const Scalar* b, std::int64_t ldb, std::int64_t stride_b, Scalar beta, Scalar* c,
                          std::int64_t ldc, std::int64_t stride_c, std::int64_t batch_count, const Scalar* bias,
                          std::int64_t stride_bias) {
  check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  check_batch(m, n, ldc, batch_count, stride_a, stride_b, stride_c, stride_bias);
  if (m == 0 || n == 0 || batch_count == 0) return;
  if (stream.device().is_cuda()) {
#if defined(SURGE_WITH_CUDA)
    detail::gemm_cublaslt(stream, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias,
                          {batch_count, stride_a, stride_b, stride_c, stride_bias});
    return;
#else
    throw Error("GEMM on " + stream.device().str() + ": this build has no CUDA support");
#endif
  }
  // The order-free test mode (sim/runtime_internal.hpp) visits the agents reversed or shuffled.
  const std::vector<std::int64_t> order =
      cpu_order() == CpuOrder::kSequential ? std::vector<std::int64_t>{} : cpu_visit_order(batch_count);
  const auto agent = [&](std::int64_t position) {
    const std::int64_t i = order.empty() ? position : order[static_cast<std::size_t>(position)];
    // With k = 0 the operands may be null: no offset is formed from a null pointer.
    cpu_gemm_with_bias(trans_a, trans_b, m, n, k, alpha, a ? a + i * stride_a : a, lda, b ? b + i * stride_b : b, ldb,
                       beta, c + i * stride_c, ldc, bias ? bias + i * stride_bias : nullptr);
  };
  const std::int64_t work = batch_count * m * n * std::max<std::int64_t>(k, 1);
  if (!cpu_loop_forks(!order.empty() || (batch_count > 1 && work >= kAgentForkWork))) {
    for (std::int64_t position = 0; position < batch_count; ++position) agent(position);
    return;
  }
  [[maybe_unused]] const SingleThreadedBlas single;
#pragma omp parallel for schedule(static)
  for (std::int64_t position = 0; position < batch_count; ++position) agent(position);
}

template void gemm<float>(const Stream&, Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t, float,
                          const float*, std::int64_t, const float*, std::int64_t, float, float*, std::int64_t,
                          const float*);
template void gemm<double>(const Stream&, Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t, double,
                           const double*, std::int64_t, const double*, std::int64_t, double, double*, std::int64_t,
                           const double*);
#define SURGE_GEMM_BATCHED_INSTANTIATE(Scalar)                                                                         \
  template void gemm_strided_batched<Scalar>(const Stream&, Transpose, Transpose, std::int64_t, std::int64_t,          \
                                             std::int64_t, Scalar, const Scalar*, std::int64_t, std::int64_t,          \
                                             const Scalar*, std::int64_t, std::int64_t, Scalar, Scalar*, std::int64_t, \
                                             std::int64_t, std::int64_t, const Scalar*, std::int64_t);
SURGE_GEMM_BATCHED_INSTANTIATE(float)
SURGE_GEMM_BATCHED_INSTANTIATE(double)
#undef SURGE_GEMM_BATCHED_INSTANTIATE

std::uint64_t cuda_gemm_calls() {
#if defined(SURGE_WITH_CUDA)
  return detail::cublaslt_matmul_calls();
#else
  return 0;
#endif
}

std::string cpu_gemm_library() {
#if defined(SURGE_HAVE_CBLAS)
  return SURGE_CBLAS_DESCRIPTION;
#else
  return "plain loops (built without CBLAS)";
#endif
}

// Inside the agents' loop of gemm_strided_batched (or of rl/agent_set) cpu_loop_forks is false and no
// SingleThreadedBlas is made: OpenBLAS is at one thread there already.
#if defined(SURGE_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
SingleThreadedBlas::SingleThreadedBlas()
    : blas_threads_(openblas_get_num_threads()), omp_threads_(omp_get_max_threads()) {
  openblas_set_num_threads(1);
  omp_set_num_threads(omp_threads_);
}
SingleThreadedBlas::~SingleThreadedBlas() {
  openblas_set_num_threads(blas_threads_);
  omp_set_num_threads(omp_threads_);
}
#else
SingleThreadedBlas::SingleThreadedBlas() = default;
SingleThreadedBlas::~SingleThreadedBlas() = default;
#endif

void set_cpu_threads(int threads) {
  SURGE_CHECK(threads >= 1, "at least one CPU thread");
  omp_set_num_threads(threads);
#if defined(SURGE_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  openblas_set_num_threads(threads);
#endif
}

void prepare_gemm(Device device) {
  if (!device.is_cuda()) return;
#if defined(SURGE_WITH_CUDA)
  detail::prepare_cublaslt(device.index);
#else
  throw Error("GEMM on " + device.str() + ": this build has no CUDA support");
#endif
}

void gemm_bf16(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b, std::int64_t ldb,
               float* c, std::int64_t ldc, const float* bias) {
  gemm_bf16_strided_batched(stream, trans_a, trans_b, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, 1, bias, 0);
}

void gemm_bf16_strided_batched(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m,
                               std::int64_t n, std::int64_t k, const std::uint16_t* a, std::int64_t lda,
                               std::int64_t stride_a, const std::uint16_t* b, std::int64_t ldb, std::int64_t stride_b,
                               float* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch_count,
                               const float* bias, std::int64_t stride_bias) {
  check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  check_batch(m, n, ldc, batch_count, stride_a, stride_b, stride_c, stride_bias);
  SURGE_CHECK(stream.device().is_cuda(), "a bf16 GEMM on the CPU: its bf16 runs in the fused MLP path");
  if (m == 0 || n == 0 || batch_count == 0) return;
#if defined(SURGE_WITH_CUDA)
  detail::gemm_cublaslt_bf16(stream, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, bias,
                             {batch_count, stride_a, stride_b, stride_c, stride_bias});
#else
  (void)a, (void)b, (void)c, (void)bias;
#endif
}

int cuda_compute_capability(Device device) {
#if defined(SURGE_WITH_CUDA)
  return device.is_cuda() ? detail::cublaslt_compute_capability(device.index) : 0;
#else
  (void)device;
  return 0;
#endif
}

void set_cuda_gemm_tf32(bool allowed) {
#if defined(SURGE_WITH_CUDA)
  detail::set_cublaslt_tf32(allowed);
#else
  (void)allowed;
#endif
}

}  // namespace surge::rl
