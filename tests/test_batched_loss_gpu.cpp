// The batched minibatch gather, PPO losses and Gaussian draws on CUDA: the CPU test's cases
// (tests/support/batched_loss_cases.hpp), each batched launch against K per-agent launches on the GPU, bit
// for bit: the gather copies rows, the draws run the per-agent code, and the losses' segmented reductions
// use parallel_reduce's blocks, stride and tree around the same per-sample functors. Runs only where a
// usable GPU exists.
#include <catch2/catch.hpp>

#include "tests/support/batched_loss_cases.hpp"

TEST_CASE("the batched gather, PPO losses and Gaussian draws give every agent its own bits on CUDA",
          "[batched_loss][gpu]") {
  surge::testing::check_batched_loss_pieces(surge::Device::cuda(0));
}
