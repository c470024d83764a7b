// PPO on the CPU backend learns CartPole from pixels with scenarios/configs/cartpole_pixels.toml: within
// 100k steps (under two minutes of this 2-core machine's CPU when it is not shared), return_last100
// reaches three times a random policy's (about 22).
#include "tests/support/learning_check.hpp"

TEST_CASE("PPO on the CPU learns CartPole from pixels (return_last100 >= 66)", "[learning][pixels]") {
  surge::testing::check_learns({"cartpole", 66.0, 100000, "--config '" SURGE_PIXEL_CONFIG "' --seed 1"});
}
