#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/device.hpp"
#include "sim/error.hpp"
#include "sim/hd.hpp"
#include "sim/stream.hpp"

namespace surge {

// Raw memory on a device. Allocations are 256-byte aligned on both backends.
void* device_alloc(Device device, std::size_t bytes);
void device_free(Device device, void* pointer) noexcept;
// Copies bytes between any two devices; ordered on `stream` (asynchronous on CUDA when it can be).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes,
                const Stream& stream);
void zero_bytes(void* dst, Device device, std::size_t bytes, const Stream& stream);

// A non-owning, trivially copyable view of `size` contiguous elements on `device`.
// Kernels take views by value.
template <class T>
struct Span {
  T* data = nullptr;
  std::int64_t size = 0;
  Device device = Device::cpu();

  SURGE_HD_INLINE T& operator[](std::int64_t i) const { return data[i]; }
  SURGE_HD_INLINE bool empty() const { return size == 0; }
  std::size_t bytes() const { return static_cast<std::size_t>(size) * sizeof(T); }
  Span<T> slice(std::int64_t offset, std::int64_t count) const {
    SURGE_CHECK(offset >= 0 && count >= 0 && offset + count <= size, "slice out of range");
    return {data + offset, count, device};
  }
  template <class U = T, std::enable_if_t<!std::is_const_v<U>, int> = 0>
  operator Span<const U>() const {
    return {data, size, device};
  }
};

// Owns `size` elements on one device. Owners move; views copy.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable types");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device device, std::int64_t size) : size_(size), device_(device) {
    SURGE_CHECK(size >= 0, "negative buffer size");
    if (size > 0) data_ = static_cast<T*>(device_alloc(device, static_cast<std::size_t>(size) * sizeof(T)));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      device_ = other.device_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::int64_t size() const { return size_; }
  std::size_t bytes() const { return static_cast<std::size_t>(size_) * sizeof(T); }
  Device device() const { return device_; }
  Span<T> span() const { return {data_, size_, device_}; }
  Span<const T> cspan() const { return {data_, size_, device_}; }

 private:
  void release() noexcept {
    if (data_) device_free(device_, data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::int64_t size_ = 0;
  Device device_ = Device::cpu();
};

// Host <-> device helpers for set-up, tests and the command line (not for hot loops).
template <class T>
void copy(Span<T> dst, Span<const T> src, const Stream& stream) {
  SURGE_CHECK(dst.size == src.size, "copy between views of different sizes");
  copy_bytes(dst.data, dst.device, src.data, src.device, src.bytes(), stream);
}
template <class T>
std::vector<T> to_host(Span<const T> src, const Stream& stream) {
  std::vector<T> out(static_cast<std::size_t>(src.size));
  copy_bytes(out.data(), Device::cpu(), src.data, src.device, src.bytes(), stream);
  stream.synchronize();
  return out;
}
template <class T>
std::vector<T> to_host(Span<T> src, const Stream& stream) {
  return to_host(Span<const T>(src), stream);
}
template <class T>
void from_host(Span<T> dst, const std::vector<T>& src, const Stream& stream) {
  SURGE_CHECK(static_cast<std::int64_t>(src.size()) == dst.size, "host vector and view differ in size");
  copy_bytes(dst.data, dst.device, src.data(), Device::cpu(), dst.bytes(), stream);
  stream.synchronize();  // the host vector may go away as soon as we return
}

}  // namespace surge
