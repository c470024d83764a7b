// checkpoint.h5: written, read back bit for bit, evaluated the same as the live trainer; bad files are
// one-line input errors. And the evaluator's first-episode bookkeeping.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rl/evaluate.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "tests/support/small_train_config.hpp"

using namespace surge::rl;

namespace {

TrainConfig small_config() {
  TrainConfig config = surge::testing::small_train_config(8, 32, 10, {32, 16}, 21);
  config.learning_rate = 3e-3;
  return config;
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("surge_test_checkpoint_" + std::to_string(::getpid()) + "_" + name);
}

// A trainer on the CPU with the engine it trains on.
struct CpuTrainer {
  std::unique_ptr<surge::Engine> engine;
  Trainer trainer;
  CpuTrainer(const std::string& scenario, const TrainConfig& config)
      : engine(surge::make_engine(scenario, surge::Device::cpu(), config.num_envs, config.seed)),
        trainer(*engine, config) {}
};

// The first-episode returns of the live policy and of the checkpoint's parameters in `network`, each on
// its own `num_envs` fresh environments of `scenario` (the same seed for both).
std::pair<std::vector<double>, std::vector<double>> live_and_loaded_returns(const std::string& scenario,
                                                                            std::int64_t num_envs,
                                                                            const Trainer& trainer, const Checkpoint& c,
                                                                            const ActorCritic& network, bool sample) {
  auto live_engine = surge::make_engine(scenario, surge::Device::cpu(), num_envs, 99);
  auto loaded_engine = surge::make_engine(scenario, surge::Device::cpu(), num_envs, 99);
  return {
      evaluate_policy(*live_engine, trainer.network(), trainer.parameters(), sample),
      evaluate_policy(*loaded_engine, network, {c.params.data(), static_cast<std::int64_t>(c.params.size())}, sample)};
}

// Runs `iterations` iterations, writes the trainer's checkpoint to `path` and reads it back.
Checkpoint checkpoint_after(Trainer& trainer, int iterations, const std::filesystem::path& path) {
  for (int k = 0; k < iterations; ++k) trainer.iterate();
  trainer.drain();
  write_checkpoint(path.string(), trainer);
  return read_checkpoint(path.string());
}

}  // namespace

TEST_CASE("a checkpoint reads back exactly what the trainer held", "[checkpoint]") {
  const TrainConfig config = small_config();
  CpuTrainer run("cartpole", config);
  Trainer& trainer = run.trainer;
  const auto path = temp_path("roundtrip.h5");
  const Checkpoint c = checkpoint_after(trainer, 3, path);
  CHECK(c.scenario == "cartpole");
  CHECK(c.gym_id == "CartPole-v1");
  CHECK(c.obs_dim == 4);
  CHECK(c.num_actions == 2);
  CHECK(c.iteration == 3);
  CHECK(c.global_step == 3 * 8 * 32);
  CHECK(c.config.to_toml() == config.to_toml());
  CHECK(c.params == to_host(trainer.parameters(), trainer.stream()));
  CHECK(c.adam_m == to_host(trainer.adam_first_moment(), trainer.stream()));
  CHECK(c.adam_v == to_host(trainer.adam_second_moment(), trainer.stream()));
  CHECK(c.adam_step == 3 * config.update_epochs * config.num_minibatches);
  CHECK(c.learning_rate == Approx(config.learning_rate * (1.0 - 2.0 / 10.0)));

  // The loaded policy plays exactly as the live one.
  const auto [live, loaded] = live_and_loaded_returns("cartpole", 16, trainer, c, trainer.network(), false);
  CHECK(live == loaded);
  for (double r : live) {
    CHECK(r >= 1.0);
    CHECK(r <= 500.0);
  }
  std::filesystem::remove(path);
  CHECK_FALSE(std::filesystem::exists(path.string() + ".partial"));
}

TEST_CASE("a Gaussian policy's checkpoint keeps its log-std and plays as the live policy", "[checkpoint][gaussian]") {
  CpuTrainer run("pendulum", small_config());
  Trainer& trainer = run.trainer;
  const auto path = temp_path("gaussian.h5");
  const Checkpoint c = checkpoint_after(trainer, 2, path);
  CHECK(c.scenario == "pendulum");
  CHECK(c.num_actions == 0);
  CHECK(c.action_dim == 1);
  CHECK(c.params == to_host(trainer.parameters(), trainer.stream()));
  CHECK(c.adam_v == to_host(trainer.adam_second_moment(), trainer.stream()));
  const ActorCritic network = checkpoint_network(c);
  REQUIRE(network.continuous());
  // The log-std was trained: Adam moved it off its initial 0.
  CHECK(c.params[static_cast<std::size_t>(network.log_std_offset())] != 0.0f);
  for (const bool sample : {false, true}) {
    const auto [live, loaded] = live_and_loaded_returns("pendulum", 6, trainer, c, network, sample);
    CHECK(live == loaded);
    for (double r : live) {
      CHECK(r <= 0.0);
      CHECK(r >= -200.0 * 16.3);  // 200 steps of at most pi^2 + 0.1 * 64 + 0.001 * 4
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("reading something that is not a checkpoint is an input error", "[checkpoint]") {
  CHECK_THROWS_AS(read_checkpoint("/nonexistent/checkpoint.h5"), surge::InputError);
  const auto text = temp_path("not_hdf5.h5");
  std::ofstream(text) << "iteration,global_step\n1,2\n";
  CHECK_THROWS_WITH(read_checkpoint(text.string()), Catch::Contains("not an HDF5 file"));
  std::filesystem::remove(text);
}

TEST_CASE("evaluation counts each environment's first episode only", "[checkpoint][evaluate]") {
  surge::Stream stream(surge::Device::cpu());
  // Three envs over four steps: env 0 ends at step 1 (terminated), env 1 at step 2 (truncated), env 2 never.
  const float rewards[4][3] = {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}};
  const std::uint8_t terminated[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 0}, {1, 1, 0}};
  const std::uint8_t truncated[4][3] = {{0, 0, 0}, {0, 0, 0}, {0, 1, 0}, {0, 0, 0}};
  std::uint8_t finished[3] = {0, 0, 0};
  double returns[3] = {0, 0, 0};
  for (int t = 0; t < 4; ++t)
    accumulate_first_episode(stream, 3, rewards[t], terminated[t], truncated[t], finished, returns);
  CHECK(returns[0] == 2.0);
  CHECK(returns[1] == 6.0);
  CHECK(returns[2] == 12.0);
  CHECK(finished[0] == 1);
  CHECK(finished[1] == 1);
  CHECK(finished[2] == 0);
}

namespace {

// Each env's first-episode return when every env always takes `action`.
std::vector<double> constant_action_returns(const std::string& scenario, std::int64_t n, std::uint64_t seed,
                                            std::int32_t action) {
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  auto engine = surge::make_engine(scenario, cpu, n, seed);
  const int d = engine->spec().obs_dim;
  surge::DeviceBuffer<float> obs(cpu, n * d), reward(cpu, n);
  surge::DeviceBuffer<std::int32_t> actions(cpu, n);
  surge::DeviceBuffer<std::uint8_t> terminated(cpu, n), truncated(cpu, n), finished(cpu, n);
  std::vector<double> returns(static_cast<std::size_t>(n), 0.0);
  std::fill(actions.data(), actions.data() + n, action);
  std::fill(finished.data(), finished.data() + n, std::uint8_t{0});
  for (std::int64_t t = 0; t < engine->spec().max_episode_steps; ++t) {
    engine->step(surge::ActionView{actions.cspan(), {}},
                 surge::StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), {}}, stream);
    accumulate_first_episode(stream, n, reward.data(), terminated.data(), truncated.data(), finished.data(),
                             returns.data());
  }
  return returns;
}

}  // namespace

TEST_CASE("normalisation statistics are saved, read back, and used frozen by evaluation",
          "[checkpoint][normalization]") {
  TrainConfig config = small_config();
  config.normalize_obs = true;
  config.normalize_reward = true;
  config.obs_clip = 5.0;
  CpuTrainer run("cartpole", config);
  Trainer& trainer = run.trainer;
  const auto path = temp_path("normalized.h5");
  const Checkpoint c = checkpoint_after(trainer, 2, path);
  std::filesystem::remove(path);
  CHECK(c.config.normalize_obs);
  CHECK(c.config.normalize_reward);
  CHECK(c.config.obs_clip == 5.0);
  REQUIRE(c.obs_moments.size() == 9);
  CHECK(c.obs_moments == to_host(trainer.obs_moments(), trainer.stream()));
  CHECK(c.reward_moments == to_host(trainer.reward_moments(), trainer.stream()));
  CHECK(c.obs_moments.back() == Approx(8.0 * (1 + 2 * 32)));

  // Loaded and live statistics evaluate alike, and evaluating leaves them as they were.
  const surge::Span<const float> params{c.params.data(), static_cast<std::int64_t>(c.params.size()),
                                        surge::Device::cpu()};
  auto eval_a = surge::make_engine("cartpole", surge::Device::cpu(), 16, 99);
  auto eval_b = surge::make_engine("cartpole", surge::Device::cpu(), 16, 99);
  const std::vector<double> live =
      evaluate_policy(*eval_a, trainer.network(), params, false, {trainer.obs_moments(), config.obs_clip});
  const std::vector<double> loaded = evaluate_policy(
      *eval_b, trainer.network(), params, false,
      {{c.obs_moments.data(), static_cast<std::int64_t>(c.obs_moments.size()), surge::Device::cpu()}, config.obs_clip});
  CHECK(live == loaded);
  CHECK(to_host(trainer.obs_moments(), trainer.stream()) == c.obs_moments);

  // Statistics with an enormous variance map every observation to about 0, whatever the mean: the
  // greedy policy then takes one fixed action, so its returns are those of a constant-action policy.
  const std::vector<double> zero_mean = {0, 0, 0, 0, 1e14, 1e14, 1e14, 1e14, 1.0};
  const std::vector<double> shifted = {3, -2, 1, 7, 1e14, 1e14, 1e14, 1e14, 1.0};
  auto eval_c = surge::make_engine("cartpole", surge::Device::cpu(), 16, 7);
  auto eval_d = surge::make_engine("cartpole", surge::Device::cpu(), 16, 7);
  const std::vector<double> flat_a = evaluate_policy(*eval_c, trainer.network(), params, false,
                                                     {{zero_mean.data(), 9, surge::Device::cpu()}, config.obs_clip});
  const std::vector<double> flat_b = evaluate_policy(*eval_d, trainer.network(), params, false,
                                                     {{shifted.data(), 9, surge::Device::cpu()}, config.obs_clip});
  CHECK(flat_a == flat_b);
  const bool constant = flat_a == constant_action_returns("cartpole", 16, 7, 0) ||
                        flat_a == constant_action_returns("cartpole", 16, 7, 1);
  CHECK(constant);
}
