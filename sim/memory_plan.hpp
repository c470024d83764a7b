#pragma once
// The device memory a run will take, worked out before anything is allocated: named buffers with
// their shapes and sizes, the total, and whether it fits in what the device has free. A run that
// would not fit stops before it starts, with this plan in its message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/device.hpp"

namespace surge {

// device_alloc rounds every allocation up to this many bytes (its alignment).
inline constexpr std::size_t kAllocationGranule = 256;
inline constexpr std::size_t allocation_bytes(std::size_t bytes) {
  return (bytes + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
}

struct PlannedBuffer {
  std::string name;           // "rollout.obs"
  std::string shape;          // "[T][N][obs_dim]"
  std::int64_t elements = 0;  // of all replicas together
  std::size_t element_bytes = 0;
  // Copies of the buffer, each rounded up on its own: one entry of a BufferArena of that many replicas.
  std::int64_t replicas = 1;

  std::size_t bytes() const { return static_cast<std::size_t>(elements) * element_bytes; }  // as DeviceBuffer::bytes()
  // As device_alloc takes it, or as the replicas of an arena take it together.
  std::size_t allocated_bytes() const {
    return static_cast<std::size_t>(replicas) * allocation_bytes(bytes() / static_cast<std::size_t>(replicas));
  }
};

// Memory a device has free for new allocations.
struct AvailableMemory {
  bool known = false;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  std::string source;  // "cudaMemGetInfo on cuda:0" or "MemAvailable in /proc/meminfo"
};
// cudaMemGetInfo on a GPU; on the CPU, MemAvailable from /proc/meminfo, capped by a cgroup memory limit.
AvailableMemory available_memory(Device device);

class MemoryPlan {
 public:
  explicit MemoryPlan(Device device) : device_(device) {}

  // Buffers of zero elements allocate nothing and are left out. `elements` counts all `replicas` together.
  MemoryPlan& add(std::string name, std::string shape, std::int64_t elements, std::size_t element_bytes,
                  std::int64_t replicas = 1);
  template <class T>
  MemoryPlan& add(std::string name, std::string shape, std::int64_t elements) {
    return add(std::move(name), std::move(shape), elements, sizeof(T));
  }
  MemoryPlan& append(const MemoryPlan& other);  // another plan's buffers, on the same device

  Device device() const { return device_; }
  const std::vector<PlannedBuffer>& buffers() const { return buffers_; }
  std::size_t bytes() const;            // the sum of the buffers' sizes
  std::size_t allocated_bytes() const;  // the same, each rounded up as device_alloc does: the total
  bool fits(const AvailableMemory& available) const {
    return available.known && allocated_bytes() <= available.free_bytes;
  }
  bool fits() const { return fits(available_memory(device_)); }

  // The plan as a table, one buffer per line, with the total and (when known) what is free.
  std::string table(const AvailableMemory& available) const;
  // Throws InputError when the plan does not fit on its device: the first line says by how much and
  // `way_out`, the table follows. Does nothing when the free memory cannot be measured.
  void require_fits(const std::string& what, const std::string& way_out) const;

 private:
  Device device_;
  std::vector<PlannedBuffer> buffers_;
};

}  // namespace surge
