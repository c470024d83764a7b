// PPO on the CPU backend with CartPole's built-in config reaches Gymnasium's threshold of 475.
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU solves CartPole (return_last100 >= 475)", "[learning]") {
  surge::testing::check_learns({"cartpole", 475.0, 500000, "--seed 3"});
}
