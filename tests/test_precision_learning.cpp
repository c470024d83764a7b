// Learning parity in bf16: PPO on the CPU in precision = "bf16" reaches each scenario's threshold with
// its built-in config, within the step budget of the fp32 learning tests (tests/test_learning_*.cpp),
// with their seeds. Where the CPU has no AVX-512 BF16, surge train refuses bf16 and this test says so.
#include "rl/fused_mlp_bf16.hpp"
#include "tests/support/learning_check.hpp"

namespace {

bool can_run_bf16() {
  if (surge::rl::bf16_native_supported()) return true;
  WARN("this CPU (or build) has no AVX-512 BF16: bf16 learning is not tested here");
  return false;
}

}  // namespace

TEST_CASE("PPO in bf16 solves CartPole (return_last100 >= 475)", "[learning][precision]") {
  if (can_run_bf16()) surge::testing::check_learns({"cartpole", 475.0, 500000, "--seed 3 --set precision=bf16"});
}

TEST_CASE("PPO in bf16 solves Acrobot (return_last100 >= -100)", "[learning][precision]") {
  if (can_run_bf16()) surge::testing::check_learns({"acrobot", -100.0, 200000, "--seed 3 --set precision=bf16"});
}

TEST_CASE("PPO in bf16 swings Pendulum up (return_last100 >= -250)", "[learning][precision]") {
  if (can_run_bf16()) surge::testing::check_learns({"pendulum", -250.0, 600000, "--seed 2 --set precision=bf16"});
}
