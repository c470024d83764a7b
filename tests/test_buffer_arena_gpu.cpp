// BufferArena replicas on CUDA, as test_buffer_arena checks them on the CPU. Runs only where a usable GPU exists.
#include <catch2/catch.hpp>

#include "sim/device.hpp"
#include "tests/support/buffer_arena_cases.hpp"

TEST_CASE("a CUDA arena of three replicas: layout, plan, independence, save and restore of one replica",
          "[buffer_arena][gpu]") {
  surge::testing::check_arena_replicas(surge::Device::cuda(0));
}

TEST_CASE("CUDA: rows of every saved entry saved and restored alone, a damaged save refused before any write",
          "[buffer_arena][gpu]") {
  surge::testing::check_saved_rows(surge::Device::cuda(0));
}
