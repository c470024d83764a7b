// PPO with a Gaussian policy on the CPU backend, with MountainCarContinuous's built-in config, finds the
// goal and reaches Gymnasium's threshold of 90 (a policy that stands still scores about 0).
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU solves MountainCarContinuous (return_last100 >= 90)", "[learning][gaussian]") {
  surge::testing::check_learns({"mountain_car_continuous", 90.0, 1500000, "--seed 2"});
}
