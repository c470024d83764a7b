#pragma once
#include "sim/device.hpp"

namespace surge {

// An ordered queue of work on one device. On CUDA it owns a cudaStream_t (kept as void* so that
// plain C++ code can hold one); on the CPU, work runs at once on the calling thread's OpenMP team.
// Owners move; a Stream is passed by const reference.
class Stream {
 public:
  explicit Stream(Device device = Device::cpu());
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  void* native_handle() const { return handle_; }  // cudaStream_t on CUDA, nullptr on the CPU
  void synchronize() const;
  // The same for destructors: waits, and reports a failure on stderr instead of throwing.
  void synchronize_noexcept() const noexcept;

 private:
  Device device_;
  void* handle_ = nullptr;
};

}  // namespace surge
