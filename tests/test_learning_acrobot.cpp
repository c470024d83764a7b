// PPO on the CPU backend with Acrobot's built-in config reaches Gymnasium's threshold of -100.
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU solves Acrobot (return_last100 >= -100)", "[learning]") {
  surge::testing::check_learns({"acrobot", -100.0, 200000, "--seed 3"});
}
