// The batched observation normalisation and reward scaling (rl/batched_kernels.hpp) on CUDA: the CPU test's
// cases (tests/support/batched_normalization_cases.hpp), each batched launch against K per-agent launches on
// the GPU, bit for bit (the segmented reductions use parallel_reduce's blocks, stride and tree). Runs only
// where a usable GPU exists.
#include <catch2/catch.hpp>

#include "tests/support/batched_normalization_cases.hpp"

using surge::Device;

TEST_CASE("batched observation moments and normalisation equal each agent's own on CUDA",
          "[batched_normalization][gpu]") {
  surge::testing::check_batched_observation_normalization(Device::cuda(0));
}
TEST_CASE("batched reward scaling follows each agent's gamma, clip and episodes on CUDA",
          "[batched_normalization][gpu]") {
  surge::testing::check_batched_reward_scaling(Device::cuda(0));
}
