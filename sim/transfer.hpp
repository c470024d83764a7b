#pragma once
// Copies off the compute stream: events that order two streams, host memory that a GPU can copy
// into asynchronously (page-locked), and strided row copies. On the CPU backend streams run their
// work at once, so events are no-ops and the memory is plain aligned host memory.
#include <cstddef>
#include <cstdint>

#include "sim/device.hpp"
#include "sim/native_handle.hpp"
#include "sim/stream.hpp"

namespace surge {

// A point in a stream's work. record() marks it; wait() orders another stream after it without
// blocking the host; synchronize() blocks the calling thread (any thread) until it is reached.
class Event {
 public:
  // With `blocking_sync`, synchronize() sleeps instead of spinning (for threads that wait long); with
  // `timing`, seconds_since() can measure between two events.
  explicit Event(Device device = Device::cpu(), bool blocking_sync = false, bool timing = false);

  void record(const Stream& stream);
  void wait(const Stream& stream) const;  // work enqueued on `stream` later runs after the recorded point
  void synchronize() const;
  // The same for destructors: waits, and reports a failure on stderr instead of throwing.
  void synchronize_noexcept() const noexcept;
  // Waits for this event and returns the seconds from `start` to it; both made with `timing` on CUDA.
  double seconds_since(const Event& start) const;

 private:
  Device device_;
  NativeHandle handle_ = no_native_handle();  // cudaEvent_t on CUDA
};

// Host memory for copies from `device`: page-locked when `device` is a GPU (so that copies into it
// are truly asynchronous), plain 256-byte-aligned memory otherwise. Owners move.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(Device device, std::size_t bytes);
  ~StagingBuffer();
  StagingBuffer(StagingBuffer&& other) noexcept;
  StagingBuffer& operator=(StagingBuffer&& other) noexcept;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool pinned_ = false;
};

// How copy_rows moves its rows on CUDA. cudaMemcpy2DAsync refuses a pitch above the device's maximum
// (cudaDevAttrMaxPitch, 2^31-1 bytes: a rollout log of 2^27 environments with 16-byte observations
// reaches it), so wider pitches fall back to one linear copy when the rows touch, else one per row.
enum class RowCopyMethod : std::uint8_t {
  Pitched,     // one cudaMemcpy2DAsync
  Contiguous,  // one linear copy of rows * row_bytes (rows that touch on both sides, or a single row)
  RowByRow,    // one linear copy per row
};
// The choice, as a pure function of the shapes and the largest pitch the device accepts.
RowCopyMethod copy_plan(std::size_t dst_pitch, std::size_t src_pitch, std::size_t row_bytes, std::size_t rows,
                        std::size_t max_pitch);

// Copies `rows` rows of `row_bytes` each, row k from src + k*src_pitch to dst + k*dst_pitch, ordered
// on `stream` (asynchronous on CUDA; done on return on the CPU). `max_pitch` is the largest pitch a
// pitched copy may use: 0 means the device's own; tests pass a small one to force the fallbacks.
void copy_rows(void* dst, std::size_t dst_pitch, Device dst_device, const void* src, std::size_t src_pitch,
               Device src_device, std::size_t row_bytes, std::size_t rows, const Stream& stream,
               std::size_t max_pitch = 0);

}  // namespace surge
