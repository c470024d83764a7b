// The batched minibatch gather, PPO losses and Gaussian draws (rl/batched_loss.hpp, rl/batched_kernels.hpp)
// on the CPU: each agent of a batched call equals the per-agent launcher on its slices, bit for bit (rows,
// draws, gradients, term sums, advantage statistics), for one agent and three, odd sizes and padded
// strides, and a comparison with the next agent's seed, iteration or loss scalars fails
// (tests/support/batched_loss_cases.hpp).
#include <catch2/catch.hpp>

#include "tests/support/batched_loss_cases.hpp"

TEST_CASE("the batched gather, PPO losses and Gaussian draws give every agent its own bits on the CPU",
          "[batched_loss]") {
  surge::testing::check_batched_loss_pieces(surge::Device::cpu());
}
