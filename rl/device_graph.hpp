#pragma once
// The two backend-specific pieces the trainer needs to keep the host out of an iteration: a CUDA graph
// of a whole iteration, captured once and replayed, and pinned host slots that receive small device
// structs asynchronously (read one iteration later). CUDA types stay behind this interface.
#include <cstddef>
#include <functional>
#include <vector>

#include "sim/native_handle.hpp"
#include "sim/stream.hpp"
#include "sim/transfer.hpp"

namespace surge::rl {

class IterationGraph {
 public:
  explicit IterationGraph(const Stream& stream);

  // Records everything `enqueue` puts on the stream (nothing runs) and instantiates it as a graph.
  // Needs a CUDA stream; throws Error on the CPU, and when the capture fails (nothing is kept then).
  // With `branches`, the work `enqueue` puts on those streams joins the graph too: each branch is forked
  // from the stream at the start (an event recorded there, which the branch waits on) and joined back at
  // the end (the stream waits on an event recorded on each branch). One launch then runs every branch,
  // side by side where the branches allow; nothing on a branch's own stream is ordered with it.
  void capture(const std::function<void()>& enqueue, const std::vector<const Stream*>& branches = {});
  bool captured() const { return exec_ != nullptr; }
  // Enqueues one replay on the stream.
  void launch() const;

 private:
  const Stream& stream_;
  NativeHandle graph_ = no_native_handle();  // cudaGraph_t
  NativeHandle exec_ = no_native_handle();   // cudaGraphExec_t, destroyed before its graph
};

// `slots` host copies of a device struct of `bytes` bytes. On CUDA they are pinned and filled by
// cudaMemcpyAsync, each followed by an event the reader waits on (sleeping, not spinning a core); on
// the CPU the copy happens at once.
// Enqueues one iteration on the graph's stream: `enqueue` itself, or where `replay`, a launch of the graph,
// captured from `enqueue` the first time.
void enqueue_or_replay(IterationGraph& graph, bool replay, const std::function<void()>& enqueue);

class HostMirror {
 public:
  HostMirror(Device device, std::size_t bytes, int slots);
  // Waits for the copies still in flight before the pinned memory they write to is freed.
  ~HostMirror();
  HostMirror(HostMirror&&) noexcept = default;
  HostMirror& operator=(HostMirror&&) = delete;
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;

  void copy_async(int slot, const void* device_source, const Stream& stream);
  // The copy alone, for a stream being captured into a graph: an event recorded inside a capture marks a
  // dependency, not a point the host can wait for, so the slot's copy counts as done once `copied` has
  // fired, an event the graph's owner records after each launch of it (until copy_async again).
  void copy_async_captured(int slot, const void* device_source, const Stream& stream, const Event& copied);
  // Waits for the slot's last copy and returns its bytes (valid until the slot is copied into again).
  const void* wait(int slot) const;

 private:
  void enqueue_copy(int slot, const void* device_source, const Stream& stream);

  Device device_;
  std::size_t bytes_;
  StagingBuffer host_;                // [slots][bytes], pinned on CUDA
  std::vector<Event> events_;         // [slots]
  std::vector<const Event*> copied_;  // [slots]: the graph's event for a captured copy, else null
};

}  // namespace surge::rl
