#pragma once
// A trainer's iterations draw their resets from the physics table as it is when they run: narrowed by
// set_physics between iterations, every environment that resets afterwards has exactly the narrowed
// value, and every one that has not keeps the parameters it had. Shared by test_physics_table (CPU) and
// test_physics_table_gpu (CUDA, where the iterations after the first replay one captured graph).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "tests/support/randomized_physics.hpp"
#include "tests/support/small_train_config.hpp"

namespace surge::testing {

inline void check_iterations_follow_set_physics(Device device) {
  rl::TrainConfig config = small_train_config(64, 16, 12, {32, 32}, 5);
  config.cuda_graph = true;
  const PhysicsConfig wide = randomized_physics();
  auto engine = make_engine("cartpole", device, config.num_envs, config.seed, wide);
  rl::Trainer trainer(*engine, config);
  const Stream& stream = trainer.stream();
  for (int k = 0; k < 3; ++k) trainer.iterate();
  trainer.drain();
  if (device.is_cuda()) REQUIRE(trainer.graph_captured());

  const ScenarioSpec& spec = engine->spec();
  const int masspole = spec.param_index("masspole");
  const float narrowed = 0.125f;
  PhysicsConfig narrow = wide;
  narrow.low[masspole] = narrowed;
  narrow.high[masspole] = narrowed;
  engine->set_physics(narrow, stream);
  const std::vector<double> before = params_to_host(*engine, stream);

  constexpr int kIterations = 3;
  for (int k = 0; k < kIterations; ++k) trainer.iterate();
  trainer.drain();
  const std::vector<double> after = params_to_host(*engine, stream);
  const std::vector<std::int32_t> episode_steps = to_host(engine->episode_steps(), stream);
  // An environment reset since the table changed exactly when its episode is younger than the steps since.
  const std::int64_t steps_since = kIterations * config.num_steps;
  const std::size_t count = spec.params.size();
  int reset = 0;
  for (std::size_t i = 0; i < episode_steps.size(); ++i) {
    INFO("environment " << i << ", " << episode_steps[i] << " steps into its episode");
    if (episode_steps[i] < steps_since) {
      ++reset;
      CHECK(after[i * count + static_cast<std::size_t>(masspole)] == static_cast<double>(narrowed));
    } else {
      for (std::size_t j = 0; j < count; ++j) CHECK(after[i * count + j] == before[i * count + j]);
    }
  }
  CHECK(reset > 0);
  CHECK(reset < static_cast<int>(episode_steps.size()));
}

}  // namespace surge::testing
