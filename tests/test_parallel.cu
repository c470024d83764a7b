// parallel_for and parallel_reduce on the CPU backend: every index visited once, and reductions
// whose bits do not depend on the OpenMP thread count.
#include <omp.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/memory.hpp"
#include "sim/parallel.cuh"
#include "sim/runtime_internal.hpp"

using surge::Device;
using surge::DeviceBuffer;
using surge::Stream;

namespace {

// Sums values whose totals depend on the order of additions: 1/(i+1), (-1)^i * sqrt(i) and i*1e-3.
std::vector<double> reduce_with_threads(int threads, std::int64_t n) {
  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(threads);
  Stream stream(Device::cpu());
  DeviceBuffer<double> out(Device::cpu(), 3);
  DeviceBuffer<double> scratch(Device::cpu(), surge::reduce_scratch_size(Device::cpu(), 3));
  surge::parallel_reduce<3>(
      stream, n,
      [=] SURGE_HD(std::int64_t i, double* acc) {
        acc[0] += 1.0 / static_cast<double>(i + 1);
        acc[1] += (i % 2 ? -1.0 : 1.0) * std::sqrt(static_cast<double>(i));
        acc[2] += static_cast<double>(i) * 1e-3;
      },
      scratch.data(), out.data());
  stream.synchronize();
  omp_set_num_threads(threads_before);
  return std::vector<double>(out.data(), out.data() + 3);
}

}  // namespace

TEST_CASE("parallel_for visits every index exactly once", "[parallel]") {
  Stream stream(Device::cpu());
  for (std::int64_t n :
       {std::int64_t(0), std::int64_t(1), std::int64_t(2047), std::int64_t(2048), std::int64_t(100003)}) {
    DeviceBuffer<std::int32_t> visits(Device::cpu(), n);
    std::fill(visits.data(), visits.data() + n, 0);
    std::int32_t* counts = visits.data();
    surge::parallel_for(stream, n, [=] SURGE_HD(std::int64_t i) { counts[i] += 1; });
    stream.synchronize();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) wrong += visits.data()[i] != 1;
    INFO("n = " << n);
    CHECK(wrong == 0);
  }
}

TEST_CASE("parallel_reduce sums correctly, with the same bits for any thread count", "[parallel]") {
  for (std::int64_t n : {std::int64_t(1), std::int64_t(63), std::int64_t(5000), std::int64_t(200001)}) {
    INFO("n = " << n);
    const std::vector<double> one = reduce_with_threads(1, n);
    // Reference sums in long double, in index order.
    long double harmonic = 0, alternating = 0, linear = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      harmonic += 1.0L / static_cast<long double>(i + 1);
      alternating += (i % 2 ? -1.0L : 1.0L) * std::sqrt(static_cast<long double>(i));
      linear += static_cast<long double>(i) * 1e-3L;
    }
    const long double reference[3] = {harmonic, alternating, linear};
    for (int k = 0; k < 3; ++k)
      CHECK(std::fabs(one[k] - static_cast<double>(reference[k])) <=
            1e-9 + 1e-12 * std::fabs(static_cast<double>(reference[k])));
    for (int threads : {2, 3, 7}) {
      INFO(threads << " threads");
      const std::vector<double> many = reduce_with_threads(threads, n);
      CHECK(std::memcmp(one.data(), many.data(), 3 * sizeof(double)) == 0);
    }
  }
}

TEST_CASE("the order-free test mode visits every item once, out of order", "[parallel]") {
  // Runs under every SURGE_CPU_ORDER (ctest's order_* tests); sequential has no visiting order to check.
  if (surge::cpu_order() == surge::CpuOrder::kSequential) return;
  const std::int64_t n = 1000;
  const std::vector<std::int64_t> first = surge::cpu_visit_order(n), second = surge::cpu_visit_order(n);
  std::vector<std::int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::int64_t in_place = 0, misplaced = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    misplaced += sorted[k] != k;
    in_place += first[k] == k;
  }
  CHECK(misplaced == 0);
  CHECK(in_place < n / 10);
  if (surge::cpu_order() == surge::CpuOrder::kReverse) {
    CHECK(first.front() == n - 1);
    CHECK(first == second);
  } else {
    CHECK(first != second);
  }
}
