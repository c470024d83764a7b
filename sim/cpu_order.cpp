// The CPU backend's order-free test mode (SURGE_CPU_ORDER): see runtime_internal.hpp.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>

#include "sim/error.hpp"
#include "sim/runtime_internal.hpp"

namespace surge {

CpuOrder cpu_order() {
  static const CpuOrder order = [] {
    const char* value = std::getenv("SURGE_CPU_ORDER");
    const std::string name = value ? value : "";
    if (name.empty() || name == "sequential") return CpuOrder::kSequential;
    if (name == "reverse") return CpuOrder::kReverse;
    if (name == "shuffle") return CpuOrder::kShuffle;
    throw InputError("SURGE_CPU_ORDER=" + name + ": use sequential, reverse or shuffle (or leave it unset)");
  }();
  return order;
}

std::vector<std::int64_t> cpu_visit_order(std::int64_t n) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.rbegin(), order.rend(), std::int64_t{0});
  if (cpu_order() == CpuOrder::kShuffle) {
    static std::atomic<std::uint64_t> calls{0};
    std::mt19937_64 generator(0x5eed0de5ULL + calls.fetch_add(1, std::memory_order_relaxed));
    std::shuffle(order.begin(), order.end(), generator);
  }
  return order;
}

bool cpu_loop_forks(bool wants) {
  return wants && omp_get_max_threads() > 1 && omp_get_active_level() < omp_get_max_active_levels();
}

}  // namespace surge
