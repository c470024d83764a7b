// Normalisation on CUDA against its CPU twin (rl/normalization.hpp), and a trainer with both parts on
// that replays its iteration as a CUDA graph against one that enqueues it eagerly. Runs only where a
// usable GPU exists (the GPU test main reports a skip otherwise).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/normalization.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/philox.hpp"

using namespace surge;
using namespace surge::rl;

namespace {

const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

bool close(double value, double reference, double atol, double rtol) {
  return std::abs(value - reference) <= atol + rtol * std::abs(reference);
}

template <class T>
DeviceBuffer<T> uploaded(Device device, const std::vector<T>& host, const Stream& stream) {
  DeviceBuffer<T> buffer(device, static_cast<std::int64_t>(host.size()));
  if (!host.empty()) from_host(buffer.span(), host, stream);
  return buffer;
}

}  // namespace

TEST_CASE("running moments and normalised rows on CUDA match the CPU", "[normalization][gpu]") {
  const int dim = 5;
  const std::vector<std::int64_t> rows = {1, 333, 70001};
  std::vector<double> result[2];
  std::vector<float> normalized[2];
  for (int backend = 0; backend < 2; ++backend) {
    const Device device = backend == 0 ? kCpu : kCuda;
    Stream stream(device);
    DeviceBuffer<double> moments(device, moments_size(dim)), sums(device, 2 * kMaxNormalizedDim),
        scratch(device, normalization_scratch_doubles(device));
    reset_moments(stream, dim, moments.data());
    Rng rng(9, 0, 0);
    std::vector<float> last;
    for (std::int64_t count : rows) {
      std::vector<float> batch(static_cast<std::size_t>(count * dim));
      for (std::size_t k = 0; k < batch.size(); ++k)
        batch[k] = static_cast<float>(k % dim) * 10.0f + rng.uniform(-3.0f, 3.0f);
      const DeviceBuffer<float> on_device = uploaded(device, batch, stream);
      update_moments(stream, on_device.data(), count, dim, moments.data(), sums.data(), scratch.data());
      last = batch;
    }
    DeviceBuffer<float> rows_buffer = uploaded(device, last, stream);
    normalize_rows(stream, rows_buffer.data(), rows.back(), dim, moments.data(), 1.5);
    result[backend] = to_host(moments.cspan(), stream);
    normalized[backend] = to_host(rows_buffer.cspan(), stream);
  }
  for (std::size_t k = 0; k < result[0].size(); ++k) CHECK(close(result[1][k], result[0][k], 1e-12, 1e-10));
  for (std::size_t k = 0; k < normalized[0].size(); ++k) CHECK(close(normalized[1][k], normalized[0][k], 1e-5, 1e-5));
}

TEST_CASE("reward scaling on CUDA matches the CPU", "[normalization][gpu]") {
  const std::int64_t steps = 19, n = 4099;
  Rng rng(31, 0, 0);
  std::vector<float> reward(static_cast<std::size_t>(steps * n));
  std::vector<std::uint8_t> terminated(reward.size()), truncated(reward.size());
  for (std::size_t s = 0; s < reward.size(); ++s) {
    reward[s] = rng.uniform(-2.0f, 1.0f);
    const float u = rng.uniform();
    terminated[s] = u < 0.03f;
    truncated[s] = !terminated[s] && u > 0.98f;
  }
  std::vector<float> scaled[2], accumulator[2];
  std::vector<double> moments[2];
  for (int backend = 0; backend < 2; ++backend) {
    const Device device = backend == 0 ? kCpu : kCuda;
    Stream stream(device);
    const DeviceBuffer<float> r = uploaded(device, reward, stream);
    DeviceBuffer<float> acc(device, n), out(device, steps * n);
    const DeviceBuffer<std::uint8_t> term = uploaded(device, terminated, stream),
                                     trunc = uploaded(device, truncated, stream);
    DeviceBuffer<double> m(device, 3), step_sums(device, 2 * steps),
        scratch(device, normalization_scratch_doubles(device));
    reset_moments(stream, 1, m.data());
    from_host(acc.span(), std::vector<float>(static_cast<std::size_t>(n), 0.5f), stream);
    for (int rollout = 0; rollout < 2; ++rollout)
      scale_rewards(stream, steps, n, 0.99, 10.0, r.data(), term.data(), trunc.data(), acc.data(), out.data(), m.data(),
                    step_sums.data(), scratch.data());
    scaled[backend] = to_host(out.cspan(), stream);
    accumulator[backend] = to_host(acc.cspan(), stream);
    moments[backend] = to_host(m.cspan(), stream);
  }
  for (std::size_t k = 0; k < scaled[0].size(); ++k) CHECK(close(scaled[1][k], scaled[0][k], 1e-6, 1e-5));
  CHECK(accumulator[1] == accumulator[0]);  // float additions in the same order
  for (std::size_t k = 0; k < 3; ++k) CHECK(close(moments[1][k], moments[0][k], 1e-12, 1e-9));
}

TEST_CASE("a trainer with normalisation replays its CUDA graph as it runs eagerly", "[normalization][gpu][trainer]") {
  TrainConfig config;
  config.num_envs = 256;
  config.num_steps = 16;
  config.total_steps = 256 * 16 * 4;
  config.seed = 5;
  config.normalize_obs = true;
  config.normalize_reward = true;
  std::vector<float> params[2];
  std::vector<double> obs_moments[2], reward_moments[2];
  for (int graph = 0; graph < 2; ++graph) {
    config.cuda_graph = graph == 1;
    auto engine = make_engine("cartpole", kCuda, config.num_envs, config.seed);
    Trainer trainer(*engine, config);
    REQUIRE(trainer.uses_graph() == (graph == 1));
    for (int k = 0; k < 4; ++k) trainer.iterate();
    trainer.drain();
    params[graph] = to_host(trainer.parameters(), trainer.stream());
    obs_moments[graph] = to_host(trainer.obs_moments(), trainer.stream());
    reward_moments[graph] = to_host(trainer.reward_moments(), trainer.stream());
  }
  CHECK(params[1] == params[0]);
  CHECK(obs_moments[1] == obs_moments[0]);
  CHECK(reward_moments[1] == reward_moments[0]);
  CHECK(obs_moments[0].back() == kMomentsInitialCount + 256.0 * (1 + 4 * 16));
  CHECK(reward_moments[0].back() == kMomentsInitialCount + 256.0 * 4 * 16);
}
