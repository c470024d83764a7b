// Events, staging memory and row copies for both backends (see transfer.hpp). Compiled by nvcc
// when CUDA is on, otherwise as plain C++ with the CUDA branches left out.
#include "sim/transfer.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "sim/device_guard.hpp"
#include "sim/error.hpp"
#include "sim/runtime_internal.hpp"

#if defined(__CUDACC__)
#include "sim/cuda_check.hpp"
#endif

namespace surge {

// ---- events ----------------------------------------------------------------------------------

#if defined(__CUDACC__)
namespace {
cudaEvent_t cuda_event(const NativeHandle& handle) { return static_cast<cudaEvent_t>(handle.get()); }
void destroy_event(void* event) { SURGE_CUDA_CHECK_NOTHROW(cudaEventDestroy(static_cast<cudaEvent_t>(event))); }
}  // namespace
#endif

Event::Event(Device device, bool blocking_sync, bool timing) : device_(device) {
  if (device.is_cuda()) {
#if defined(__CUDACC__)
    const DeviceGuard guard(device);
    cudaEvent_t event = nullptr;
    const unsigned flags = (timing ? 0u : cudaEventDisableTiming) | (blocking_sync ? cudaEventBlockingSync : 0u);
    SURGE_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
    handle_ = NativeHandle(event, destroy_event);
#else
    (void)blocking_sync;
    (void)timing;
    throw Error("cannot create a CUDA event: " + cuda_status().reason);
#endif
  }
}

void Event::record(const Stream& stream) {
  SURGE_CHECK(stream.device() == device_, "event and stream on different devices");
#if defined(__CUDACC__)
  if (handle_) {
    const DeviceGuard guard(device_);
    SURGE_CUDA_CHECK(cudaEventRecord(cuda_event(handle_), static_cast<cudaStream_t>(stream.native_handle())));
  }
#endif
}

void Event::wait(const Stream& stream) const {
#if defined(__CUDACC__)
  if (handle_ && stream.device().is_cuda()) {
    const DeviceGuard guard(stream.device());
    SURGE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream.native_handle()), cuda_event(handle_), 0));
  }
#else
  (void)stream;
#endif
}

void Event::synchronize() const {
#if defined(__CUDACC__)
  if (handle_) SURGE_CUDA_CHECK(cudaEventSynchronize(cuda_event(handle_)));
#endif
}

void Event::synchronize_noexcept() const noexcept {
#if defined(__CUDACC__)
  if (handle_) SURGE_CUDA_CHECK_NOTHROW(cudaEventSynchronize(cuda_event(handle_)));
#endif
}

double Event::seconds_since(const Event& start) const {
  SURGE_CHECK(handle_ && start.handle_, "only two CUDA events measure the time between them");
  float milliseconds = 0.0f;
#if defined(__CUDACC__)
  SURGE_CUDA_CHECK(cudaEventSynchronize(cuda_event(handle_)));
  SURGE_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, cuda_event(start.handle_), cuda_event(handle_)));
#endif
  return milliseconds * 1e-3;
}

// ---- staging memory --------------------------------------------------------------------------

StagingBuffer::StagingBuffer(Device device, std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  if (device.is_cuda()) {
#if defined(__CUDACC__)
    const DeviceGuard guard(device);
    SURGE_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault));
    pinned_ = true;
    return;
#else
    throw Error("cannot allocate page-locked memory for " + device.str() + ": " + cuda_status().reason);
#endif
  }
  constexpr std::size_t alignment = 256;
  data_ = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (!data_) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes of staging memory");
}

StagingBuffer::~StagingBuffer() { release(); }

StagingBuffer::StagingBuffer(StagingBuffer&& other) noexcept { *this = std::move(other); }

StagingBuffer& StagingBuffer::operator=(StagingBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

void StagingBuffer::release() noexcept {
  if (!data_) return;
#if defined(__CUDACC__)
  if (pinned_) {
    SURGE_CUDA_CHECK_NOTHROW(cudaFreeHost(data_));
    data_ = nullptr;
    return;
  }
#endif
  std::free(data_);
  data_ = nullptr;
}

// ---- row copies ------------------------------------------------------------------------------

RowCopyMethod copy_plan(std::size_t dst_pitch, std::size_t src_pitch, std::size_t row_bytes, std::size_t rows,
                        std::size_t max_pitch) {
  if (rows <= 1 || (dst_pitch == row_bytes && src_pitch == row_bytes)) return RowCopyMethod::Contiguous;
  if (dst_pitch <= max_pitch && src_pitch <= max_pitch) return RowCopyMethod::Pitched;
  return RowCopyMethod::RowByRow;
}

#if defined(__CUDACC__)
namespace {
// cudaDevAttrMaxPitch, cached per device.
std::size_t device_max_pitch(int device_index) {
  static std::mutex mutex;
  static std::size_t cached[64] = {};
  std::lock_guard<std::mutex> lock(mutex);
  if (device_index < 0 || device_index >= 64) return 0;
  if (cached[device_index] == 0) {
    int pitch = 0;
    SURGE_CUDA_CHECK(cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, device_index));
    cached[device_index] = static_cast<std::size_t>(pitch > 0 ? pitch : 1);
  }
  return cached[device_index];
}
}  // namespace
#endif

void copy_rows(void* dst, std::size_t dst_pitch, Device dst_device, const void* src, std::size_t src_pitch,
               Device src_device, std::size_t row_bytes, std::size_t rows, const Stream& stream,
               std::size_t max_pitch) {
  SURGE_CHECK(row_bytes <= dst_pitch && row_bytes <= src_pitch, "row wider than its pitch");
  if (row_bytes == 0 || rows == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    for (std::size_t k = 0; k < rows; ++k)
      std::memcpy(static_cast<char*>(dst) + k * dst_pitch, static_cast<const char*>(src) + k * src_pitch, row_bytes);
    return;
  }
#if defined(__CUDACC__)
  const Device gpu = copy_device(dst_device, src_device, stream);
  const DeviceGuard guard(gpu);
  const auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
  if (max_pitch == 0) max_pitch = device_max_pitch(gpu.index);
  switch (copy_plan(dst_pitch, src_pitch, row_bytes, rows, max_pitch)) {
    case RowCopyMethod::Pitched:
      SURGE_CUDA_CHECK(
          cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDefault, cuda_stream));
      return;
    case RowCopyMethod::Contiguous:
      SURGE_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, rows == 1 ? row_bytes : rows * row_bytes, cudaMemcpyDefault, cuda_stream));
      return;
    case RowCopyMethod::RowByRow:
      for (std::size_t k = 0; k < rows; ++k)
        SURGE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + k * dst_pitch,
                                         static_cast<const char*>(src) + k * src_pitch, row_bytes, cudaMemcpyDefault,
                                         cuda_stream));
      return;
  }
#else
  (void)stream;
  (void)max_pitch;
  throw Error("cannot copy to or from a GPU: " + cuda_status().reason);
#endif
}

}  // namespace surge
