// The trainer: its bookkeeping kernels against naive references (the mean of the last 100 finished
// episodes), its memory plan against what it allocates, determinism, the learning-rate schedule and
// the target-KL early stop.
#include <catch2/catch.hpp>

#include <cmath>
#include <deque>
#include <numeric>
#include <vector>

#include "rl/trainer.hpp"
#include "rl/trainer_kernels.hpp"
#include "scenarios/registry.hpp"
#include "sim/philox.hpp"
#include "tests/support/small_train_config.hpp"

using namespace surge::rl;

TEST_CASE("the ring of recent returns holds the last 100 finished episodes", "[trainer]") {
  surge::Stream stream(surge::Device::cpu());
  // Shapes chosen so that some rollouts end more than 100 episodes, some fewer, and one spans more than
  // one group of 65536 slots with its only episode ends far apart.
  struct Shape {
    std::int64_t steps, envs;
    float end_probability;
  };
  const Shape shapes[] = {{7, 5, 0.2f},         {3, 4, 0.05f}, {50, 40, 0.1f},
                          {40, 2000, 0.00004f}, {9, 3, 0.3f},  {11, 13, 0.5f}};
  const std::int64_t max_envs = 2000;
  std::vector<float> running(max_envs, 0.0f);
  std::vector<double> ring(kRecentEpisodes, 0.0);
  TrainState state{};
  std::vector<float> naive_running(max_envs, 0.0f);
  std::deque<double> naive;  // finished returns in finishing order
  surge::Rng rng(17, 0, 0);
  for (const Shape& shape : shapes) {
    // Running returns belong to each env; different widths reuse the first `envs` of them.
    const std::int64_t slots = shape.steps * shape.envs;
    std::vector<float> reward(slots), ended(slots, -1.0f);
    std::vector<std::uint8_t> terminated(slots), truncated(slots);
    for (std::int64_t s = 0; s < slots; ++s) {
      reward[s] = static_cast<float>(rng.next_u32() % 5);
      const bool end = rng.uniform() < shape.end_probability;
      const bool by_time = rng.uniform() < 0.3f;
      terminated[s] = end && !by_time;
      truncated[s] = end && by_time;
    }
    if (shape.envs == 2000) {  // exactly three ends, in different groups
      std::fill(terminated.begin(), terminated.end(), 0);
      std::fill(truncated.begin(), truncated.end(), 0);
      terminated[5] = 1;
      truncated[70001] = 1;
      terminated[79999] = 1;
    }
    std::vector<std::int32_t> chunks(finished_chunk_count(slots)), groups(finished_group_count(slots));
    track_episode_returns(stream, shape.steps, shape.envs, reward.data(), terminated.data(), truncated.data(),
                          running.data(), ended.data());
    count_finished(stream, slots, terminated.data(), truncated.data(), chunks.data(), groups.data());
    std::vector<double> candidates(kRecentCandidateWidth, 0.0);
    newest_finished(stream, shape.steps, shape.envs, 0, shape.envs, terminated.data(), truncated.data(), ended.data(),
                    chunks.data(), groups.data(), candidates.data());
    push_recent_returns(stream, candidates.data(), 1, ring.data(), &state);
    // Naive: walk the rollout in time order, env order within a step.
    for (std::int64_t t = 0; t < shape.steps; ++t)
      for (std::int64_t i = 0; i < shape.envs; ++i) {
        const std::int64_t s = t * shape.envs + i;
        naive_running[i] += reward[s];
        if (terminated[s] || truncated[s]) {
          naive.push_back(naive_running[i]);
          naive_running[i] = 0.0f;
          if (naive.size() > kRecentEpisodes) naive.pop_front();
        }
      }
    REQUIRE(state.last100_count == static_cast<std::int64_t>(naive.size()));
    std::vector<double> held(ring.begin(), ring.begin() + state.last100_count), expected(naive.begin(), naive.end());
    std::sort(held.begin(), held.end());
    std::sort(expected.begin(), expected.end());
    CHECK(held == expected);
  }
  CHECK(state.last100_count == kRecentEpisodes);
}

TEST_CASE("ranks' newest episodes merge into the ring one process over all their environments keeps", "[trainer]") {
  // Two ranks of N environments against one process of 2N: the same flags and returns, split by column.
  surge::Stream stream(surge::Device::cpu());
  const std::int64_t steps = 9, n = 40, ranks = 2;
  surge::Rng rng(23, 0, 0);
  std::vector<double> whole_ring(kRecentEpisodes, 0.0), split_ring(kRecentEpisodes, 0.0);
  TrainState whole_state{}, split_state{};
  for (float end_probability : {0.05f, 0.4f, 0.0f, 0.01f}) {
    const std::int64_t slots = steps * ranks * n;
    std::vector<std::uint8_t> terminated(slots), truncated(slots);
    std::vector<float> ended(slots);
    for (std::int64_t s = 0; s < slots; ++s) {
      terminated[s] = rng.uniform() < end_probability;
      truncated[s] = !terminated[s] && rng.uniform() < end_probability / 2;
      ended[s] = static_cast<float>(rng.next_u32() % 1000);
    }
    std::vector<std::int32_t> chunks(finished_chunk_count(slots)), groups(finished_group_count(slots));
    count_finished(stream, slots, terminated.data(), truncated.data(), chunks.data(), groups.data());
    std::vector<double> candidates(kRecentCandidateWidth, 0.0);
    newest_finished(stream, steps, ranks * n, 0, ranks * n, terminated.data(), truncated.data(), ended.data(),
                    chunks.data(), groups.data(), candidates.data());
    push_recent_returns(stream, candidates.data(), 1, whole_ring.data(), &whole_state);

    std::vector<double> gathered(ranks * kRecentCandidateWidth, 0.0);
    for (std::int64_t r = 0; r < ranks; ++r) {
      std::vector<std::uint8_t> term(steps * n), trunc(steps * n);
      std::vector<float> returns(steps * n);
      for (std::int64_t t = 0; t < steps; ++t)
        for (std::int64_t i = 0; i < n; ++i) {
          term[t * n + i] = terminated[t * ranks * n + r * n + i];
          trunc[t * n + i] = truncated[t * ranks * n + r * n + i];
          returns[t * n + i] = ended[t * ranks * n + r * n + i];
        }
      std::vector<std::int32_t> c(finished_chunk_count(steps * n)), g(finished_group_count(steps * n));
      count_finished(stream, steps * n, term.data(), trunc.data(), c.data(), g.data());
      newest_finished(stream, steps, n, r * n, ranks * n, term.data(), trunc.data(), returns.data(), c.data(), g.data(),
                      gathered.data() + r * kRecentCandidateWidth);
    }
    push_recent_returns(stream, gathered.data(), static_cast<int>(ranks), split_ring.data(), &split_state);
    CHECK(split_state.last100_count == whole_state.last100_count);
    CHECK(split_state.last100_head == whole_state.last100_head);
    CHECK(split_ring == whole_ring);  // the same returns in the same order
  }
  CHECK(whole_state.last100_count == kRecentEpisodes);
}

namespace {

TrainConfig small_config() {
  TrainConfig config = surge::testing::small_train_config(8, 16, 6, {16, 16}, 5);
  config.num_minibatches = 4;
  config.update_epochs = 3;
  config.learning_rate = 1e-3;
  return config;
}

std::vector<IterationMetrics> run(const TrainConfig& config, std::int64_t iterations,
                                  const std::string& scenario = "cartpole") {
  auto engine = surge::make_engine(scenario, surge::Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  std::vector<IterationMetrics> all;
  for (std::int64_t k = 0; k < iterations; ++k) {
    trainer.iterate();
    for (const auto& m : trainer.ready_metrics()) all.push_back(m);
  }
  for (const auto& m : trainer.drain()) all.push_back(m);
  return all;
}

}  // namespace

TEST_CASE("the memory plan lists exactly what the trainer allocates", "[trainer]") {
  for (const char* scenario : {"cartpole", "pendulum"})
    for (std::int64_t envs : {8, 100}) {
      INFO(scenario << ", " << envs << " envs");
      TrainConfig config = small_config();
      config.num_envs = envs;
      config.total_steps = envs * config.num_steps;
      auto engine = surge::make_engine(scenario, surge::Device::cpu(), envs, 1);
      const Trainer trainer(*engine, config);
      const surge::MemoryPlan plan = Trainer::memory_plan(config, engine->spec(), surge::Device::cpu());
      CHECK(plan.allocated_bytes() == trainer.device_bytes());
    }
}

TEST_CASE("training is deterministic for a seed and changes with it", "[trainer]") {
  const TrainConfig config = small_config();
  const auto a = run(config, 4), b = run(config, 4);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  for (std::size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].iteration == k + 1);
    CHECK(a[k].global_step == (k + 1) * 8 * 16);
    CHECK(a[k].policy_loss == b[k].policy_loss);
    CHECK(a[k].value_loss == b[k].value_loss);
    CHECK(a[k].episodes == b[k].episodes);
    CHECK(std::isfinite(a[k].entropy));
    CHECK(a[k].entropy > 0.0);
    CHECK(a[k].entropy <= std::log(2.0) + 1e-6);
  }
  TrainConfig other = config;
  other.seed = 6;
  CHECK(run(other, 1)[0].value_loss != a[0].value_loss);
}

TEST_CASE("a Gaussian policy trains deterministically; its rollout keeps the unclipped samples",
          "[trainer][gaussian]") {
  const TrainConfig config = small_config();
  for (const char* scenario : {"pendulum", "mountain_car_continuous"}) {
    INFO(scenario);
    const auto a = run(config, 3, scenario), b = run(config, 3, scenario);
    REQUIRE(a.size() == 3);
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].policy_loss == b[k].policy_loss);
      CHECK(a[k].value_loss == b[k].value_loss);
      CHECK(std::isfinite(a[k].approx_kl));
      // One dimension with log_std near its initial 0: 0.5 + 0.5 log(2 pi) = 1.419.
      CHECK(a[k].entropy == Approx(1.4189385).margin(0.05));
    }
  }
  // Pendulum's torque is bounded by 2; samples N(mean, 1) with a mean near 0 exceed it now and then, and
  // the rollout keeps them as drawn.
  auto engine = surge::make_engine("pendulum", surge::Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  trainer.iterate();
  trainer.drain();
  const RolloutStorage& rollout = trainer.rollout();
  REQUIRE(rollout.continuous());
  const std::int64_t slots = config.num_steps * config.num_envs;
  const auto actions = surge::to_host(
      surge::Span<const float>{rollout.continuous_actions(0), slots, surge::Device::cpu()}, trainer.stream());
  const auto logprob =
      surge::to_host(surge::Span<const float>{rollout.logprob(0), slots, surge::Device::cpu()}, trainer.stream());
  int beyond = 0;
  for (std::int64_t s = 0; s < slots; ++s) {
    beyond += std::abs(actions[s]) > 2.0f;
    CHECK(std::isfinite(logprob[s]));
    CHECK(logprob[s] < 0.0f);
  }
  CHECK(beyond > 0);
}

TEST_CASE("the learning rate anneals linearly to zero over the run", "[trainer]") {
  const TrainConfig config = small_config();  // 6 iterations
  const auto metrics = run(config, 6);
  for (std::size_t k = 0; k < metrics.size(); ++k)
    CHECK(metrics[k].learning_rate == Approx(config.learning_rate * (1.0 - double(k) / 6.0)).epsilon(1e-12));
  TrainConfig flat = config;
  flat.anneal_lr = false;
  for (const auto& m : run(flat, 3)) CHECK(m.learning_rate == config.learning_rate);
}

TEST_CASE("target-KL stops an iteration's updates early", "[trainer]") {
  TrainConfig config = small_config();
  config.learning_rate = 0.05;  // large steps: KL grows fast
  for (const auto& m : run(config, 2)) CHECK(m.epochs_applied == config.update_epochs);
  config.target_kl = 1e-9;
  const auto stopped = run(config, 2);
  for (const auto& m : stopped) {
    CHECK(m.epochs_applied >= 1);
    CHECK(m.epochs_applied < config.update_epochs);
  }
}

TEST_CASE("finished episodes are counted and their returns make sense", "[trainer]") {
  TrainConfig config = small_config();
  config.num_envs = 32;
  config.num_steps = 64;
  config.total_steps = 32 * 64 * 3;
  const auto metrics = run(config, 3);
  double episodes = 0;
  for (const auto& m : metrics) {
    episodes += m.episodes;
    if (m.episodes > 0) {
      // CartPole pays 1 per step: an episode's return is its length.
      CHECK(m.episodic_return_mean == Approx(m.episodic_length_mean).epsilon(1e-12));
      CHECK(m.episodic_return_mean >= 5.0);  // CartPole cannot fall in fewer steps
    }
  }
  REQUIRE(episodes > 100);
  CHECK(metrics.back().recent_episodes == kRecentEpisodes);
  CHECK(metrics.back().return_last100 > 5.0);
  CHECK(metrics.back().return_last100 < 500.0);
}
