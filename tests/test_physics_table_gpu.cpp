// engine.physics on CUDA: the trainer's captured iteration graph reads the physics table when it replays,
// so a range that set_physics narrows after the capture is what every later reset draws. Runs only where a
// usable GPU exists.
#include <catch2/catch.hpp>

#include "tests/test_physics_table_trainer.hpp"

TEST_CASE("a captured iteration graph draws resets from the physics table as it is at the replay",
          "[physics_table][gpu]") {
  surge::testing::check_iterations_follow_set_physics(surge::Device::cuda(0));
}
