// The learner on CUDA against its CPU twin: cuBLASLt against CBLAS, the single-source kernels, one
// whole training iteration on the same seed, and a CUDA-graph replay against eager launches. Skipped
// (exit 77) where no GPU is usable.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/categorical.hpp"
#include "rl/gae.hpp"
#include "rl/gaussian.hpp"
#include "rl/gemm.hpp"
#include "rl/shuffle.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"

using namespace surge;
using namespace surge::rl;

namespace {

const Device kGpu = Device::cuda(0);

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host, const Stream& stream) {
  DeviceBuffer<T> buffer(stream.device(), static_cast<std::int64_t>(host.size()));
  from_host(buffer.span(), host, stream);
  return buffer;
}

template <class T>
std::vector<T> random_vector(std::int64_t count, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  Rng rng(seed, 0, 0);
  std::vector<T> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = static_cast<T>(rng.uniform(low, high));
  return v;
}

template <class T>
void check_close(const std::vector<T>& gpu, const std::vector<T>& cpu, double atol, double rtol, const char* what) {
  REQUIRE(gpu.size() == cpu.size());
  double worst = 0.0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double diff = std::abs(double(gpu[i]) - double(cpu[i]));
    worst = std::max(worst, diff);
    if (!(diff <= atol + rtol * std::abs(double(cpu[i])))) ++bad;
  }
  INFO(what << ": worst difference " << worst << " over " << gpu.size() << " values");
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuBLASLt GEMMs match CBLAS for every transpose, with and without the fused bias", "[gpu][gemm]") {
  Stream gpu(kGpu), cpu(Device::cpu());
  const std::int64_t m = 300, n = 70, k = 45;
  for (Transpose ta : {Transpose::No, Transpose::Yes})
    for (Transpose tb : {Transpose::No, Transpose::Yes})
      for (bool with_bias : {false, true}) {
        const std::int64_t lda = ta == Transpose::No ? k : m, ldb = tb == Transpose::No ? n : k;
        const auto a = random_vector<float>(m * k, 1), b = random_vector<float>(k * n, 2),
                   bias = random_vector<float>(n, 3);
        auto c = random_vector<float>(m * n, 4);
        auto c_cpu = c;
        auto da = upload(a, gpu), db = upload(b, gpu), dbias = upload(bias, gpu), dc = upload(c, gpu);
        gemm<float>(gpu, ta, tb, m, n, k, 1.5f, da.data(), lda, db.data(), ldb, 0.5f, dc.data(), n,
                    with_bias ? dbias.data() : nullptr);
        gemm<float>(cpu, ta, tb, m, n, k, 1.5f, a.data(), lda, b.data(), ldb, 0.5f, c_cpu.data(), n,
                    with_bias ? bias.data() : nullptr);
        INFO("ta " << int(ta) << " tb " << int(tb) << " bias " << with_bias);
        check_close(to_host(dc.cspan(), gpu), c_cpu, 1e-4, 1e-4, "gemm");
      }
}

TEST_CASE("one PPO gradient on CUDA matches the CPU's", "[gpu][ppo]") {
  Stream gpu(kGpu), cpu(Device::cpu());
  const ActorCritic net(4, 2, NetworkConfig{});
  const std::vector<double> initial = net.initial_parameters(3);
  std::vector<float> params(initial.begin(), initial.end());
  for (const auto& slice : net.table().slices())  // away from the tiny actor head, so gradients are not all small
    for (std::int64_t j = 0; j < slice.size(); ++j)
      params[slice.offset + j] += 0.05f * std::sin(float(j + slice.offset));
  const std::int64_t batch = 1000;
  const auto obs = random_vector<float>(batch * 4, 5, -2.0f, 2.0f);
  std::vector<std::int32_t> actions(batch);
  for (std::int64_t i = 0; i < batch; ++i) actions[i] = static_cast<std::int32_t>(i % 2);
  const auto old_logprob = random_vector<float>(batch, 6, -1.2f, -0.4f), old_value = random_vector<float>(batch, 7),
             advantage = random_vector<float>(batch, 8), returns = random_vector<float>(batch, 9);
  auto d_params = upload(params, gpu), d_obs = upload(obs, gpu), d_old_logprob = upload(old_logprob, gpu),
       d_old_value = upload(old_value, gpu), d_advantage = upload(advantage, gpu), d_returns = upload(returns, gpu);
  auto d_actions = upload(actions, gpu);
  MinibatchView<float> host_mb{
      batch, obs.data(), actions.data(), old_logprob.data(), old_value.data(), advantage.data(), returns.data()};
  MinibatchView<float> gpu_mb{
      batch,           d_obs.data(), d_actions.data(), d_old_logprob.data(), d_old_value.data(), d_advantage.data(),
      d_returns.data()};
  PpoGradient<float> cpu_work(Device::cpu(), net, batch), gpu_work(kGpu, net, batch);
  std::vector<float> grads(net.table().total(), 0.0f);
  std::vector<double> terms(kLossTermCount);
  DeviceBuffer<float> d_grads(kGpu, net.table().total());
  zero_bytes(d_grads.data(), kGpu, d_grads.bytes(), gpu);
  DeviceBuffer<double> d_terms(kGpu, kLossTermCount);
  const PpoLossConfig config;
  cpu_work.compute(cpu, config, host_mb, params.data(), grads.data(), terms.data());
  gpu_work.compute(gpu, config, gpu_mb, d_params.data(), d_grads.data(), d_terms.data());
  check_close(to_host(d_grads.cspan(), gpu), grads, 2e-6, 2e-3, "gradients");
  check_close(to_host(d_terms.cspan(), gpu), terms, 1e-3, 1e-4, "loss terms");
}

TEST_CASE("sampling, shuffling and GAE on CUDA match the CPU", "[gpu][kernels]") {
  Stream gpu(kGpu), cpu(Device::cpu());
  const std::int64_t n = 50000;
  const auto logits = random_vector<float>(n * 3, 10, -2.0f, 2.0f);
  std::vector<std::int32_t> actions(n);
  std::vector<float> logprob(n);
  auto d_logits = upload(logits, gpu);
  DeviceBuffer<std::int32_t> d_actions(kGpu, n);
  DeviceBuffer<float> d_logprob(kGpu, n);
  const ActionDraw draw{77, nullptr, 0, 4};
  sample_actions(cpu, logits.data(), n, 3, draw, false, actions.data(), logprob.data());
  sample_actions(gpu, d_logits.data(), n, 3, draw, false, d_actions.data(), d_logprob.data());
  const auto gpu_actions = to_host(d_actions.cspan(), gpu);
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < n; ++i) differ += gpu_actions[i] != actions[i];
  CHECK(differ <= 2);  // the same Philox words; only a near-tie under last-bit differences of logf could flip
  check_close(to_host(d_logprob.cspan(), gpu), logprob, 1e-5, 1e-5, "log-probabilities");

  const Permutation permutation = Permutation::make(12345, 8, 3);
  std::vector<std::int64_t> order(12345);
  DeviceBuffer<std::int64_t> d_order(kGpu, 12345);
  write_permutation(cpu, permutation, nullptr, order.data());
  write_permutation(gpu, permutation, nullptr, d_order.data());
  CHECK(to_host(d_order.cspan(), gpu) == order);

  const std::int64_t steps = 33, envs = 700, slots = steps * envs;
  const auto reward = random_vector<float>(slots, 11), value = random_vector<float>(slots + envs, 12),
             final_value = random_vector<float>(slots, 13), flags = random_vector<float>(2 * slots, 14, 0.0f, 1.0f);
  std::vector<std::uint8_t> terminated(slots), truncated(slots);
  for (std::int64_t s = 0; s < slots; ++s) {
    terminated[s] = flags[s] < 0.05f;
    truncated[s] = flags[slots + s] < 0.05f;
  }
  std::vector<float> adv(slots), ret(slots);
  auto d_reward = upload(reward, gpu), d_value = upload(value, gpu), d_final = upload(final_value, gpu);
  auto d_terminated = upload(terminated, gpu), d_truncated = upload(truncated, gpu);
  DeviceBuffer<float> d_adv(kGpu, slots), d_ret(kGpu, slots);
  compute_gae(cpu, steps, envs, 0.99f, 0.95f, reward.data(), terminated.data(), truncated.data(), value.data(),
              final_value.data(), adv.data(), ret.data());
  compute_gae(gpu, steps, envs, 0.99f, 0.95f, d_reward.data(), d_terminated.data(), d_truncated.data(), d_value.data(),
              d_final.data(), d_adv.data(), d_ret.data());
  check_close(to_host(d_adv.cspan(), gpu), adv, 1e-5, 1e-5, "advantages");
  check_close(to_host(d_ret.cspan(), gpu), ret, 1e-5, 1e-5, "returns");
}

TEST_CASE("Gaussian sampling on CUDA matches the CPU", "[gpu][kernels][gaussian]") {
  Stream gpu(kGpu), cpu(Device::cpu());
  const std::int64_t n = 50000;
  const int dims = 3;
  const auto mean = random_vector<float>(n * dims, 20, -2.0f, 2.0f);
  const std::vector<float> log_std = {-0.5f, 0.0f, 0.4f}, low = {-1.0f, -2.0f, -1.5f}, high = {1.0f, 2.0f, 0.5f};
  std::vector<float> actions(n * dims), env_actions(n * dims), logprob(n);
  auto d_mean = upload(mean, gpu), d_log_std = upload(log_std, gpu), d_low = upload(low, gpu),
       d_high = upload(high, gpu);
  DeviceBuffer<float> d_actions(kGpu, n * dims), d_env_actions(kGpu, n * dims), d_logprob(kGpu, n);
  const ActionDraw draw{78, nullptr, 0, 6};
  sample_gaussian_actions(cpu, mean.data(), log_std.data(), n, dims, low.data(), high.data(), draw, false,
                          actions.data(), logprob.data(), env_actions.data());
  sample_gaussian_actions(gpu, d_mean.data(), d_log_std.data(), n, dims, d_low.data(), d_high.data(), draw, false,
                          d_actions.data(), d_logprob.data(), d_env_actions.data());
  // The same Philox words; the device's __sincosf (as cuRAND's curand_normal) differs from the host's
  // sinf and cosf in absolute terms: by up to ~1.6e-6 on an angle in (0, 2 pi] (its own error, beyond
  // [-pi, pi] too, plus a last-bit difference in the angle, which the device computes with an FMA).
  // A standard normal then differs by up to s * 1.6e-6, s = sqrt(-2 log u) < 4.8 over 75000 pairs, and
  // a sample by exp(0.4) times that: 1.1e-5. Its log-density, -0.5 sum n_k^2 + ..., by sum |n_k| dn_k
  // < 3 * 4.8 * 7.7e-6 = 1.1e-4. Tolerances about 3x those bounds; a misplaced draw is off by O(1).
  check_close(to_host(d_actions.cspan(), gpu), actions, 3e-5, 1e-5, "Gaussian samples");
  check_close(to_host(d_env_actions.cspan(), gpu), env_actions, 3e-5, 1e-5, "clipped samples");
  check_close(to_host(d_logprob.cspan(), gpu), logprob, 3e-4, 1e-5, "Gaussian log-probabilities");
}

namespace {

TrainConfig iteration_config(bool graph) {
  TrainConfig config;
  config.num_envs = 64;
  config.num_steps = 32;
  config.total_steps = 64 * 32 * 4;
  config.learning_rate = 1e-3;
  config.seed = 9;
  config.cuda_graph = graph;
  return config;
}

// One training iteration of a scenario on the CPU and on CUDA from the same seed, ready to compare.
struct IterationOnBoth {
  const TrainConfig config = iteration_config(false);
  std::unique_ptr<Engine> cpu_engine, gpu_engine;
  Trainer cpu_trainer, gpu_trainer;
  IterationMetrics cpu_metrics, gpu_metrics;

  explicit IterationOnBoth(const std::string& scenario)
      : cpu_engine(make_engine(scenario, Device::cpu(), config.num_envs, config.seed)),
        gpu_engine(make_engine(scenario, kGpu, config.num_envs, config.seed)),
        cpu_trainer(*cpu_engine, config),
        gpu_trainer(*gpu_engine, config) {
    cpu_trainer.iterate();
    gpu_trainer.iterate();
    cpu_metrics = cpu_trainer.drain().at(0);
    gpu_metrics = gpu_trainer.drain().at(0);
  }
  // `count` values of a buffer of the CUDA trainer, copied to the host.
  template <class T>
  std::vector<T> gpu(const T* pointer, std::int64_t count) const {
    return to_host(Span<const T>{pointer, count, kGpu}, gpu_trainer.stream());
  }
  // `count` values of a buffer of the CPU trainer.
  template <class T>
  static std::vector<T> cpu(const T* pointer, std::int64_t count) {
    return std::vector<T>(pointer, pointer + count);
  }
  std::vector<float> gpu_parameters() const { return to_host(gpu_trainer.parameters(), gpu_trainer.stream()); }
  std::vector<float> cpu_parameters() const { return to_host(cpu_trainer.parameters(), cpu_trainer.stream()); }
};

}  // namespace

TEST_CASE("one full training iteration on CUDA matches the CPU on the same seed", "[gpu][trainer]") {
  const IterationOnBoth run("cartpole");
  const RolloutStorage &a = run.cpu_trainer.rollout(), &b = run.gpu_trainer.rollout();
  const std::int64_t slots = run.config.batch_size(), num_envs = run.config.num_envs;
  // Same physics, same Philox streams: the trajectories agree exactly (a flipped near-tie in sampling
  // would show here first).
  CHECK(run.gpu(b.actions(0), slots) == run.cpu(a.actions(0), slots));
  CHECK(run.gpu(b.reward(0), slots) == run.cpu(a.reward(0), slots));
  CHECK(run.gpu(b.terminated(0), slots) == run.cpu(a.terminated(0), slots));
  CHECK(run.gpu(b.truncated(0), slots) == run.cpu(a.truncated(0), slots));
  // The states are not bit-identical: the device fuses multiply-adds and its sinf/cosf round differently
  // from the host's. Each step adds a last-bit difference (6e-8 relative at |x| ~ 1) and the upright pole
  // amplifies it by about 8% a step (test_vec_env_gpu.cpp), so after at most 32 steps of an episode
  // it is below 6e-8 * (1.083^32 - 1) / 0.083 = 8.6e-6 relative even when every step adds it with the
  // same sign.
  check_close(run.gpu(b.obs(0), (slots + num_envs) * 4), run.cpu(a.obs(0), (slots + num_envs) * 4), 1e-5, 1e-5,
              "observations");
  check_close(run.gpu(b.logprob(0), slots), run.cpu(a.logprob(0), slots), 1e-5, 1e-5, "log-probabilities");
  check_close(run.gpu(b.value(0), slots + num_envs), run.cpu(a.value(0), slots + num_envs), 1e-5, 1e-4, "values");
  check_close(run.gpu(b.advantage(0), slots), run.cpu(a.advantage(0), slots), 1e-4, 1e-4, "advantages");
  // After 16 Adam steps the parameters may drift by rounding, but not by a step's size (lr = 1e-3).
  check_close(run.gpu_parameters(), run.cpu_parameters(), 2e-5, 1e-3, "parameters after one iteration");
  CHECK(run.gpu_metrics.episodes == run.cpu_metrics.episodes);
  CHECK(run.gpu_metrics.return_last100 == Approx(run.cpu_metrics.return_last100));
  CHECK(run.gpu_metrics.policy_loss == Approx(run.cpu_metrics.policy_loss).margin(1e-4));
  CHECK(run.gpu_metrics.value_loss == Approx(run.cpu_metrics.value_loss).epsilon(1e-3));
  CHECK(run.gpu_metrics.entropy == Approx(run.cpu_metrics.entropy).epsilon(1e-4));
  CHECK(run.gpu_metrics.learning_rate == run.cpu_metrics.learning_rate);
}

TEST_CASE("a replayed CUDA graph trains exactly as eager launches do", "[gpu][trainer][graph]") {
  for (const char* scenario : {"cartpole", "pendulum"}) {
    INFO(scenario);
    std::vector<std::vector<float>> params;
    std::vector<std::vector<IterationMetrics>> metrics;
    for (bool graph : {false, true}) {
      const TrainConfig config = iteration_config(graph);
      auto engine = make_engine(scenario, kGpu, config.num_envs, config.seed);
      Trainer trainer(*engine, config);
      CHECK(trainer.uses_graph() == graph);
      std::vector<IterationMetrics> all;
      for (int k = 0; k < 4; ++k) {
        trainer.iterate();
        for (const auto& m : trainer.ready_metrics()) all.push_back(m);
        CHECK(all.size() == static_cast<std::size_t>(k));  // on CUDA the metrics arrive one iteration late
      }
      for (const auto& m : trainer.drain()) all.push_back(m);
      params.push_back(to_host(trainer.parameters(), trainer.stream()));
      metrics.push_back(all);
    }
    CHECK(params[0] == params[1]);
    REQUIRE(metrics[0].size() == 4);
    REQUIRE(metrics[1].size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      CHECK(metrics[1][k].iteration == k + 1);
      CHECK(metrics[1][k].policy_loss == metrics[0][k].policy_loss);
      CHECK(metrics[1][k].return_last100 == metrics[0][k].return_last100);
      CHECK(metrics[1][k].learning_rate == metrics[0][k].learning_rate);
    }
  }
}

TEST_CASE("one Gaussian training iteration on CUDA matches the CPU on the same seed", "[gpu][trainer][gaussian]") {
  const IterationOnBoth run("pendulum");
  const RolloutStorage &a = run.cpu_trainer.rollout(), &b = run.gpu_trainer.rollout();
  const std::int64_t slots = run.config.batch_size();
  // Samples differ by the ulps of the device's sine and cosine, so the trajectories agree closely, not exactly.
  check_close(run.gpu(b.continuous_actions(0), slots), run.cpu(a.continuous_actions(0), slots), 1e-4, 1e-4, "actions");
  check_close(run.gpu(b.reward(0), slots), run.cpu(a.reward(0), slots), 1e-3, 1e-3, "rewards");
  check_close(run.gpu(b.logprob(0), slots), run.cpu(a.logprob(0), slots), 1e-4, 1e-4, "log-probabilities");
  check_close(run.gpu_parameters(), run.cpu_parameters(), 1e-4, 1e-2, "parameters after one iteration");
  CHECK(run.gpu_metrics.episodes == run.cpu_metrics.episodes);
  CHECK(run.gpu_metrics.entropy == Approx(run.cpu_metrics.entropy).epsilon(1e-4));
}
