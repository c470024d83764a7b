#pragma once
// Makes a GPU the calling thread's current CUDA device for a scope. Every path that enqueues work or
// calls a CUDA library (launches, copies, events, graphs, cuBLASLt) holds one, so that work for cuda:1
// goes to cuda:1 whatever device the thread was on, and the caller finds its own device again after.
#include "sim/device.hpp"

namespace surge {

class DeviceGuard {
 public:
  // Nothing on the CPU; on CUDA, one cudaGetDevice, and a cudaSetDevice only when `device` is not current.
  explicit DeviceGuard(Device device);
  ~DeviceGuard();  // restores the previous device, reporting (never throwing) a failure
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // The calling thread's current CUDA device; -1 in a build without CUDA.
  static int current_cuda_device();

 private:
  int previous_ = -1;  // the device to restore; -1 when the guard changed nothing
};

}  // namespace surge
