// cuDNN convolutions (rl/conv_cudnn.hpp): descriptors and algorithms made once per layer, then calls that
// only enqueue. Compiled only in CUDA builds that found cuDNN.
#include "rl/conv_cudnn.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "rl/conv_algorithm_choice.hpp"
#include "sim/cuda_check.hpp"
#include "sim/cudnn_check.hpp"
#include "sim/device_guard.hpp"

namespace surge::rl {
namespace {

template <class Result>
const Result& pick(const std::vector<Result>& results, int returned, const char* pass, const ConvShape& shape,
                   std::size_t limit) {
  std::vector<ConvAlgorithmCandidate> ranked;
  for (int i = 0; i < returned; ++i) {
    const Result& r = results[static_cast<std::size_t>(i)];
    ranked.push_back({r.status == CUDNN_STATUS_SUCCESS, r.memory, r.determinism == CUDNN_DETERMINISTIC});
  }
  const int chosen = choose_conv_algorithm(ranked, limit);
  if (chosen < 0)
    throw Error(std::string("cuDNN offers no ") + pass + " algorithm for " + shape.str() + " within " +
                std::to_string(limit) + " bytes of workspace");
  return results[static_cast<std::size_t>(chosen)];
}

// cuDNN's heuristic ranking for one pass (`heuristics(capacity, &returned, results)`), then pick().
template <class Result, class Heuristics>
Result choose(cudnnHandle_t handle, cudnnStatus_t (*max_count)(cudnnHandle_t, int*), const char* pass,
              const ConvShape& shape, std::size_t limit, const Heuristics& heuristics) {
  int capacity = 0, returned = 0;
  SURGE_CUDNN_CHECK(max_count(handle, &capacity));
  std::vector<Result> results(static_cast<std::size_t>(capacity));
  SURGE_CUDNN_CHECK(heuristics(capacity, &returned, results.data()));
  return pick(results, returned, pass, shape, limit);
}

// For destructors: a failure is reported, never thrown.
void release(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    std::fprintf(stderr, "surge: releasing %s: %s\n", what, cudnnGetErrorString(status));
}

}  // namespace

struct CudnnConv::State {
  Device device;
  ConvShape shape;
  std::int64_t rows = 0;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t input = nullptr, output = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo{};
  cudnnConvolutionBwdDataAlgo_t data_algo{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo{};
  std::size_t workspace = 0;

  ~State() {
    if (filter) release(cudnnDestroyFilterDescriptor(filter), "a cuDNN filter descriptor");
    if (conv) release(cudnnDestroyConvolutionDescriptor(conv), "a cuDNN convolution descriptor");
    for (cudnnTensorDescriptor_t d : {input, output, bias})
      if (d) release(cudnnDestroyTensorDescriptor(d), "a cuDNN tensor descriptor");
    if (handle) release(cudnnDestroy(handle), "a cuDNN handle");
  }
  void bind(const Stream& stream) const {
    SURGE_CHECK(stream.device() == device,
                "cuDNN convolution made for " + device.str() + " called on " + stream.device().str());
    SURGE_CUDNN_CHECK(cudnnSetStream(handle, static_cast<cudaStream_t>(stream.native_handle())));
  }
};

bool cudnn_available() { return true; }

CudnnConv::CudnnConv(Device device, const ConvShape& shape, std::int64_t rows, bool allow_tf32,
                     std::size_t workspace_limit)
    : state_(std::make_unique<State>()) {
  SURGE_CHECK(device.is_cuda(), "cuDNN convolutions run on CUDA devices");
  SURGE_CHECK(rows >= 1 && rows <= INT32_MAX, "cuDNN convolution rows out of range");
  check_conv_shape(shape, "cuDNN convolution");
  const DeviceGuard guard(device);
  State& s = *state_;
  s.device = device;
  s.shape = shape;
  s.rows = rows;
  const int n = static_cast<int>(rows);
  SURGE_CUDNN_CHECK(cudnnCreate(&s.handle));
  SURGE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&s.input));
  SURGE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&s.output));
  SURGE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&s.bias));
  SURGE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&s.filter));
  SURGE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&s.conv));
  SURGE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.input, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, shape.in_channels,
                                               shape.in_height, shape.in_width));
  SURGE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.output, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, shape.out_channels,
                                               shape.out_height(), shape.out_width()));
  SURGE_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(s.bias, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, shape.out_channels, 1, 1));
  // NHWC filters are KRSC: [out][kh][kw][in], the CPU path's weight layout.
  SURGE_CUDNN_CHECK(cudnnSetFilter4dDescriptor(s.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, shape.out_channels,
                                               shape.in_channels, shape.kernel_height, shape.kernel_width));
  SURGE_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(s.conv, shape.padding, shape.padding, shape.stride, shape.stride, 1,
                                                    1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  SURGE_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv, allow_tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));

  const auto f = choose<cudnnConvolutionFwdAlgoPerf_t>(
      s.handle, cudnnGetConvolutionForwardAlgorithmMaxCount, "forward", shape, workspace_limit,
      [&](int n, int* got, auto* out) {
        return cudnnGetConvolutionForwardAlgorithm_v7(s.handle, s.input, s.filter, s.conv, s.output, n, got, out);
      });
  const auto d = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
      s.handle, cudnnGetConvolutionBackwardDataAlgorithmMaxCount, "backward-data", shape, workspace_limit,
      [&](int n, int* got, auto* out) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(s.handle, s.filter, s.output, s.conv, s.input, n, got, out);
      });
  const auto w = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
      s.handle, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, "backward-filter", shape, workspace_limit,
      [&](int n, int* got, auto* out) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(s.handle, s.input, s.output, s.conv, s.filter, n, got,
                                                             out);
      });
  s.forward_algo = f.algo;
  s.data_algo = d.algo;
  s.filter_algo = w.algo;
  // The sizes the heuristics reported, checked against what the chosen algorithms ask for.
  std::size_t forward_bytes = 0, data_bytes = 0, filter_bytes = 0;
  SURGE_CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(s.handle, s.input, s.filter, s.conv, s.output, f.algo, &forward_bytes));
  SURGE_CUDNN_CHECK(
      cudnnGetConvolutionBackwardDataWorkspaceSize(s.handle, s.filter, s.output, s.conv, s.input, d.algo, &data_bytes));
  SURGE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(s.handle, s.input, s.output, s.conv, s.filter,
                                                                   w.algo, &filter_bytes));
  s.workspace = std::max({f.memory, d.memory, w.memory, forward_bytes, data_bytes, filter_bytes});
  SURGE_CHECK(s.workspace <= workspace_limit, "cuDNN's algorithms for " + shape.str() + " need " +
                                                  std::to_string(s.workspace) + " bytes of workspace, over the " +
                                                  std::to_string(workspace_limit) + " planned");
}

CudnnConv::~CudnnConv() = default;
CudnnConv::CudnnConv(CudnnConv&&) noexcept = default;
CudnnConv& CudnnConv::operator=(CudnnConv&&) noexcept = default;

const ConvShape& CudnnConv::shape() const { return state_->shape; }
std::int64_t CudnnConv::rows() const { return state_->rows; }
std::size_t CudnnConv::workspace_bytes() const { return state_->workspace; }

std::string CudnnConv::algorithms() const {
  return "forward " + std::to_string(static_cast<int>(state_->forward_algo)) + ", data " +
         std::to_string(static_cast<int>(state_->data_algo)) + ", filter " +
         std::to_string(static_cast<int>(state_->filter_algo)) + " (cuDNN's enum values)";
}

void CudnnConv::forward(const Stream& stream, const float* input, const float* weight, const float* bias,
                        void* workspace, float* output) const {
  const State& s = *state_;
  s.bind(stream);
  const float one = 1.0f, zero = 0.0f;
  SURGE_CUDNN_CHECK(cudnnConvolutionForward(s.handle, &one, s.input, input, s.filter, weight, s.conv, s.forward_algo,
                                            workspace, s.workspace, &zero, s.output, output));
  if (bias) SURGE_CUDNN_CHECK(cudnnAddTensor(s.handle, &one, s.bias, bias, &one, s.output, output));
}

void CudnnConv::backward_data(const Stream& stream, const float* d_output, const float* weight, void* workspace,
                              float* d_input) const {
  const State& s = *state_;
  s.bind(stream);
  const float one = 1.0f, zero = 0.0f;
  SURGE_CUDNN_CHECK(cudnnConvolutionBackwardData(s.handle, &one, s.filter, weight, s.output, d_output, s.conv,
                                                 s.data_algo, workspace, s.workspace, &zero, s.input, d_input));
}

void CudnnConv::backward_filter(const Stream& stream, const float* input, const float* d_output, void* workspace,
                                float* d_weight, float* d_bias) const {
  const State& s = *state_;
  s.bind(stream);
  const float one = 1.0f, zero = 0.0f;
  SURGE_CUDNN_CHECK(cudnnConvolutionBackwardFilter(s.handle, &one, s.input, input, s.output, d_output, s.conv,
                                                   s.filter_algo, workspace, s.workspace, &zero, s.filter, d_weight));
  if (d_bias)
    SURGE_CUDNN_CHECK(cudnnConvolutionBackwardBias(s.handle, &one, s.output, d_output, &zero, s.bias, d_bias));
}

}  // namespace surge::rl
