// The batched episode bookkeeping and metrics launchers (rl/batched_kernels.hpp) on CUDA: the CPU test's
// cases (tests/support/batched_bookkeeping_cases.hpp), each batched launch against K per-agent launches on
// the GPU, bit for bit. Runs only where a usable GPU exists.
#include <catch2/catch.hpp>

#include "tests/support/batched_bookkeeping_cases.hpp"

using surge::Device;

TEST_CASE("batched episode tracking, recent returns and metrics equal each agent's own on CUDA",
          "[batched_bookkeeping][gpu]") {
  surge::testing::check_batched_bookkeeping(Device::cuda(0));
}
TEST_CASE("batched fill and copy touch only each agent's slice on CUDA", "[batched_bookkeeping][gpu]") {
  surge::testing::check_batched_fill_copy(Device::cuda(0));
}
