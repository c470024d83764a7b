#pragma once
// Timing of work on a stream: CUDA events on the GPU, a steady clock on the CPU.
#include <chrono>
#include <cstddef>

#include "sim/stream.hpp"
#include "sim/transfer.hpp"

namespace surge {

class StreamTimer {
 public:
  explicit StreamTimer(const Stream& stream);

  void start();
  void stop();
  double seconds() const;  // waits for the work between start() and stop() to finish

 private:
  const Stream& stream_;
  Event start_event_, stop_event_;  // on a CUDA stream; empty on the CPU
  std::chrono::steady_clock::time_point host_start_{}, host_stop_{};
};

// Median rate of a device-to-device copy of `bytes` on `device`, counting bytes read plus bytes
// written per second: the ceiling a memory-bound kernel is measured against.
double measure_copy_bandwidth(Device device, std::size_t bytes, int repeats);

}  // namespace surge
