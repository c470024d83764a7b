// The CUDA half of the GEMM launcher: cuBLASLt, with the bias add fused into the epilogue, K agents'
// GEMMs of one shape as one strided-batched matmul, and one heuristic algorithm choice cached per shape
// (batch count and strides included). Compiled only when CUDA is on.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "rl/gemm_cuda.hpp"
#include "sim/cublas_check.hpp"
#include "sim/cuda_check.hpp"
#include "sim/device_guard.hpp"
#include "sim/parallel.cuh"
#include "sim/stream.hpp"

namespace surge::rl::detail {
namespace {

// Each stream that runs GEMMs gets its own workspace: streams that run side by side (the agents'
// branches of one CUDA graph, rl/agent_set) would otherwise race on one buffer when cuBLASLt splits the
// inner dimension. 4 MiB holds 256 partial 64x64 fp32 results, ample for the learner's shapes, and keeps
// 1024 agents' workspaces at 4 GiB.
constexpr std::size_t kWorkspaceBytes = std::size_t(4) << 20;

bool g_allow_tf32 = false;

// cuBLASLt's BIAS epilogue reads the bias vector in 16-byte loads; a less aligned bias (a slice of a
// packed buffer) takes the broadcast kernel below instead.
constexpr std::uint32_t kBiasEpilogueAlignment = 16;

std::atomic<std::uint64_t> g_matmul_calls{0};

// The largest power of two (up to 256) that divides the address, and the batch stride in bytes where the
// operand is batched (so every agent's pointer has it): cuBLASLt's heuristic may only pick algorithms
// whose alignment needs the actual pointers meet.
std::uint32_t alignment_of(const void* pointer, std::int64_t stride_bytes = 0) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer) | static_cast<std::uintptr_t>(stride_bytes);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

struct ShapeKey {
  int device, dtype, op_a, op_b;
  std::int64_t rows_d, cols_d, inner, ld_a, ld_b, ld_d;
  bool bias, bias_aligned, tf32, workspace;
  std::uint32_t align_a, align_b, align_d;
  // cuBLASLt's A, B and D: its A is our B (rl::gemm's row-major contract, below).
  std::int64_t batch_count, stride_a, stride_b, stride_d, stride_bias;
  auto tie() const {
    return std::tie(device, dtype, op_a, op_b, rows_d, cols_d, inner, ld_a, ld_b, ld_d, bias, bias_aligned, tf32,
                    workspace, align_a, align_b, align_d, batch_count, stride_a, stride_b, stride_d, stride_bias);
  }
  bool operator<(const ShapeKey& other) const { return tie() < other.tie(); }
};

// Everything cuBLASLt needs for one shape, built and tuned once.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // False when cuBLASLt offered no algorithm with the BIAS epilogue for this shape and type: the bias
  // then goes into C beforehand and the product is added to it.
  bool bias_epilogue = false;
};

// C[m][n] = beta * C (+ bias[n] on every row when bias is not null) for every agent of the batch, in one
// launch: the bias for plans without the epilogue, and the whole GEMM when k == 0 (rl/gemm.hpp's
// contract; cuBLASLt takes no empty inner dimension). beta == 0 writes zeros whatever C held, as the CPU
// backend does.
template <class Scalar>
void broadcast_bias(const Stream& stream, std::int64_t m, std::int64_t n, const Scalar* bias, Scalar beta, Scalar* c,
                    std::int64_t ldc, const GemmBatch& batch) {
  const std::int64_t per_agent = m * n, stride_c = batch.c, stride_bias = batch.bias;
  parallel_for(stream, batch.count * per_agent, [=] SURGE_HD(std::int64_t index) {
    const std::int64_t agent = index / per_agent, i = index % per_agent / n, j = index % n;
    Scalar* const row = c + agent * stride_c + i * ldc;
    row[j] = (beta == Scalar(0) ? Scalar(0) : beta * row[j]) + (bias ? bias[agent * stride_bias + j] : Scalar(0));
  });
}

struct DeviceContext {
  cublasLtHandle_t handle = nullptr;
  std::map<void*, void*> workspaces;  // by the stream's native handle
};

std::mutex g_mutex;
std::map<int, DeviceContext> g_contexts;
std::map<ShapeKey, Plan> g_plans;

// The stream hook (sim/stream.hpp): a stream about to be destroyed gives its workspace back. cudaFree
// waits for the device, so no GEMM still using it is running.
void release_workspace(void* stream) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& [device, context] : g_contexts) {
    const auto found = context.workspaces.find(stream);
    if (found == context.workspaces.end()) continue;
    SURGE_CUDA_CHECK_NOTHROW(cudaFree(found->second));
    context.workspaces.erase(found);
  }
}

// Creates the handle and allocates the workspace: neither may happen inside a stream capture, so
// prepare_cublaslt does it when a GEMM user is built. Called with g_mutex held.
DeviceContext& create_context(int device) {
  DeviceContext& context = g_contexts[device];
  if (!context.handle) {
    const DeviceGuard guard(Device::cuda(device));
    SURGE_CUBLAS_CHECK(cublasLtCreate(&context.handle));
    set_stream_release_hook(release_workspace);
  }
  return context;
}

bool is_capturing(const Stream& stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  SURGE_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream.native_handle()), &capture));
  return capture != cudaStreamCaptureStatusNone;
}

// The stream's workspace, allocated at its first GEMM outside a capture. A stream whose first GEMM is
// captured (no allocation may happen there) gets none: its plans are chosen for no workspace.
// Called with g_mutex held.
void* workspace_for(DeviceContext& context, const Stream& stream) {
  const auto found = context.workspaces.find(stream.native_handle());
  if (found != context.workspaces.end()) return found->second;
  if (is_capturing(stream)) return nullptr;
  void* workspace = nullptr;
  SURGE_CUDA_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));
  context.workspaces.emplace(stream.native_handle(), workspace);
  return workspace;
}

// The device's context; created now only when the stream is not being captured into a graph.
// Called with g_mutex held.
DeviceContext& context_for(const Stream& stream) {
  const int device = stream.device().index;
  const auto found = g_contexts.find(device);
  if (found != g_contexts.end() && found->second.handle) return found->second;
  SURGE_CHECK(!is_capturing(stream),
              "a GEMM on " + stream.device().str() +
                  " is captured into a CUDA graph before cuBLASLt was set up there: call rl::prepare_gemm(device) "
                  "before the capture");
  return create_context(device);
}

// float, double, or std::uint16_t holding bf16 bits (operands only).
template <class T>
constexpr cudaDataType_t data_type() {
  return sizeof(T) == 2 ? CUDA_R_16BF : sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
}

cublasOperation_t op_of(Transpose t) { return t == Transpose::No ? CUBLAS_OP_N : CUBLAS_OP_T; }

// A layout that holds `count` matrices, each `stride` elements after the last (0: one matrix for all).
void set_batch(cublasLtMatrixLayout_t layout, std::int64_t count, std::int64_t stride) {
  const auto count32 = static_cast<std::int32_t>(count);
  SURGE_CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count32, sizeof count32));
  SURGE_CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
}

}  // namespace

void prepare_cublaslt(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  create_context(device);
}

int cublaslt_compute_capability(int device) {
  int major = 0, minor = 0;
  SURGE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SURGE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

void set_cublaslt_tf32(bool allowed) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_allow_tf32 = allowed;
}

namespace {

// Row-major C[m][n] is column-major C^T[n][m] = op(B)^T op(A)^T, so cuBLASLt is called with the
// operands swapped: its A is our B and its B is our A, and the bias (one per column of row-major C)
// becomes the per-row bias of the column-major result that the BIAS epilogue adds. Operands of type In
// (Scalar, or bf16 bits with a float Scalar), C, D, bias and scale of type Scalar.
template <class In, class Scalar>
void matmul(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
            Scalar alpha, const In* a, std::int64_t lda, const In* b, std::int64_t ldb, Scalar beta, Scalar* c,
            std::int64_t ldc, const Scalar* bias, const GemmBatch& requested) {
  SURGE_CHECK(requested.count <= INT32_MAX, "a GEMM batch of more than 2^31 - 1 agents");
  // One agent is a plain GEMM: the same plan and algorithm as rl::gemm's.
  const GemmBatch batch = requested.count == 1 ? GemmBatch{}
                                               : GemmBatch{requested.count, requested.a, requested.b, requested.c,
                                                           bias ? requested.bias : 0};
  const int device = stream.device().index;
  const bool is_float = sizeof(Scalar) == 4, is_bf16 = sizeof(In) == 2;
  if (k == 0) {
    broadcast_bias(stream, m, n, bias, beta, c, ldc, batch);
    return;
  }
  const DeviceGuard guard(stream.device());
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceContext& context = context_for(stream);
  void* const workspace = workspace_for(context, stream);
  const ShapeKey key{
      device,
      is_bf16    ? 2
      : is_float ? 0
                 : 1,
      static_cast<int>(trans_b),
      static_cast<int>(trans_a),
      n,
      m,
      k,
      ldb,
      lda,
      ldc,
      bias != nullptr,
      bias != nullptr && alignment_of(bias, batch.bias * std::int64_t{sizeof(Scalar)}) >= kBiasEpilogueAlignment,
      is_float && !is_bf16 && g_allow_tf32,
      workspace != nullptr,
      alignment_of(b, batch.b * std::int64_t{sizeof(In)}),
      alignment_of(a, batch.a * std::int64_t{sizeof(In)}),
      alignment_of(c, batch.c * std::int64_t{sizeof(Scalar)}),
      batch.count,
      batch.b,
      batch.a,
      batch.c,
      batch.bias};
  auto found = g_plans.find(key);
  if (found == g_plans.end()) {
    Plan plan;
    const cudaDataType_t type = data_type<Scalar>(), operand_type = data_type<In>();
    // bf16 operands: bf16 products summed in fp32 (CUBLAS_COMPUTE_32F), fp32 C and D.
    const cublasComputeType_t compute =
        is_float ? (key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_64F;
    SURGE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, type));
    const cublasOperation_t op_a = op_of(trans_b), op_b = op_of(trans_a);
    SURGE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
    SURGE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
    // Column-major shapes: cuBLASLt's A is our B, its B our A, its D our C transposed ([n][m]).
    const std::uint64_t a_rows = trans_b == Transpose::No ? n : k, a_cols = trans_b == Transpose::No ? k : n;
    const std::uint64_t b_rows = trans_a == Transpose::No ? k : m, b_cols = trans_a == Transpose::No ? m : k;
    SURGE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.layout_a, operand_type, a_rows, a_cols, ldb));
    SURGE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.layout_b, operand_type, b_rows, b_cols, lda));
    SURGE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.layout_d, type, n, m, ldc));
    if (batch.count > 1) {
      set_batch(plan.layout_a, batch.count, batch.b);
      set_batch(plan.layout_b, batch.count, batch.a);
      set_batch(plan.layout_d, batch.count, batch.c);
    }

    cublasLtMatmulPreference_t preference = nullptr;
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const std::uint64_t workspace_bytes = key.workspace ? kWorkspaceBytes : 0;
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &workspace_bytes, sizeof workspace_bytes));
    const std::uint32_t align_a = key.align_a, align_b = key.align_b, align_d = key.align_d;
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                            &align_a, sizeof align_a));
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                            &align_b, sizeof align_b));
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                            &align_d, sizeof align_d));
    SURGE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                            &align_d, sizeof align_d));
    // The heuristic's best algorithm for this epilogue, or none.
    auto choose = [&](cublasLtEpilogue_t epilogue, cublasLtMatmulHeuristicResult_t& result) {
      SURGE_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
      if (epilogue == CUBLASLT_EPILOGUE_BIAS) {
        const void* bias_pointer = bias;
        SURGE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                          sizeof bias_pointer));
        const std::int64_t bias_stride = batch.bias;
        if (batch.count > 1)
          SURGE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                            &bias_stride, sizeof bias_stride));
      }
      int returned = 0;
      const cublasStatus_t status =
          cublasLtMatmulAlgoGetHeuristic(context.handle, plan.desc, plan.layout_a, plan.layout_b, plan.layout_d,
                                         plan.layout_d, preference, 1, &result, &returned);
      return status == CUBLAS_STATUS_SUCCESS && returned > 0;
    };
    cublasLtMatmulHeuristicResult_t result{};
    plan.bias_epilogue = key.bias_aligned && choose(CUBLASLT_EPILOGUE_BIAS, result);
    const bool found_algo = plan.bias_epilogue || choose(CUBLASLT_EPILOGUE_DEFAULT, result);
    cublasLtMatmulPreferenceDestroy(preference);
    SURGE_CHECK(found_algo, "cuBLASLt has no algorithm for a " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                std::to_string(k) + " GEMM");
    plan.algo = result.algo;
    found = g_plans.emplace(key, plan).first;
  }
  const Plan& plan = found->second;
  if (bias && plan.bias_epilogue) {
    // The descriptor is shared by every call of this shape; the bias pointer is this call's.
    const void* bias_pointer = bias;
    SURGE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer,
                                                      sizeof bias_pointer));
  } else if (bias) {
    broadcast_bias(stream, m, n, bias, beta, c, ldc, batch);
    beta = Scalar(1);
  }
  SURGE_CUBLAS_CHECK(cublasLtMatmul(
      context.handle, plan.desc, &alpha, b, plan.layout_a, a, plan.layout_b, &beta, c, plan.layout_d, c, plan.layout_d,
      &plan.algo, workspace, workspace ? kWorkspaceBytes : 0, static_cast<cudaStream_t>(stream.native_handle())));
  g_matmul_calls.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

template <class Scalar>
void gemm_cublaslt(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                   std::int64_t k, Scalar alpha, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb,
                   Scalar beta, Scalar* c, std::int64_t ldc, const Scalar* bias, const GemmBatch& batch) {
  matmul<Scalar, Scalar>(stream, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, batch);
}

std::uint64_t cublaslt_matmul_calls() { return g_matmul_calls.load(std::memory_order_relaxed); }

void gemm_cublaslt_bf16(const Stream& stream, Transpose trans_a, Transpose trans_b, std::int64_t m, std::int64_t n,
                        std::int64_t k, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
                        std::int64_t ldb, float* c, std::int64_t ldc, const float* bias, const GemmBatch& batch) {
  matmul<std::uint16_t, float>(stream, trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc, bias, batch);
}

template void gemm_cublaslt<float>(const Stream&, Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t, float,
                                   const float*, std::int64_t, const float*, std::int64_t, float, float*, std::int64_t,
                                   const float*, const GemmBatch&);
template void gemm_cublaslt<double>(const Stream&, Transpose, Transpose, std::int64_t, std::int64_t, std::int64_t,
                                    double, const double*, std::int64_t, const double*, std::int64_t, double, double*,
                                    std::int64_t, const double*, const GemmBatch&);

}  // namespace surge::rl::detail
