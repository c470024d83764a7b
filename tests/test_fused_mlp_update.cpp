// The CPU's fused PPO update (rl/ppo_loss_fused.hpp) against the separate passes the trainer ran before
// it (PpoGradient::compute, then adam_step) and against itself on one thread and on two: parameters,
// gradients, Adam's moments, the optimiser's scalars and the loss terms, bit for bit, after several
// updates, with the clips and the gradient-norm clip in play.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/adam.hpp"
#include "rl/fused_mlp.hpp"
#include "rl/ppo_loss_fused.hpp"
#include "rl/trainer.hpp"
#include "sim/philox.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
using surge::testing::normal;

namespace {

struct Minibatch {
  std::vector<float> obs, old_logprob, old_value, advantage, returns;
  std::vector<std::int32_t> actions;
  MinibatchView<float> view() const {
    return {static_cast<std::int64_t>(actions.size()),
            obs.data(),
            actions.data(),
            old_logprob.data(),
            old_value.data(),
            advantage.data(),
            returns.data()};
  }
};

Minibatch draw_minibatch(int obs_dim, int num_actions, std::int64_t rows, std::uint64_t seed) {
  surge::Rng rng(seed, 5, 0);
  Minibatch m;
  for (std::int64_t i = 0; i < rows * obs_dim; ++i) m.obs.push_back(static_cast<float>(normal(rng)));
  for (std::int64_t i = 0; i < rows; ++i) {
    m.actions.push_back(static_cast<std::int32_t>(rng.next_u32() % static_cast<std::uint32_t>(num_actions)));
    // Old log-probabilities spread around the uniform policy's, so that some ratios leave the clip range.
    m.old_logprob.push_back(static_cast<float>(-std::log(num_actions) + 0.3 * normal(rng)));
    m.returns.push_back(static_cast<float>(normal(rng)));
    m.old_value.push_back(m.returns.back() + static_cast<float>(0.5 * normal(rng)));
    m.advantage.push_back(static_cast<float>(normal(rng) + 0.2));
  }
  return m;
}

// One learner's buffers, as the trainer lays them out.
struct Learner {
  std::vector<float> params, grads, m, v;
  OptimizerScalars optimizer{};
  std::vector<double> terms;
  Learner(const ActorCritic& net, std::uint64_t seed)
      : grads(net.table().total(), 0.0f),
        m(net.table().total(), 0.0f),
        v(net.table().total(), 0.0f),
        terms(kLossTermCount, 0.0) {
    const std::vector<double> initial = net.initial_parameters(seed);
    params.assign(initial.begin(), initial.end());
    optimizer.learning_rate = 1e-2;
  }
  LearnerBuffers buffers() { return {params.data(), grads.data(), m.data(), v.data(), &optimizer}; }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_same(const Learner& a, const Learner& b) {
  CHECK(same_bits(a.params, b.params));
  CHECK(same_bits(a.grads, b.grads));
  CHECK(same_bits(a.m, b.m));
  CHECK(same_bits(a.v, b.v));
  CHECK(std::memcmp(&a.optimizer, &b.optimizer, sizeof(OptimizerScalars)) == 0);
  CHECK(same_bits(a.terms, b.terms));
}

struct Case {
  int obs_dim, num_actions;
  NetworkConfig network;
  std::int64_t rows;
};

// `updates` fused updates on `threads` threads from the same start; the last one with the optimiser frozen
// (target-KL's stop), which must leave the parameters and moments as they were.
Learner fused_run(const ActorCritic& net, const Minibatch& minibatch, const PpoLossConfig& loss, const AdamConfig& adam,
                  int threads, int updates) {
  Learner learner(net, 7);
  std::uint64_t version = fused_mlp_new_version();
  for (int u = 0; u < updates; ++u) {
    learner.optimizer.frozen = u + 1 == updates ? 1.0 : 0.0;
    fused_ppo_update(net, loss, adam, minibatch.view(), learner.buffers(), learner.terms.data(), version, threads);
    version = fused_mlp_new_version();
  }
  return learner;
}

// The same updates as the trainer ran them before the fused update: the gradient, then Adam.
Learner separate_run(const ActorCritic& net, const Minibatch& minibatch, const PpoLossConfig& loss,
                     const AdamConfig& adam, int updates) {
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  Learner learner(net, 7);
  const std::int64_t count = net.table().total();
  PpoGradient<float> workspace(cpu, net, minibatch.view().size);
  workspace.parameters_changed();
  for (int u = 0; u < updates; ++u) {
    learner.optimizer.frozen = u + 1 == updates ? 1.0 : 0.0;
    workspace.compute(stream, loss, minibatch.view(), learner.params.data(), learner.grads.data(),
                      learner.terms.data());
    adam_step(stream, adam, {learner.params.data(), count}, {learner.grads.data(), count}, {learner.m.data(), count},
              {learner.v.data(), count}, &learner.optimizer, nullptr);
    workspace.parameters_changed();
  }
  stream.synchronize();
  return learner;
}

void check_case(const Case& c, const PpoLossConfig& loss, const AdamConfig& adam) {
  const ActorCritic net(c.obs_dim, c.num_actions, c.network);
  REQUIRE(fused_ppo_update_applies(net, surge::Device::cpu()));
  const Minibatch minibatch = draw_minibatch(c.obs_dim, c.num_actions, c.rows, 3);
  const int updates = 5;
  const Learner one = fused_run(net, minibatch, loss, adam, 1, updates);
  const Learner two = fused_run(net, minibatch, loss, adam, 2, updates);
  const Learner separate = separate_run(net, minibatch, loss, adam, updates);
  CHECK(one.optimizer.step == updates - 1);
  CHECK(one.optimizer.grad_scale < 1.0);  // the gradient-norm clip acted
  CHECK(one.terms[kClipFraction] > 0.0);
  INFO("one thread against two");
  check_same(one, two);
  INFO("fused against the separate passes");
  check_same(one, separate);
}

}  // namespace

TEST_CASE("Fused update: the same bits on one thread, on two, and as the separate passes", "[fused][update]") {
  PpoLossConfig loss;
  AdamConfig adam;
  adam.max_grad_norm = 0.05;  // low enough to clip every update here
  SECTION("CleanRL's CartPole networks, a CleanRL minibatch") { check_case({4, 2, {}, 128}, loss, adam); }
  SECTION("ragged widths, relu, three actions, several chunks of rows, no clips") {
    NetworkConfig network;
    network.hidden = {100, 33};
    network.activation = "relu";
    loss.clip_vloss = false;
    check_case({11, 3, network, 2 * kFusedMlpChunkRows + 45}, loss, adam);
  }
  SECTION("advantages as they come, a batch under 64 rows") {
    loss.norm_adv = false;
    check_case({6, 4, {}, 37}, loss, adam);
  }
}

TEST_CASE("Fused update: threads from cpu_threads, one inside a parallel region", "[fused][update]") {
  CHECK(fused_ppo_update_threads(1) == 1);
  CHECK(fused_ppo_update_threads(2) == 2);
  CHECK(fused_ppo_update_threads(8) == 2);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    inside = fused_ppo_update_threads(8);
  }
  CHECK(inside == 1);
}

TEST_CASE("Threads for a run alone: one below 4096 environments, the process's cores shared among ranks",
          "[fused][update]") {
  surge::rl::TrainConfig config;
  config.cpu_threads = 0;
  config.num_envs = 4095;
  CHECK(surge::rl::cpu_threads_for(config) == 1);
  config.num_envs = 4096;
  const int cores = omp_get_num_procs();
  CHECK(surge::rl::cpu_threads_for(config) == cores);
  CHECK(surge::rl::cpu_threads_for(config, 2) == std::max(1, cores / 2));
  CHECK(surge::rl::cpu_threads_for(config, 4 * cores) == 1);
  config.cpu_threads = 3;  // given: taken as it is
  CHECK(surge::rl::cpu_threads_for(config, 2) == 3);
  // The fused update's helper: a second thread where this process may run on two processors.
  CHECK(fused_ppo_update_threads(0) == std::min(2, cores));
}

TEST_CASE("Fused update declines what it does not take", "[fused][update]") {
  NetworkConfig blas;
  blas.cpu_fused_mlp = false;
  CHECK_FALSE(fused_ppo_update_applies(ActorCritic(4, 2, blas), surge::Device::cpu()));
  NetworkConfig bf16;
  bf16.precision = "bf16";
  CHECK_FALSE(fused_ppo_update_applies(ActorCritic(4, 2, bf16), surge::Device::cpu()));
  CHECK_FALSE(fused_ppo_update_applies(ActorCritic(3, surge::ActionKind::Continuous, 1, {}), surge::Device::cpu()));
  // A pixel policy: its heads' inputs are the encoder's features, whose backward the fused pass lacks.
  const EncoderConfig encoder{"custom", {{4, 8, 4}, {4, 4, 2}}, 12};
  const ActorCritic pixels(4, surge::ActionKind::Discrete, 2, NetworkConfig{}, FrameShape{24, 24, 2}, encoder);
  REQUIRE(pixels.actor().fused_on_cpu());
  CHECK_FALSE(fused_ppo_update_applies(pixels, surge::Device::cpu()));
}
