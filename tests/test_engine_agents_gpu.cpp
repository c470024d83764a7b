// One engine of K agents on CUDA: its one step launch over K*N environments (AgentStepKernel), the agents'
// resets and random streams, and each agent's episode statistics against K CUDA engines of one agent each, bit
// for bit, as test_engine_agents checks on the CPU. Runs only where a usable GPU exists.
#include <catch2/catch.hpp>

#include "sim/device.hpp"
#include "tests/support/engine_agents_cases.hpp"
#include "tests/support/engine_strided_cases.hpp"

TEST_CASE("each agent of a CUDA engine of three steps as a CUDA engine of its own seed and physics",
          "[engine_agents][gpu]") {
  surge::testing::check_agents_step_as_engines_alone(surge::Device::cuda(0));
}

TEST_CASE("agents of a CUDA engine whose seeds are swapped no longer match their own engines", "[engine_agents][gpu]") {
  surge::testing::check_swapped_seeds_differ(surge::Device::cuda(0));
}

TEST_CASE("agents of a CUDA engine stepping into buffers at a per-agent distance write the contiguous rows' bytes",
          "[engine_agents][gpu]") {
  surge::testing::check_agents_step_at_a_distance(surge::Device::cuda(0));
}
