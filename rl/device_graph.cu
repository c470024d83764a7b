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

void IterationGraph::capture(const std::function<void()>& enqueue, const std::vector<const Stream*>& branches) {
#if defined(__CUDACC__)
  SURGE_CHECK(stream_.device().is_cuda(), "CUDA graphs need a CUDA stream");
  SURGE_CHECK(!exec_, "the iteration graph was already captured");
  for (const Stream* branch : branches)
    SURGE_CHECK(branch && branch->device() == stream_.device() && branch != &stream_,
                "a graph's branch is another stream of its device");
  const DeviceGuard guard(stream_.device());
  const auto stream = static_cast<cudaStream_t>(stream_.native_handle());
  // Made before the capture starts: the fork, and one join per branch.
  Event fork(stream_.device());
  std::vector<Event> joins;
  for (std::size_t b = 0; b < branches.size(); ++b) joins.emplace_back(stream_.device());
  SURGE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  // Debug builds (SURGE_DEBUG_SYNC) synchronise after each launch, which capture forbids.
  surge::detail::capturing_graph = true;
  try {
    fork.record(stream_);
    for (const Stream* branch : branches) fork.wait(*branch);
    enqueue();
    for (std::size_t b = 0; b < branches.size(); ++b) {
      joins[b].record(*branches[b]);
      joins[b].wait(stream_);
    }
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
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  if (instantiated != cudaSuccess) graph_ = no_native_handle();
  SURGE_CUDA_CHECK(instantiated);
  exec_ = NativeHandle(exec, destroy_graph_exec);
#else
  (void)enqueue;
  (void)branches;
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
  copied_.assign(static_cast<std::size_t>(slots), nullptr);
}

HostMirror::~HostMirror() {
  for (const Event& event : events_) event.synchronize_noexcept();
}

void HostMirror::enqueue_copy(int slot, const void* device_source, const Stream& stream) {
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
#else
  (void)stream;
#endif
}

void HostMirror::copy_async(int slot, const void* device_source, const Stream& stream) {
  enqueue_copy(slot, device_source, stream);
  copied_[static_cast<std::size_t>(slot)] = nullptr;
  if (device_.is_cuda()) events_[static_cast<std::size_t>(slot)].record(stream);
}

void HostMirror::copy_async_captured(int slot, const void* device_source, const Stream& stream, const Event& copied) {
  SURGE_CHECK(device_.is_cuda(), "a captured copy needs a CUDA device");
  enqueue_copy(slot, device_source, stream);
  copied_[static_cast<std::size_t>(slot)] = &copied;
}

const void* HostMirror::wait(int slot) const {
  SURGE_CHECK(slot >= 0 && slot < static_cast<int>(events_.size()), "host mirror slot out of range");
  const Event* copied = copied_[static_cast<std::size_t>(slot)];
  (copied ? *copied : events_[static_cast<std::size_t>(slot)]).synchronize();
  return static_cast<const char*>(host_.data()) + bytes_ * static_cast<std::size_t>(slot);
}

void enqueue_or_replay(IterationGraph& graph, bool replay, const std::function<void()>& enqueue) {
  if (!replay) {
    enqueue();
    return;
  }
  if (!graph.captured()) graph.capture(enqueue);
  graph.launch();
}

}  // namespace surge::rl
