// rl/batched_trainer on CUDA: three agents in one batched learner (one cuBLASLt call per GEMM for all of
// them, the iterations after the first replayed from one CUDA graph) against each agent's Trainer alone on
// CUDA. cuBLASLt may pick another kernel for a batch than for one matrix, and the trainer alone may take the
// fused CUDA MLP, so the parameters agree within float's reach after a few updates, not bit for bit; the
// bookkeeping (iterations, the first iteration's episodes) agrees exactly. Runs only on a GPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "tests/support/batched_trainer_cases.hpp"

namespace {

void check_close_to_alone(const std::string& scenario, bool normalize) {
  const int iterations = 3;
  auto configs = surge::testing::batched_agent_configs(64, 16, iterations, 21);
  for (auto& config : configs) config.normalize_obs = config.normalize_reward = normalize;
  bool captured = false;
  const auto together = surge::testing::run_batched(scenario, surge::Device::cuda(0), configs, iterations, &captured);
  CHECK(captured);
  for (std::size_t k = 0; k < configs.size(); ++k) {
    INFO(scenario << ", agent " << k);
    const auto alone = surge::testing::run_alone(scenario, surge::Device::cuda(0), configs[k], iterations);
    CHECK(together[k].state.iteration == alone.state.iteration);
    REQUIRE(together[k].metrics.size() == alone.metrics.size());
    CHECK(together[k].metrics.front().episodes == alone.metrics.front().episodes);
    REQUIRE(together[k].params.size() == alone.params.size());
    std::size_t far = 0;
    for (std::size_t i = 0; i < alone.params.size(); ++i) {
      const double a = together[k].params[i], b = alone.params[i];
      if (!(std::abs(a - b) <= 2e-3 + 2e-3 * std::abs(b))) ++far;
    }
    CHECK(far == 0);
  }
}

}  // namespace

TEST_CASE("batched learner on CUDA: CartPole agents close to their trainers alone, one graph for all",
          "[batched_trainer][gpu]") {
  check_close_to_alone("cartpole", false);
}

TEST_CASE("batched learner on CUDA: Pendulum agents (a Gaussian policy) with both normalisations",
          "[batched_trainer][gpu]") {
  check_close_to_alone("pendulum", true);
}
