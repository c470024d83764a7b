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

}  // namespace surge
