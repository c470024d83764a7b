// CUDA graphs and pinned asynchronous copies; on a build or device without CUDA, the CPU's plain
// equivalents (the mirror copies at once; graphs are refused).
#include "rl/device_graph.hpp"

#include <cstring>

#include "sim/device_guard.hpp"
#include "sim/error.hpp"

#if defined(__CUDACC__)
#include "sim/cuda_check.hpp"
#endif

namespace surge::rl {

#if defined(__CUDACC__)
namespace {
void destroy_graph(void* graph) { SURGE_CUDA_CHECK_NOTHROW(cudaGraphDestroy(static_cast<cudaGraph_t>(graph))); }
void destroy_graph_exec(void* exec) {
  SURGE_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)));
}
}  // namespace
#endif

IterationGraph::IterationGraph(const Stream& stream) : stream_(stream) {}

void IterationGraph::capture(const std::function<void()>& enqueue) {
#if defined(__CUDACC__)
  SURGE_CHECK(stream_.device().is_cuda(), "CUDA graphs need a CUDA stream");
  SURGE_CHECK(!exec_, "the iteration graph was already captured");
  const DeviceGuard guard(stream_.device());
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
  graph_ = NativeHandle(graph, destroy_graph);
  cudaGraphExec_t exec = nullptr;
  SURGE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  exec_ = NativeHandle(exec, destroy_graph_exec);
#else
  (void)enqueue;
  throw Error("CUDA graphs need the CUDA backend, which this build lacks");
#endif
}

void IterationGraph::launch() const {
#if defined(__CUDACC__)
  SURGE_CHECK(exec_, "the iteration graph has not been captured");
  const DeviceGuard guard(stream_.device());
  SURGE_CUDA_CHECK(
      cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_.get()), static_cast<cudaStream_t>(stream_.native_handle())));
#else
  throw Error("CUDA graphs need the CUDA backend, which this build lacks");
#endif
}

HostMirror::HostMirror(Device device, std::size_t bytes, int slots) : device_(device), bytes_(bytes) {
  SURGE_CHECK(slots >= 1 && bytes >= 1, "empty host mirror");
  host_ = StagingBuffer(device, bytes * static_cast<std::size_t>(slots));
  std::memset(host_.data(), 0, host_.bytes());  // a slot read before its first copy holds zeros
  for (int s = 0; s < slots; ++s) events_.emplace_back(device, /*blocking_sync=*/true);
}

HostMirror::~HostMirror() {
  for (const Event& event : events_) event.synchronize_noexcept();
}

void HostMirror::copy_async(int slot, const void* device_source, const Stream& stream) {
  SURGE_CHECK(slot >= 0 && slot < static_cast<int>(events_.size()), "host mirror slot out of range");
  char* target = static_cast<char*>(host_.data()) + bytes_ * static_cast<std::size_t>(slot);
  if (device_.is_cpu()) {
    std::memcpy(target, device_source, bytes_);
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(stream.device());
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  SURGE_CUDA_CHECK(cudaMemcpyAsync(target, device_source, bytes_, cudaMemcpyDeviceToHost, cuda_stream));
#endif
  events_[static_cast<std::size_t>(slot)].record(stream);
}

const void* HostMirror::wait(int slot) const {
  SURGE_CHECK(slot >= 0 && slot < static_cast<int>(events_.size()), "host mirror slot out of range");
  events_[static_cast<std::size_t>(slot)].synchronize();
  return static_cast<const char*>(host_.data()) + bytes_ * static_cast<std::size_t>(slot);
}

}  // namespace surge::rl
