// The batched observation normalisation and reward scaling (rl/batched_kernels.hpp) on the CPU: each agent
// of a batched call equals update_moments, normalize_rows and scale_rewards on its slices, bit for bit, for
// one agent and three over several calls, and a comparison with the next agent's inputs and scalars fails
// (tests/support/batched_normalization_cases.hpp).
#include <catch2/catch.hpp>

#include "tests/support/batched_normalization_cases.hpp"

using surge::Device;

TEST_CASE("batched observation moments and normalisation equal each agent's own on the CPU",
          "[batched_normalization]") {
  surge::testing::check_batched_observation_normalization(Device::cpu());
}
TEST_CASE("batched reward scaling follows each agent's gamma, clip and episodes on the CPU",
          "[batched_normalization]") {
  surge::testing::check_batched_reward_scaling(Device::cpu());
}
