// PPO on the CPU backend with MountainCar's built-in config (observation normalisation, reward scaling)
// reaches Gymnasium's threshold of -110, where CleanRL's settings stay at -200.
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU solves MountainCar (return_last100 >= -110)", "[learning]") {
  surge::testing::check_learns({"mountain_car", -110.0, 1000000, "--seed 3"});
}
