// BufferArena replicas on the CPU: K copies of one table's layout at a fixed distance in one allocation, each
// zeroed, aligned and independent, saved and restored one replica at a time, planned as allocated.
#include <catch2/catch.hpp>

#include "sim/device.hpp"
#include "tests/support/buffer_arena_cases.hpp"

TEST_CASE("an arena of three replicas: layout, plan, independence, save and restore of one replica", "[buffer_arena]") {
  surge::testing::check_arena_replicas(surge::Device::cpu());
}

TEST_CASE("rows of every saved entry: saved and restored alone, a damaged save refused before any write",
          "[buffer_arena]") {
  surge::testing::check_saved_rows(surge::Device::cpu());
}
