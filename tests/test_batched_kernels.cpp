// The batched learner's launchers (rl/batched_kernels.hpp) on the CPU: each agent of a batched call equals
// the per-agent launcher on its slice, bit for bit, for one agent, three agents and odd sizes, and a
// comparison with the neighbouring agent's scalars or seed fails (tests/support/batched_kernel_cases.hpp).
#include <catch2/catch.hpp>

#include "tests/support/batched_kernel_cases.hpp"

using surge::Device;

TEST_CASE("a segmented sum of squares gives every agent parallel_reduce's bits on the CPU", "[batched_kernels]") {
  surge::testing::check_batched_gradient_norms(Device::cpu());
}
TEST_CASE("a segmented reduction of width 4 gives every agent its explained-variance sums on the CPU",
          "[batched_kernels]") {
  surge::testing::check_batched_explained_variance(Device::cpu());
}
TEST_CASE("batched GAE reads each agent's gamma and lambda on the CPU", "[batched_kernels]") {
  surge::testing::check_batched_gae(Device::cpu());
}
TEST_CASE("batched Adam steps each agent with its own norm, clip, eps, learning rate and freeze on the CPU",
          "[batched_kernels]") {
  surge::testing::check_batched_adam(Device::cpu());
}
TEST_CASE("batched begin_iteration and end_epoch anneal and freeze per agent on the CPU", "[batched_kernels]") {
  surge::testing::check_batched_iteration_bookkeeping(Device::cpu());
}
TEST_CASE("batched categorical draws follow each agent's seed and counter on the CPU", "[batched_kernels]") {
  surge::testing::check_batched_actions(Device::cpu());
}
