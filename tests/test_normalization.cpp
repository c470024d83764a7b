// Observation normalisation and reward scaling (rl/normalization.hpp) against host references written
// here from Gymnasium's definitions: RunningMeanStd with a two-pass batch mean and variance in double,
// and the vector NormalizeReward wrapper's per-step rule. Then the trainer with both switched on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/normalization.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/philox.hpp"
#include "tests/support/small_train_config.hpp"

using namespace surge;
using namespace surge::rl;

namespace {

// Gymnasium's RunningMeanStd, with each batch's moments by the two-pass formula in double.
struct ReferenceMoments {
  std::vector<double> mean, var;
  double count = kMomentsInitialCount;
  explicit ReferenceMoments(int dim)
      : mean(static_cast<std::size_t>(dim), 0.0), var(static_cast<std::size_t>(dim), 1.0) {}

  void update(const std::vector<float>& samples, std::int64_t rows) {
    const std::size_t dim = mean.size();
    const double n = static_cast<double>(rows);
    for (std::size_t k = 0; k < dim; ++k) {
      double sum = 0.0;
      for (std::int64_t r = 0; r < rows; ++r) sum += samples[static_cast<std::size_t>(r) * dim + k];
      const double batch_mean = sum / n;
      double squares = 0.0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const double d = samples[static_cast<std::size_t>(r) * dim + k] - batch_mean;
        squares += d * d;
      }
      const double batch_var = squares / n;
      const double delta = batch_mean - mean[k], total = count + n;
      mean[k] += delta * n / total;
      var[k] = (var[k] * count + batch_var * n + delta * delta * count * n / total) / total;
    }
    count += n;
  }
  std::vector<double> flat() const {
    std::vector<double> out = mean;
    out.insert(out.end(), var.begin(), var.end());
    out.push_back(count);
    return out;
  }
};

bool close(double value, double reference, double atol, double rtol) {
  return std::abs(value - reference) <= atol + rtol * std::abs(reference);
}

// Uniform samples in [offset - scale, offset + scale], from a Philox stream.
std::vector<float> samples(std::uint64_t seed, std::int64_t count, float offset, float scale) {
  Rng rng(seed, 0, 0);
  std::vector<float> out(static_cast<std::size_t>(count));
  for (float& x : out) x = offset + scale * (2.0f * rng.uniform() - 1.0f);
  return out;
}

}  // namespace

TEST_CASE("running moments merge uneven batches as a two-pass reference does", "[normalization]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const int dim = GENERATE(1, 3, kMaxNormalizedDim);
  DeviceBuffer<double> moments(cpu, moments_size(dim)), batch_sums(cpu, 2 * kMaxNormalizedDim),
      scratch(cpu, normalization_scratch_doubles(cpu));
  reset_moments(stream, dim, moments.data());
  ReferenceMoments reference(dim);
  CHECK(to_host(moments.cspan(), stream) == reference.flat());
  // Uneven batches, one of a single sample, with a large offset (MountainCar-like positions) and a
  // change of scale half way.
  const std::vector<std::int64_t> rows = {1, 7, 300, 5003, 2, 4096};
  std::uint64_t seed = 5;
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const std::vector<float> batch = samples(seed++, rows[b] * dim, b < 3 ? -30.0f : 12.5f, b < 3 ? 0.01f : 4.0f);
    update_moments(stream, batch.data(), rows[b], dim, moments.data(), batch_sums.data(), scratch.data());
    reference.update(batch, rows[b]);
    const std::vector<double> got = to_host(moments.cspan(), stream), want = reference.flat();
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("dim " << dim << ", batch " << b << ", value " << k << ": " << got[k] << " against " << want[k]);
      CHECK(close(got[k], want[k], 1e-12, 1e-9));
    }
  }
}

TEST_CASE("normalising clips to +-clip and touches only ended rows when masked", "[normalization]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const int dim = 2;
  // mean (1, -2), var (4, 0.01), count 10
  const std::vector<double> moments = {1.0, -2.0, 4.0, 0.01, 10.0};
  const std::vector<float> raw = {1.0f, -2.0f, 3.0f, -1.9f, -100.0f, 5.0f, 2.0f, -2.5f};
  auto expected = [&](std::size_t i, double clip) {
    const std::size_t k = i % dim;
    const double x = (raw[i] - moments[k]) / std::sqrt(moments[dim + k] + kNormalizationEpsilon);
    return static_cast<float>(std::clamp(x, -clip, clip));
  };
  std::vector<float> rows = raw;
  normalize_rows(stream, rows.data(), 4, dim, moments.data(), 10.0);
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i] == expected(i, 10.0));
  CHECK(rows[4] == -10.0f);  // (-100 - 1) / 2 clipped
  CHECK(rows[5] == 10.0f);   // (5 + 2) / 0.1 clipped
  CHECK(rows[3] == Approx(1.0).epsilon(1e-5));

  rows = raw;
  const std::vector<std::uint8_t> terminated = {0, 1, 0, 0}, truncated = {0, 0, 0, 1};
  normalize_rows(stream, rows.data(), 4, dim, moments.data(), 3.0, terminated.data(), truncated.data());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const bool ended = terminated[i / dim] || truncated[i / dim];
    CHECK(rows[i] == (ended ? expected(i, 3.0) : raw[i]));
  }
}

namespace {

// Gymnasium 1.4's vector NormalizeReward in same-step auto-reset mode, step by step, then clipped.
struct ReferenceRewardScaler {
  double gamma, clip;
  std::vector<float> accumulator;
  ReferenceMoments moments{1};
  ReferenceRewardScaler(double g, double c, std::int64_t n)
      : gamma(g), clip(c), accumulator(static_cast<std::size_t>(n), 0.0f) {}

  // One step of all N envs; returns the scaled rewards.
  std::vector<float> step(const float* reward, const std::uint8_t* terminated, const std::uint8_t* truncated) {
    const std::size_t n = accumulator.size();
    for (std::size_t i = 0; i < n; ++i)
      accumulator[i] = accumulator[i] * static_cast<float>(gamma) * static_cast<float>(1 - terminated[i]) + reward[i];
    moments.update(accumulator, static_cast<std::int64_t>(n));
    std::vector<float> scaled(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double r = reward[i] / std::sqrt(moments.var[0] + kNormalizationEpsilon);
      scaled[i] = static_cast<float>(std::clamp(r, -clip, clip));
      if (terminated[i] || truncated[i]) accumulator[i] = 0.0f;
    }
    return scaled;
  }
};

}  // namespace

TEST_CASE("reward scaling equals the NormalizeReward wrapper applied at every step", "[normalization]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::int64_t steps = 37, n = 23;
  const double gamma = 0.99;
  const double clip = GENERATE(10.0, 0.5);
  DeviceBuffer<double> moments(cpu, 3), step_sums(cpu, 2 * steps), scratch(cpu, normalization_scratch_doubles(cpu));
  DeviceBuffer<float> accumulator(cpu, n);
  reset_moments(stream, 1, moments.data());
  std::fill(accumulator.data(), accumulator.data() + n, 0.0f);
  ReferenceRewardScaler reference(gamma, clip, n);
  Rng rng(17, 1, 0);
  // Three rollouts in a row: the accumulators and statistics carry over between them.
  for (int rollout = 0; rollout < 3; ++rollout) {
    std::vector<float> reward(static_cast<std::size_t>(steps * n));
    std::vector<std::uint8_t> terminated(reward.size()), truncated(reward.size());
    for (std::size_t s = 0; s < reward.size(); ++s) {
      reward[s] = rollout == 1 ? -8.0f * rng.uniform() : 1.0f + 0.5f * rng.uniform();
      const float u = rng.uniform();
      terminated[s] = u < 0.05f;
      truncated[s] = !terminated[s] && u > 0.97f;
    }
    std::vector<float> scaled(reward.size(), 0.0f);
    scale_rewards(stream, steps, n, gamma, clip, reward.data(), terminated.data(), truncated.data(), accumulator.data(),
                  scaled.data(), moments.data(), step_sums.data(), scratch.data());
    stream.synchronize();
    for (std::int64_t t = 0; t < steps; ++t) {
      const std::size_t row = static_cast<std::size_t>(t * n);
      const std::vector<float> want = reference.step(&reward[row], &terminated[row], &truncated[row]);
      for (std::int64_t i = 0; i < n; ++i) {
        INFO("rollout " << rollout << ", step " << t << ", env " << i);
        CHECK(close(scaled[row + static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)], 1e-7, 1e-6));
      }
    }
    for (std::int64_t i = 0; i < n; ++i)
      CHECK(accumulator.data()[i] == reference.accumulator[static_cast<std::size_t>(i)]);
    const std::vector<double> got = to_host(moments.cspan(), stream), want = reference.moments.flat();
    for (std::size_t k = 0; k < 3; ++k) CHECK(close(got[k], want[k], 1e-12, 1e-9));
  }
}

namespace {

TrainConfig normalized_config() {
  TrainConfig config = surge::testing::small_train_config(8, 16, 4, {16, 16}, 3);
  config.normalize_obs = true;
  config.normalize_reward = true;
  return config;
}

}  // namespace

TEST_CASE("the trainer counts every observation it returns and trains on normalised ones", "[normalization][trainer]") {
  const TrainConfig config = normalized_config();
  auto engine = make_engine("acrobot", Device::cpu(), config.num_envs, config.seed);
  Trainer trainer(*engine, config);
  const int d = engine->spec().obs_dim;
  // The memory plan lists the normalisation buffers too.
  const MemoryPlan plan = Trainer::memory_plan(config, engine->spec(), Device::cpu());
  CHECK(plan.allocated_bytes() == trainer.device_bytes());
  bool accumulator_planned = false;
  for (const PlannedBuffer& buffer : plan.buffers())
    if (buffer.name == "normalization.reward_accumulator") accumulator_planned = buffer.elements == config.num_envs;
  CHECK(accumulator_planned);
  // The first observation counts at once.
  std::vector<double> moments = to_host(trainer.obs_moments(), trainer.stream());
  REQUIRE(moments.size() == static_cast<std::size_t>(2 * d + 1));
  CHECK(moments.back() == kMomentsInitialCount + config.num_envs);
  for (int k = 0; k < 2; ++k) trainer.iterate();
  const std::vector<IterationMetrics> metrics = trainer.drain();
  moments = to_host(trainer.obs_moments(), trainer.stream());
  CHECK(moments.back() == kMomentsInitialCount + static_cast<double>(config.num_envs * (1 + 2 * config.num_steps)));
  const std::vector<double> reward_moments = to_host(trainer.reward_moments(), trainer.stream());
  REQUIRE(reward_moments.size() == 3);
  CHECK(reward_moments[2] == kMomentsInitialCount + static_cast<double>(config.num_envs * 2 * config.num_steps));

  // The stored rollout holds observations normalised and clipped and the environments' rewards; GAE read
  // the scaled ones. Acrobot's reward is -1 at every step of a random policy, so a step's scaled rewards
  // are all -1 / sqrt(var + eps), and the variance of the discounted returns grows over the rollout as they do.
  const RolloutStorage& rollout = trainer.rollout();
  const std::vector<float> obs = to_host(
      Span<const float>{rollout.obs(0), (config.num_steps + 1) * config.num_envs * d, Device::cpu()}, trainer.stream());
  for (float x : obs) CHECK(std::abs(x) <= config.obs_clip);
  const std::vector<float> raw =
      to_host(Span<const float>{rollout.reward(0), config.batch_size(), Device::cpu()}, trainer.stream());
  for (float r : raw) CHECK(r == -1.0f);
  const std::vector<float> reward = to_host(trainer.scaled_rewards(), trainer.stream());
  REQUIRE(reward.size() == raw.size());
  for (std::int64_t t = 0; t < config.num_steps; ++t)
    for (std::int64_t i = 0; i < config.num_envs; ++i) {
      const float r = reward[static_cast<std::size_t>(t * config.num_envs + i)];
      CHECK(r == reward[static_cast<std::size_t>(t * config.num_envs)]);
      CHECK((r < 0.0f && r >= -config.reward_clip));
    }
  CHECK(reward.back() > reward.front());
  // Episode statistics stay in raw units: Acrobot's returns are whole negative numbers.
  for (const IterationMetrics& m : metrics)
    if (m.recent_episodes > 0) CHECK(m.return_last100 <= -1.0);
}

TEST_CASE("normalize_obs refuses observations wider than it handles", "[normalization]") {
  NormalizationConfig config;
  config.normalize_obs = true;
  CHECK_THROWS_AS(Normalization(Device::cpu(), config, kMaxNormalizedDim + 1, 4, 4, Stream(Device::cpu())), InputError);
  CHECK_NOTHROW(Normalization(Device::cpu(), config, kMaxNormalizedDim, 4, 4, Stream(Device::cpu())));
}
