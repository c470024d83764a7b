#pragma once
#include "sim/device.hpp"
#include "sim/native_handle.hpp"

namespace surge {

// An ordered queue of work on one device. On CUDA it owns a cudaStream_t (kept as void* so that
// plain C++ code can hold one); on the CPU, work runs at once on the calling thread's OpenMP team.
// Owners move; a Stream is passed by const reference.
class Stream {
 public:
  explicit Stream(Device device = Device::cpu());

  Device device() const { return device_; }
  void* native_handle() const { return handle_.get(); }  // cudaStream_t on CUDA, nullptr on the CPU
  void synchronize() const;
  // The same for destructors: waits, and reports a failure on stderr instead of throwing.
  void synchronize_noexcept() const noexcept;

 private:
  Device device_;
  NativeHandle handle_ = no_native_handle();
};

// A function called with a CUDA stream's handle just before the stream is destroyed: one per process
// (the GEMM launcher frees the stream's cuBLASLt workspace there); nullptr for none.
void set_stream_release_hook(void (*hook)(void* stream));

// Waits for a stream's work when it leaves scope, without throwing. Declared after the buffers that
// work uses, it keeps them alive until the device is done with them, even when an exception unwinds.
class StreamDrain {
 public:
  explicit StreamDrain(const Stream& stream) : stream_(stream) {}
  ~StreamDrain() { stream_.synchronize_noexcept(); }
  StreamDrain(const StreamDrain&) = delete;
  StreamDrain& operator=(const StreamDrain&) = delete;

 private:
  const Stream& stream_;
};

}  // namespace surge
