// The batched learner's launchers (rl/batched_kernels.hpp) on CUDA: the CPU test's cases
// (tests/support/batched_kernel_cases.hpp), each batched launch against K per-agent launches on the GPU, bit
// for bit (the segmented reductions use parallel_reduce's blocks, stride and tree). Runs only where a usable
// GPU exists.
#include <catch2/catch.hpp>

#include "tests/support/batched_kernel_cases.hpp"

using surge::Device;

TEST_CASE("a segmented sum of squares gives every agent parallel_reduce's bits on CUDA", "[batched_kernels][gpu]") {
  surge::testing::check_batched_gradient_norms(Device::cuda(0));
}
TEST_CASE("a segmented reduction of width 4 gives every agent its explained-variance sums on CUDA",
          "[batched_kernels][gpu]") {
  surge::testing::check_batched_explained_variance(Device::cuda(0));
}
TEST_CASE("batched GAE reads each agent's gamma and lambda on CUDA", "[batched_kernels][gpu]") {
  surge::testing::check_batched_gae(Device::cuda(0));
}
TEST_CASE("batched Adam steps each agent with its own norm, clip, eps, learning rate and freeze on CUDA",
          "[batched_kernels][gpu]") {
  surge::testing::check_batched_adam(Device::cuda(0));
}
TEST_CASE("batched begin_iteration and end_epoch anneal and freeze per agent on CUDA", "[batched_kernels][gpu]") {
  surge::testing::check_batched_iteration_bookkeeping(Device::cuda(0));
}
TEST_CASE("batched categorical draws follow each agent's seed and counter on CUDA", "[batched_kernels][gpu]") {
  surge::testing::check_batched_actions(Device::cuda(0));
}
