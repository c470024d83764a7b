#include "sim/memory_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/cuda_probe.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge {
namespace {

// "MemAvailable:   23456789 kB" -> bytes; 0 when absent.
std::size_t read_mem_available() {
  std::ifstream file("/proc/meminfo");
  std::string key, unit;
  std::size_t value = 0;
  while (file >> key >> value) {
    std::getline(file, unit);
    if (key == "MemAvailable:") return value * 1024;
  }
  return 0;
}

// A container's memory limit (cgroup v2, then v1) minus what it already uses; max() when unlimited.
std::size_t read_cgroup_headroom() {
  auto read_number = [](const char* path, std::size_t& out) {
    std::ifstream file(path);
    std::string text;
    if (!(file >> text) || text == "max") return false;
    try {
      out = static_cast<std::size_t>(std::stoull(text));
    } catch (...) {
      return false;
    }
    return true;
  };
  std::size_t limit = 0, used = 0;
  if (read_number("/sys/fs/cgroup/memory.max", limit) && read_number("/sys/fs/cgroup/memory.current", used))
    return limit > used ? limit - used : 0;
  if (read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", limit) &&
      read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", used) && limit < (std::size_t(1) << 60))
    return limit > used ? limit - used : 0;
  return std::numeric_limits<std::size_t>::max();
}

std::size_t read_mem_total() {
  std::ifstream file("/proc/meminfo");
  std::string key, unit;
  std::size_t value = 0;
  if (file >> key >> value && key == "MemTotal:") return value * 1024;
  return 0;
}

}  // namespace

AvailableMemory available_memory(Device device) {
  AvailableMemory available;
  if (device.is_cuda()) {
    available.known = gpu_memory_info(device.index, available.free_bytes, available.total_bytes);
    available.source = "cudaMemGetInfo on " + device.str();
    return available;
  }
  const std::size_t mem_available = read_mem_available();
  const std::size_t headroom = read_cgroup_headroom();
  available.known = mem_available > 0;
  available.free_bytes = std::min(mem_available, headroom);
  available.total_bytes = read_mem_total();
  available.source =
      headroom < mem_available ? "the container's memory limit (cgroup)" : "MemAvailable in /proc/meminfo";
  return available;
}

MemoryPlan& MemoryPlan::add(std::string name, std::string shape, std::int64_t elements, std::size_t element_bytes,
                            std::int64_t replicas) {
  SURGE_CHECK(elements >= 0, "negative element count for " + name);
  SURGE_CHECK(replicas >= 1 && elements % replicas == 0,
              name + ": " + std::to_string(elements) + " elements are not " + std::to_string(replicas) + " replicas");
  if (elements > 0) buffers_.push_back({std::move(name), std::move(shape), elements, element_bytes, replicas});
  return *this;
}

MemoryPlan& MemoryPlan::append(const MemoryPlan& other) {
  SURGE_CHECK(other.device_ == device_,
              "memory plans on " + other.device_.str() + " and " + device_.str() + " do not add up");
  buffers_.insert(buffers_.end(), other.buffers_.begin(), other.buffers_.end());
  return *this;
}

std::size_t MemoryPlan::bytes() const {
  std::size_t sum = 0;
  for (const PlannedBuffer& b : buffers_) sum += b.bytes();
  return sum;
}

std::size_t MemoryPlan::allocated_bytes() const {
  std::size_t sum = 0;
  for (const PlannedBuffer& b : buffers_) sum += b.allocated_bytes();
  return sum;
}

std::string MemoryPlan::table(const AvailableMemory& available) const {
  std::size_t name_width = 6, shape_width = 5;
  for (const PlannedBuffer& b : buffers_) {
    name_width = std::max(name_width, b.name.size());
    shape_width = std::max(shape_width, b.shape.size());
  }
  std::ostringstream out;
  char line[512];
  out << "memory plan on " << device_.str() << " (each allocation rounded up to " << kAllocationGranule << " bytes):\n";
  std::snprintf(line, sizeof line, "  %-*s  %-*s  %14s  %5s  %12s\n", static_cast<int>(name_width), "buffer",
                static_cast<int>(shape_width), "shape", "elements", "bytes", "size");
  out << line;
  for (const PlannedBuffer& b : buffers_) {
    std::snprintf(line, sizeof line, "  %-*s  %-*s  %14lld  %5zu  %12s\n", static_cast<int>(name_width), b.name.c_str(),
                  static_cast<int>(shape_width), b.shape.c_str(), static_cast<long long>(b.elements), b.element_bytes,
                  format_bytes(b.allocated_bytes()).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-*s  %12s  (%zu bytes)\n",
                static_cast<int>(name_width + shape_width + 14 + 5 + 6), "total",
                format_bytes(allocated_bytes()).c_str(), allocated_bytes());
  out << line;
  if (available.known) {
    out << "  free on " << device_.str() << ": " << format_bytes(available.free_bytes);
    if (available.total_bytes) out << " of " << format_bytes(available.total_bytes);
    out << " (" << available.source << "): " << (fits(available) ? "fits" : "does NOT fit") << "\n";
  } else {
    out << "  free on " << device_.str() << ": unknown (" << available.source << " failed)\n";
  }
  return out.str();
}

void MemoryPlan::require_fits(const std::string& what, const std::string& way_out) const {
  const AvailableMemory available = available_memory(device_);
  if (!available.known || fits(available)) return;
  throw InputError(what + " needs " + format_bytes(allocated_bytes()) + " on " + device_.str() + " but only " +
                   format_bytes(available.free_bytes) + " is free; " + way_out + "\n" + table(available));
}

}  // namespace surge
