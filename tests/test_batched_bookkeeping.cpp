// The batched episode bookkeeping and metrics launchers (rl/batched_kernels.hpp) on the CPU: each agent of a
// batched call equals the per-agent launcher on its slices, bit for bit, for one agent and three, rollouts
// below and above kFinishedChunk^2 slots and several iterations, and a comparison with the next agent's
// inputs fails (tests/support/batched_bookkeeping_cases.hpp).
#include <catch2/catch.hpp>

#include "tests/support/batched_bookkeeping_cases.hpp"

using surge::Device;

TEST_CASE("batched episode tracking, recent returns and metrics equal each agent's own on the CPU",
          "[batched_bookkeeping]") {
  surge::testing::check_batched_bookkeeping(Device::cpu());
}
TEST_CASE("batched fill and copy touch only each agent's slice on the CPU", "[batched_bookkeeping]") {
  surge::testing::check_batched_fill_copy(Device::cpu());
}
