// PPO with a Gaussian policy on the CPU backend, with Pendulum's built-in config, swings the pendulum
// up: return_last100 >= -250 (a policy that does not swing up loses about 1200 per episode).
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU swings Pendulum up (return_last100 >= -250)", "[learning][gaussian]") {
  surge::testing::check_learns({"pendulum", -250.0, 600000, "--seed 2"});
}
