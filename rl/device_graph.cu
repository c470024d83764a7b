// CUDA graphs and pinned asynchronous copies; on a build or device without CUDA, the CPU's plain
// equivalents (the mirror copies at once; graphs are refused).
#include "rl/device_graph.hpp"

#include <cstdlib>
#include <cstring>

#include "sim/error.hpp"

#if defined(__CUDACC__)
#include "sim/cuda_check.hpp"
#endif

namespace surge::rl {

IterationGraph::IterationGraph(const Stream& stream) : stream_(stream) {}

IterationGraph::~IterationGraph() {
#if defined(__CUDACC__)
  if (exec_) SURGE_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_)));
  if (graph_) SURGE_CUDA_CHECK_NOTHROW(cudaGraphDestroy(static_cast<cudaGraph_t>(graph_)));
#endif
}

void IterationGraph::capture(const std::function<void()>& enqueue) {
#if defined(__CUDACC__)
  SURGE_CHECK(stream_.device().is_cuda(), "CUDA graphs need a CUDA stream");
  SURGE_CHECK(!exec_, "the iteration graph was already captured");
  const auto stream = static_cast<cudaStream_t>(stream_.native_handle());
  SURGE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  // Debug builds (SURGE_DEBUG_SYNC) synchronise after each launch, which capture forbids.
  surge::detail::capturing_graph = true;
  try {
    enqueue();
  } catch (...) {
    surge::detail::capturing_graph = false;
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  surge::detail::capturing_graph = false;
  cudaGraph_t graph = nullptr;
  SURGE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  graph_ = graph;
  cudaGraphExec_t exec = nullptr;
  SURGE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  exec_ = exec;
#else
  (void)enqueue;
  throw Error("CUDA graphs need the CUDA backend, which this build lacks");
#endif
}

void IterationGraph::launch() const {
#if defined(__CUDACC__)
  SURGE_CHECK(exec_, "the iteration graph has not been captured");
  SURGE_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream_.native_handle())));
#else
  throw Error("CUDA graphs need the CUDA backend, which this build lacks");
#endif
}

HostMirror::HostMirror(Device device, std::size_t bytes, int slots) : device_(device), bytes_(bytes) {
  SURGE_CHECK(slots >= 1 && bytes >= 1, "empty host mirror");
  if (device.is_cuda()) {
#if defined(__CUDACC__)
    SURGE_CUDA_CHECK(cudaSetDevice(device.index));
    SURGE_CUDA_CHECK(cudaMallocHost(&host_, bytes * static_cast<std::size_t>(slots)));
    for (int s = 0; s < slots; ++s) {
      cudaEvent_t event = nullptr;
      SURGE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      events_.push_back(event);
    }
    return;
#else
    throw Error("cannot mirror memory of " + device.str() + ": this build has no CUDA support");
#endif
  }
  host_ = std::calloc(static_cast<std::size_t>(slots), bytes);
  if (!host_) throw Error("out of host memory for a host mirror");
  events_.assign(static_cast<std::size_t>(slots), nullptr);
}

HostMirror::~HostMirror() {
#if defined(__CUDACC__)
  if (device_.is_cuda()) {
    for (void* event : events_)
      if (event) SURGE_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
    if (host_) SURGE_CUDA_CHECK_NOTHROW(cudaFreeHost(host_));
    return;
  }
#endif
  std::free(host_);
}

void HostMirror::copy_async(int slot, const void* device_source, const Stream& stream) {
  SURGE_CHECK(slot >= 0 && slot < static_cast<int>(events_.size()), "host mirror slot out of range");
  char* target = static_cast<char*>(host_) + bytes_ * static_cast<std::size_t>(slot);
  if (device_.is_cpu()) {
    std::memcpy(target, device_source, bytes_);
    return;
  }
#if defined(__CUDACC__)
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  SURGE_CUDA_CHECK(cudaMemcpyAsync(target, device_source, bytes_, cudaMemcpyDeviceToHost, cuda_stream));
  SURGE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[static_cast<std::size_t>(slot)]), cuda_stream));
#else
  (void)stream;
#endif
}

const void* HostMirror::wait(int slot) const {
  SURGE_CHECK(slot >= 0 && slot < static_cast<int>(events_.size()), "host mirror slot out of range");
#if defined(__CUDACC__)
  if (device_.is_cuda()) SURGE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[static_cast<std::size_t>(slot)])));
#endif
  return static_cast<const char*>(host_) + bytes_ * static_cast<std::size_t>(slot);
}

}  // namespace surge::rl
